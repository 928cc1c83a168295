"""Where the collector's CUDA version comes from when nvidia-smi must be asked: a fake nvidia-smi script that
logs its calls, run by the collector in child processes. Split from tests/unit/node/test_probe_cuda_version.py
(libcuda and the driver branches: there)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gpudiag_node import smi as probe


@pytest.fixture
def no_libcuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a node (or container) without libcuda.so.1, whatever this test machine has."""
    monkeypatch.setattr(probe, "cuda_version_from_libcuda", lambda: None)


def fake_smi(folder: Path, query_answer: str, query_exit: int = 0) -> Path:
    """An nvidia-smi that logs each call's arguments and answers --query-gpu with ``query_answer``."""
    log = folder / "calls.log"
    script = folder / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{log}"\n'
        'case "$1" in\n'
        f"  --query-gpu=*) printf '%s' '{query_answer}'; exit {query_exit} ;;\n"
        "esac\n"
        "echo '| NVIDIA-SMI 595.10.01    Driver Version: 595.10.01    CUDA Version: 13.2     |'\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def calls(folder: Path) -> list[str]:
    log = folder / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_a_branch_newer_than_the_table_asks_nvidia_smi(no_libcuda: None, tmp_path: Path) -> None:
    smi = fake_smi(tmp_path, "")

    assert probe.cuda_version(str(smi), "595.10.01", 5.0) == ("13.2", "nvidia-smi")
    assert calls(tmp_path) == [""]  # one plain call: the header


def test_no_driver_version_and_no_header_is_none(no_libcuda: None) -> None:
    assert probe.cuda_version("/nonexistent/nvidia-smi", None, 5.0) == (None, None)


def test_a_sweep_of_a_known_driver_makes_one_nvidia_smi_call(no_libcuda: None, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    fields = [logical for logical, _ in probe.FIELDS]
    row = ", ".join("580.159.04" if name == "driver_version" else "0" for name in fields)
    fake_smi(tmp_path, row + "\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")

    doc = probe.collect(1, 0.0, 5.0)

    assert (doc["cuda_version"], doc["cuda_version_from"]) == ("13.0", "driver branch")
    assert [c.split("=")[0] for c in calls(tmp_path)] == ["--query-gpu"]


def test_a_failing_driver_is_not_asked_again_for_its_header(no_libcuda: None, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    fake_smi(tmp_path, "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.", 9)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")

    doc = probe.collect(3, 0.0, 5.0)

    assert doc["cuda_version"] is None and len(doc["samples"]) == 1
    assert len(calls(tmp_path)) == 1
