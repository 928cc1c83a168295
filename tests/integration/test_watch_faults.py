"""`gpudiag watch`'s kept collectors when things go wrong (issue 14 #7): a hung nvidia-smi reads as a
timeout (not "not JSON"), a collector nobody asks any more exits on its own (a reset connection leaves its
stdin open for hours), kept connections send SSH keepalives, a dead host's retry does not hold the refresh."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import time

import pytest

from gpudiag.collect.bundle import bundle
from gpudiag.collect.remote import loader
from gpudiag.model import Host, HostStatus, RemoteResult, SweepReport
from gpudiag.sweep.runner import SweepOptions, collector_command, interpret
from gpudiag.sweep.watch import Changes, watch
from gpudiag.transport.ssh import SshOptions, SshTransport

pytestmark = pytest.mark.integration


def _interpreters() -> list[str]:
    old = os.environ.get("GPUDIAG_OLD_PYTHON", "")
    return [sys.executable, *([old] if old and os.access(old, os.X_OK) else [])]


@pytest.mark.parametrize("python", _interpreters())
def test_a_kept_collector_nobody_asks_exits_after_its_idle_time(python: str) -> None:
    """The controller is gone without closing stdin (a reset): after ``idle_s`` without a request the
    collector exits (0), instead of staying until TCP keepalive gives up (2 h)."""
    script = bundle({"samples": 1, "interval_s": 0, "gpus": False, "dcgm": False, "stream": True,
                     "round_deadline_s": 5, "idle_s": 1.0}, with_nvml=False)
    proc = subprocess.Popen([python, "-I", "-S", "-c", loader(script, watched=False)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(script + b"\n")
        proc.stdin.flush()
        first = json.loads(proc.stdout.readline())
        assert first["stream"]["round"] == 1
        proc.stdin.write(b"\n")  # a second request, answered: the idle time counts from the last one
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["stream"]["round"] == 2
        assert proc.wait(timeout=10) == 0  # stdin still open, nobody asking: gone after about a second
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_a_hung_nvidia_smi_in_watch_reads_as_a_timeout(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    """The collector ends its round at the round's deadline (before the controller's, which has a grace) and
    exits 124 like `timeout`: the host is `timeout`, and the hung nvidia-smi is gone."""
    options = SweepOptions(samples=1, interval_s=0.0, deadline_s=1.0, stream=True)  # no longer than a call bound
    command = collector_command(options)
    host = sshd_cluster.host(sshd_cluster.address_of("hang"), "hang")
    transport = SshTransport(SshOptions(ssh_config=[], connect_timeout_s=10, keep_connections=True))

    async def rounds() -> list[RemoteResult]:
        try:
            return [await transport.run(host, command) for _ in range(2)]
        finally:
            await transport.close()

    for result in asyncio.run(rounds()):  # the second round: a fresh collector, timed out again
        assert result.exit_status == 124
        status, error, _ = interpret(host, result, options)
        assert status is HostStatus.TIMEOUT, error
    assert sshd_cluster.hung_stub_ended("hang")


def test_kept_connections_send_ssh_keepalives() -> None:
    kept = SshTransport(SshOptions(ssh_config=[], keep_connections=True))._connect_kwargs(Host(name="n1"))
    assert (kept["keepalive_interval"], kept["keepalive_count_max"]) == (15.0, 3)
    once = SshTransport(SshOptions(ssh_config=[]))._connect_kwargs(Host(name="n1"))
    assert "keepalive_interval" not in once  # a sweep's connection lives one command



def test_a_dead_hosts_retry_does_not_stretch_the_refresh(sshd_cluster, silent_listener: int) -> None:  # type: ignore[no-untyped-def]
    """Each retry of the silent host lasts its whole connect timeout (10 s); the refreshes after the first
    still come every interval or so, the healthy host answering in each, the silent one `unreachable`.
    The timeout is long so that a loaded machine's slow refresh (seconds at a load of 100 on 2 cores) stays
    far below what a retry held in the refresh costs."""
    healthy = sshd_cluster.host("127.0.0.2", "healthy")
    silent = dataclasses.replace(healthy, name="silent", address="127.0.0.1", port=silent_listener)
    retry_s = 10.0
    transport = SshTransport(SshOptions(ssh_config=[], connect_timeout_s=retry_s, login_timeout_s=retry_s,
                                        keep_connections=True))
    options = SweepOptions(samples=1, interval_s=0.0, deadline_s=20.0, stream=True)
    seen: list[tuple[float, dict[str, HostStatus]]] = []

    def on_refresh(refresh: int, report: SweepReport, change: Changes) -> None:
        seen.append((time.monotonic(), {h.host: h.status for h in report.hosts}))

    asyncio.run(watch([healthy, silent], transport, options, every_s=0.5, count=10, on_refresh=on_refresh))
    gaps = [later[0] - earlier[0] for earlier, later in zip(seen, seen[1:], strict=False)]
    assert max(gaps) < 0.7 * retry_s, gaps  # a retry held in the refresh: up to the whole 10 s
    assert all(statuses == {"healthy": HostStatus.OK, "silent": HostStatus.UNREACHABLE} for _, statuses in seen)


def test_a_blackholed_kept_connection_does_not_hold_the_refresh(sshd_cluster, relay_to_sshd) -> None:  # type: ignore[no-untyped-def]
    """After the first refresh the relayed host's network drops every packet (no reset, no FIN): the next
    refresh still ends within its liveness bound, that host failing it (its connection closed by the SSH
    keepalives a round sends), not at the command's deadline (before: 65 s, the 60 s --timeout and its grace)."""
    relay, known = relay_to_sshd
    healthy = sshd_cluster.host("127.0.0.2", "healthy")
    frozen = dataclasses.replace(healthy, name="frozen", address="127.0.0.1", port=relay.port, known_hosts=str(known))
    transport = SshTransport(SshOptions(ssh_config=[], keep_connections=True))
    options = SweepOptions(samples=1, interval_s=0.0, deadline_s=60.0, stream=True)
    seen: list[tuple[float, dict[str, tuple[HostStatus, str | None]]]] = []

    def on_refresh(refresh: int, report: SweepReport, change: Changes) -> None:
        seen.append((time.monotonic(), {h.host: (h.status, h.error) for h in report.hosts}))
        if refresh == 1:
            relay.blackhole()

    asyncio.run(watch([healthy, frozen], transport, options, every_s=0.5, count=2, on_refresh=on_refresh))
    (_, first), (_, second) = seen
    assert {host: status for host, (status, _) in first.items()} == {"healthy": HostStatus.OK, "frozen": HostStatus.OK}
    assert second["healthy"][0] is HostStatus.OK
    status, error = second["frozen"]
    assert status is not HostStatus.OK and "keepalive" in (error or "").lower(), (status, error)
    assert seen[1][0] - seen[0][0] < options.deadline_s  # a refresh held to the command's deadline: 65 s
