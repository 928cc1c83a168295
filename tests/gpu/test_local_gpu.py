"""`gpudiag local` and the bundle on a real GPU: NVML is used, the readings are sane, nothing is UNKNOWN."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_local_reads_the_gpu_through_nvml() -> None:
    done = subprocess.run([sys.executable, "-m", "gpudiag", "local", "--format", "json", "--samples", "3",
                           "--interval", "0.3", "--samples-detail"], capture_output=True, text=True, cwd=REPO,
                          timeout=120)
    assert done.returncode in (0, 1), done.stderr
    (host,) = json.loads(done.stdout)["hosts"]
    assert host["status"] == "ok" and host["node"]["source"] == "nvml"
    for gpu in host["gpus"]:
        assert gpu["name"].startswith("NVIDIA") and gpu["compute_capability"]
        assert gpu["enforced_power_limit_w"] and gpu["enforced_power_limit_w"] > 50
        raw = gpu["power"]["readings"]
        assert raw["energy_counter"] is not None and len(gpu["samples"]) == 3
        assert gpu["power"]["source"] == "energy_counter" and gpu["power"]["watts"] == raw["energy_counter"]
        assert raw["power_draw_instant"] is not None and gpu["failed_readings"] == {}  # NVML_FI_DEV_POWER_INSTANT
    assert not [f for f in host["findings"] if f["severity"] in ("unknown", "critical")]


def test_smi_source_gives_the_same_gpus() -> None:
    def read(source: str) -> list[str]:
        done = subprocess.run([sys.executable, "-m", "gpudiag", "local", "--format", "json", "--samples", "1",
                               "--source", source], capture_output=True, text=True, cwd=REPO, timeout=120)
        (host,) = json.loads(done.stdout)["hosts"]
        return [g["uuid"] for g in host["gpus"]]

    assert read("auto") == read("nvidia-smi")
