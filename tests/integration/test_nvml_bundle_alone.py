"""The bundle run alone by a child ``python3 -`` on a machine without NVML: it falls back to nvidia-smi and says
why. Split from tests/unit/node/test_nvml_reader.py (the reader against a fake pynvml: there)."""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys

import pytest

from gpudiag.collect.bundle import bundle
from gpudiag.collect.parse import parse_probe


def _nvml_loads() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


@pytest.mark.skipif(_nvml_loads(), reason="this machine has NVML: tests/gpu cover the bundle there")
def test_the_bundle_runs_alone_and_says_why_nvml_was_not_used() -> None:
    """On this machine (no NVIDIA driver) the bundled binding cannot load: the probe falls back and says so."""
    script = bundle({"samples": 1, "interval_s": 0.0, "source": "auto"})
    done = subprocess.run([sys.executable, "-"], input=script, capture_output=True, timeout=60,
                          env={"PATH": "/nonexistent", "LC_ALL": "C"})
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["source"] == "nvidia-smi" and doc["nvidia_smi"]["status"] == "missing"
    assert doc["nvml_unavailable"].startswith("NVMLError_LibraryNotFound")
    assert parse_probe(doc).nvml_unavailable == doc["nvml_unavailable"]
