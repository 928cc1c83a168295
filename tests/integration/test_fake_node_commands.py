"""The fake node's topology and systemd-detect-virt answers: the fake nvidia-smi run as those commands.
Split from tests/unit/sweep/test_log_runner.py (the fan-out with logs: there)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

STUB = Path(__file__).resolve().parents[2] / "agent" / "gpudiag" / "demo" / "fake_nvidia_smi"


def _stub(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    target.write_text(f"#!{sys.executable}\n" + STUB.read_text().split("\n", 1)[1])
    target.chmod(0o755)
    (tmp_path / "scenarios").symlink_to(STUB.parent / "scenarios")
    return target


def _run(stub: Path, *args: str, scenario: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(stub), *args], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "GPUDIAG_FAKE_SCENARIO": scenario,
                               "GPUDIAG_FAKE_STATE_DIR": str(stub.parent / "state")})


def test_the_fake_node_answers_topo_m(tmp_path: Path) -> None:
    from gpudiag.collect.parse_logs import parse_topology

    stub = _stub(tmp_path, "nvidia-smi")
    case = _run(stub, "topo", "-m", scenario="case_study")
    links = parse_topology(case.stdout)
    assert case.returncode == 0 and len(links) == 28 and {x.kind for x in links} == {"pcie"}
    assert {x.link for x in links} == {"PIX", "NODE", "SYS"}
    healthy = parse_topology(_run(stub, "topo", "-m", scenario="healthy").stdout)
    assert len(healthy) == 28 and {x.link for x in healthy} == {"NV18"}
    assert _run(stub, "topo", "-m", scenario="driver_error").returncode == 9
    assert _run(stub, "topo", "-x", scenario="healthy").returncode == 2


@pytest.mark.parametrize(("scenario", "args", "out", "code"), [
    ("case_study", ["--vm"], "kvm", 0), ("case_study", ["--container"], "none", 1), ("case_study", [], "kvm", 0),
    ("healthy", ["--vm"], "none", 1)])
def test_the_fake_node_answers_systemd_detect_virt(tmp_path: Path, scenario: str, args: list[str], out: str,
                                                   code: int) -> None:
    done = _run(_stub(tmp_path, "systemd-detect-virt"), *args, scenario=scenario)
    assert (done.stdout.strip(), done.returncode) == (out, code)
