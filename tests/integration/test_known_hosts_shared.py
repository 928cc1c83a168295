"""One known_hosts file shared by parallel ``--accept-new-host-keys`` runs (issue 23 #4), over the real sshd:
four gpudiag processes at once, 34 hosts each (loopback aliases), on an empty file. Before, 92 of the 136
hosts were rejected ("run with --accept-new-host-keys"): a key another run had just recorded was not in a
run's own copy. And a key that known_hosts revokes (``@revoked``) is never appended as trusted; the message
says revoked (it said CHANGED, after accept-new had appended the revoked key as a trusted line)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpudiag.checks import CheckSettings
from gpudiag.model import HostStatus
from gpudiag.sweep.runner import SweepOptions, sweep
from gpudiag.transport.ssh import SshOptions, SshTransport

# Many SSH handshakes (or a browser) at once: one worker runs the "bursts" group, one test after another
# (pyproject.toml: --dist loadgroup), so no two bursts share the two cores and read as timeouts.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("bursts")]
REPO = Path(__file__).resolve().parents[2]
RUNS, HOSTS = 4, 34


def test_four_parallel_runs_on_one_empty_known_hosts_reject_none(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    shared = tmp_path / "known_hosts"
    shared.write_text("")
    hosts = sshd_cluster.extra_hosts(HOSTS)
    if len(hosts) < HOSTS:
        pytest.skip(f"the cluster has {len(hosts)} extra hosts (GPUDIAG_TEST_EXTRA_HOSTS), {HOSTS} needed")
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(
        f"defaults:\n  user: {sshd_cluster.user}\n  port: {sshd_cluster.port}\n"
        f"  identity_file: {sshd_cluster.client_key}\n  known_hosts: {shared}\n"
        "hosts:\n" + "".join(f"  {h.name}: {{address: {h.address}}}\n" for h in hosts))
    argv = [sys.executable, "-m", "gpudiag", "sweep", "-i", str(inventory), "--accept-new-host-keys",
            "--samples", "1", "--interval", "0", "--format", "json"]
    runs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
            for _ in range(RUNS)]
    outputs = [run.communicate(timeout=300) for run in runs]
    statuses: dict[str, int] = {}
    rejected = []
    for out, err in outputs:
        assert out, err
        for host in json.loads(out)["hosts"]:
            statuses[host["status"]] = statuses.get(host["status"], 0) + 1
            if host["status"] != "ok":
                rejected.append(host.get("error"))
    assert statuses == {"ok": RUNS * HOSTS}, rejected[:3]
    lines = shared.read_text().splitlines()
    assert len(lines) == HOSTS == len({line.split()[0] for line in lines})  # each host once, by one run


def test_a_revoked_key_is_never_recorded_as_trusted(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server_key = sshd_cluster.known_hosts.read_text().splitlines()[0].split()[1:]
    host = sshd_cluster.host("127.0.0.2", "healthy")
    revoking = tmp_path / "known_hosts"
    revoking.write_text(f"@revoked [{host.address}]:{sshd_cluster.port} {' '.join(server_key)}\n")
    before = revoking.read_text()
    options = SweepOptions(samples=1, interval_s=0.0, deadline_s=20.0, settings=CheckSettings())
    for _ in range(2):  # and the second run says the same: nothing was recorded by the first
        report = asyncio.run(sweep([dataclasses.replace(host, known_hosts=str(revoking))], SshTransport(
            SshOptions(connect_timeout_s=5.0, ssh_config=[], accept_new_host_keys=True)), options))
        (result,) = report.hosts
        assert result.status is HostStatus.HOST_KEY_REJECTED
        assert result.error is not None and "revoked" in result.error and "CHANGED" not in result.error
        assert revoking.read_text() == before
