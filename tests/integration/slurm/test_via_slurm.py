"""``--via slurm`` through the real one-machine Slurm: one srun step runs the collector on the partition's usable
nodes (slurmd starts each task; the stub nvidia-smi knows its node by ``SLURMD_NODENAME``), a drained node is read
over SSH in the same run, and the rows are the same, host for host, as a sweep over SSH alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from slurm_cluster import SlurmCluster

# node -> the scenario it plays (the slurm fixture's NODES: tests/integration/slurm/conftest.py)
NODES = {"gpu01": "healthy", "gpu02": "ecc", "gpu03": "idle", "gpu04": "driver_error"}

pytestmark = [pytest.mark.integration, pytest.mark.slurm]
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture()
def stub_path(sshd_cluster) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """A PATH whose nvidia-smi is the loopback cluster's stub, which answers as each Slurm node's scenario."""
    bin_dir = sshd_cluster.state_dir.parent / "node" / "bin"
    hosts_file = bin_dir / "hosts.json"
    before = hosts_file.read_text()
    hosts_file.write_text(json.dumps({**json.loads(before), **NODES}))
    yield f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    hosts_file.write_text(before)


def cli(*args: str, path: str) -> dict[str, dict[str, Any]]:
    done = subprocess.run([sys.executable, "-m", "gpudiag", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=180, env={**os.environ, "PATH": path})
    assert done.returncode in (0, 1, 2), done.stderr
    return {h["host"]: h for h in json.loads(done.stdout)["hosts"]}


def _verdict(host: dict[str, Any]) -> tuple[Any, ...]:
    findings = tuple(sorted((f["code"], f["severity"], f.get("gpu"), f["action"]) for f in host["findings"]))
    # the stub makes its GPUs' UUIDs from the node's address or Slurm name: compare the GPUs by index and model
    return host["status"], findings, tuple((g["index"], g["name"]) for g in host["gpus"])


def test_one_srun_step_reads_what_ssh_reads_and_a_drained_node_goes_over_ssh(  # type: ignore[no-untyped-def]
        slurm: SlurmCluster, sshd_cluster, stub_path: str) -> None:
    slurm.set_state("gpu03", "DRAIN", "rma: fan")
    ssh = ("-u", sshd_cluster.user, "-p", str(sshd_cluster.port), "--identity-file", str(sshd_cluster.client_key),
           "--known-hosts", str(sshd_cluster.known_hosts), "--samples", "1", "--interval", "0", "--format", "json")
    via = cli("sweep", "--slurm-partition", "gpu,debug", "--via", "slurm", *ssh, path=stub_path)
    direct = cli("sweep", "--slurm-partition", "gpu,debug", *ssh, path=stub_path)

    assert sorted(via) == sorted(direct) == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert {name: _verdict(via[name]) for name in via} == {name: _verdict(direct[name]) for name in direct}
    assert {name: h["read_via"] for name, h in via.items()} == {
        "gpu01": "slurm", "gpu02": "slurm", "gpu04": "slurm", "gpu03": "ssh (Slurm state drained)"}
    assert {f["code"] for f in via["gpu02"]["findings"]} >= {"ECC_UNCORRECTED"}  # the ecc node, read by srun
    assert via["gpu04"]["findings"][0]["code"] == "DRIVER_ERROR"
    assert all(h["read_via"] is None for h in direct.values())
