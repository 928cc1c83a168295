"""Target words people type, swept through a real sshd: ``user@host:port``, hosts on stdin (``-``), and an IPv6
literal, as a target and as a jump host (``-J user@[::1]:PORT``)."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_run import run_cli
from loopback import SshdCluster, SshdUnavailable, running_cluster

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=REPO, input=stdin)  # in this process: the process is not the point


def _statuses(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    return {h["host"]: h["status"] for h in json.loads(done.stdout)["hosts"]}


def test_user_at_host_colon_port_and_hosts_on_stdin(sshd_cluster: SshdCluster) -> None:
    healthy, idle = sshd_cluster.address_of("healthy"), sshd_cluster.address_of("idle")
    common = ("--identity-file", str(sshd_cluster.client_key), "--known-hosts", str(sshd_cluster.known_hosts),
              "--samples", "1", "--interval", "0", "--format", "json")
    # No -u, no -p: the word alone carries the user and the port (the sshd listens on no default port 22).
    done = cli("sweep", f"{sshd_cluster.user}@{healthy}:{sshd_cluster.port}", *common)
    assert _statuses(done) == {healthy: "ok"}, done.stderr
    # squeue -h -o %N | gpudiag sweep -: a folded list on stdin, expanded; -u/-p apply to the words without.
    prefix, _, first = healthy.rpartition(".")
    assert idle.startswith(prefix + ".")
    folded = f"{prefix}.[{first},{idle.rpartition('.')[2]}]\n"
    done = cli("sweep", "-", "-u", sshd_cluster.user, "-p", str(sshd_cluster.port), *common, stdin=folded)
    assert _statuses(done) == {healthy: "ok", idle: "ok"}, done.stderr
    empty = cli("sweep", "-", *common, stdin="# nothing\n")
    assert (empty.returncode, empty.stderr) == (3, "gpudiag: -: stdin names no hosts\n")


def _listens_on_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def ipv6_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdCluster]:
    """An sshd on [::1] (and on one IPv4 loopback address, a target behind it as a bastion)."""
    if not _listens_on_ipv6_loopback():
        pytest.skip("this machine has no IPv6 loopback (::1) to listen on")
    try:
        with running_cluster(tmp_path_factory.mktemp("ipv6"), extra_healthy=0,
                             scenarios={"::1": "healthy", "127.0.77.1": "idle"}) as cluster:
            yield cluster
    except SshdUnavailable as exc:
        pytest.skip(str(exc))


def test_an_ipv6_literal_as_target_and_as_jump_host(ipv6_cluster: SshdCluster) -> None:
    common = ("--identity-file", str(ipv6_cluster.client_key), "--known-hosts", str(ipv6_cluster.known_hosts),
              "--samples", "1", "--interval", "0", "--format", "json")
    user, port = ipv6_cluster.user, ipv6_cluster.port
    done = cli("sweep", f"{user}@[::1]:{port}", *common)
    assert _statuses(done) == {"::1": "ok"}, done.stderr
    via = cli("sweep", f"{user}@127.0.77.1:{port}", "-J", f"{user}@[::1]:{port}", *common)
    assert _statuses(via) == {"127.0.77.1": "ok"}, via.stderr
    # The jump named in the error when it fails: nothing listens on port 1 of ::1.
    down = cli("sweep", f"{user}@127.0.77.1:{port}", "-J", f"{user}@[::1]:1", *common)
    (host,) = json.loads(down.stdout)["hosts"]
    assert host["status"] == "unreachable", host
    assert host["error"].startswith(f"via bastion {user}@[::1]:1: connection refused by [::1]:1"), host
