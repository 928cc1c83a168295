"""A target behind a bastion (``jump``), and the local target that needs no SSH at all."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli_run import run_cli
from gpudiag.model import Host, HostStatus
from gpudiag.sweep.runner import SweepOptions, sweep
from gpudiag.transport.ssh import SshOptions, SshTransport

REPO = Path(__file__).resolve().parents[2]
FAST = SweepOptions(samples=2, interval_s=0.1, deadline_s=20.0)


def run(hosts: list[Host]) -> list[tuple[str, HostStatus, str | None, list[str]]]:
    transport = SshTransport(SshOptions(connect_timeout_s=5.0, ssh_config=[]))
    report = asyncio.run(sweep(hosts, transport, FAST))
    return [(h.host, h.status, h.error, sorted({f.code for f in h.findings})) for h in report.hosts]


@pytest.mark.integration
def test_targets_behind_a_bastion(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    bastion = f"{sshd_cluster.user}@{sshd_cluster.address_of('healthy')}:{sshd_cluster.port}"
    sick, idle = (dataclasses.replace(h, jump=bastion) for h in sshd_cluster.hosts("case_study", "idle"))
    assert run([sick, idle]) == [("case_study", HostStatus.OK, None, ["BUSY_LOW_POWER"]),
                                 ("idle", HostStatus.OK, None, [])]


@pytest.mark.integration
def test_a_dead_bastion_fails_its_targets_with_a_clear_line(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    (sick,) = sshd_cluster.hosts("case_study")
    sick = dataclasses.replace(sick, jump=f"{sshd_cluster.user}@127.0.0.251:{sshd_cluster.port}")
    ((_, status, error, codes),) = run([sick])
    assert status is HostStatus.UNREACHABLE and codes == ["HOST_UNREACHABLE"]
    assert error == (f"via bastion {sick.jump}: connection refused by 127.0.0.251:{sshd_cluster.port} "
                     "(host up, nothing listening)")


def _local(tmp_path: Path, scenario: str | None) -> subprocess.CompletedProcess[str]:
    """``gpudiag local`` with the fake nvidia-smi (playing ``scenario``) first on PATH, or none at all."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    if scenario is not None:
        (bin_dir / "nvidia-smi").symlink_to(REPO / "agent/gpudiag/demo/fake_nvidia_smi")  # finds its scenarios
        env["GPUDIAG_FAKE_SCENARIO"] = scenario
    return run_cli("local", "--format", "json", "--samples", "2", "--interval", "0.1", env=env, cwd=REPO)


def test_local_reads_this_machine_without_ssh(tmp_path: Path) -> None:
    done = _local(tmp_path, "case_study")
    assert done.returncode == 1, done.stderr
    (host,) = json.loads(done.stdout)["hosts"]
    assert (host["host"], host["status"]) == ("localhost", "ok")
    assert {f["code"] for f in host["findings"]} == {"BUSY_LOW_POWER"}


@pytest.mark.skipif(any(os.path.exists(os.path.join(d, "nvidia-smi")) for d in ("/usr/bin", "/usr/local/bin",
                                                                             "/usr/local/nvidia/bin")),
                    reason="this machine has a real nvidia-smi")
def test_local_without_a_gpu_says_so(tmp_path: Path) -> None:
    done = _local(tmp_path, None)
    assert done.returncode == 2, done.stderr  # README's "could not read" code, not a warning's 1
    (host,) = json.loads(done.stdout)["hosts"]
    assert [f["code"] for f in host["findings"]] == ["NVIDIA_SMI_MISSING"]
    assert shutil.which("nvidia-smi", path=f"{tmp_path / 'bin'}:/usr/bin:/bin") is None


@pytest.mark.skipif(any(os.path.exists(os.path.join(d, "nvidia-smi")) for d in ("/usr/bin", "/usr/local/bin",
                                                                             "/usr/local/nvidia/bin")),
                    reason="this machine has a real nvidia-smi")
def test_local_without_a_gpu_says_so_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "gpudiag", "local", "--samples", "1"], capture_output=True,
                          text=True, env={**os.environ, "PATH": "/usr/bin:/bin"}, cwd=REPO, timeout=60)
    assert done.returncode == 2 and done.stderr == ""
    assert done.stdout.count("\n") == 1
    assert done.stdout.startswith("gpudiag: no NVIDIA GPU can be read on this machine: nvidia-smi is not installed")
