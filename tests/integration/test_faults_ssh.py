"""Issue 14's SSH faults over a real OpenSSH sshd on loopback: accept-new with a named known_hosts file (#5),
the controller's own open-file limit and a missing USER (#4), and statuses that say what happened (#12):
a host name that cannot be one, the two timeouts on a silent server, refused against silent.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpudiag.checks import CheckSettings
from gpudiag.model import Host, HostReport, HostStatus, SweepReport, UnreachableReason
from gpudiag.sweep.runner import SweepOptions, sweep
from gpudiag.transport.ssh import SshOptions, SshTransport

pytestmark = pytest.mark.integration

FAST = SweepOptions(samples=1, interval_s=0.0, deadline_s=20.0, settings=CheckSettings())


def run_sweep(hosts: list[Host], **ssh: object) -> SweepReport:
    ssh.setdefault("connect_timeout_s", 5.0)
    ssh.setdefault("ssh_config", [])  # the tester's ~/.ssh/config must not change what is tested
    return asyncio.run(sweep(hosts, SshTransport(SshOptions(**ssh)), FAST))  # type: ignore[arg-type]


def only(report: SweepReport) -> HostReport:
    (host,) = report.hosts
    return host


# -- #5: accept-new records into the file it reads ---------------------------------------------------------

@pytest.mark.parametrize("named_by", ["inventory", "flag"])
def test_accept_new_records_into_the_named_known_hosts_file_once(sshd_cluster, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                 named_by: str) -> None:
    named = tmp_path / "named_known_hosts"
    own = tmp_path / "gpudiag_known_hosts"  # gpudiag's own file: not read here, so never written
    hosts = [sshd_cluster.host("127.0.0.2", "healthy"), *sshd_cluster.extra_hosts(2)]
    if named_by == "inventory":  # an inventory's known_hosts:
        hosts = [dataclasses.replace(h, known_hosts=str(named)) for h in hosts]
        files: tuple[str, ...] = ()
    else:  # --known-hosts FILE
        hosts = [dataclasses.replace(h, known_hosts=None) for h in hosts]
        files = (str(named),)

    def lines() -> list[str]:
        return named.read_text().splitlines()

    first = run_sweep(hosts, known_hosts=files, gpudiag_known_hosts=str(own), accept_new_host_keys=True)
    assert [(h.status, h.error) for h in first.hosts] == [(HostStatus.OK, None)] * 3
    server_key = sshd_cluster.known_hosts.read_text().splitlines()[0].split()[1:]
    assert sorted(lines()) == sorted(" ".join([f"[{h.address}]:{sshd_cluster.port}", *server_key]) for h in hosts)
    assert not own.exists()

    again = run_sweep(hosts, known_hosts=files, gpudiag_known_hosts=str(own), accept_new_host_keys=True)
    assert {h.status for h in again.hosts} == {HostStatus.OK}
    assert len(lines()) == 3  # read, so nothing recorded twice
    without_flag = run_sweep(hosts, known_hosts=files, gpudiag_known_hosts=str(own))
    assert {h.status for h in without_flag.hosts} == {HostStatus.OK}


def test_the_same_address_twice_in_one_sweep_is_recorded_once(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    named = tmp_path / "named_known_hosts"
    host = dataclasses.replace(sshd_cluster.host("127.0.0.2", "a"), known_hosts=str(named))
    report = run_sweep([host, dataclasses.replace(host, name="b"), dataclasses.replace(host, name="c")],
                       accept_new_host_keys=True, gpudiag_known_hosts=str(tmp_path / "own"))
    assert {h.status for h in report.hosts} == {HostStatus.OK}
    assert len(named.read_text().splitlines()) == 1


@pytest.mark.parametrize("accept_new", [False, True])
def test_a_changed_key_never_suggests_accept_new(sshd_cluster, accept_new: bool) -> None:  # type: ignore[no-untyped-def]
    host = dataclasses.replace(sshd_cluster.host("127.0.0.2", "healthy"),
                               known_hosts=str(sshd_cluster.wrong_key_known_hosts))
    before = sshd_cluster.wrong_key_known_hosts.read_text()
    result = only(run_sweep([host], accept_new_host_keys=accept_new))
    assert result.status is HostStatus.HOST_KEY_REJECTED
    assert result.error == ("host key of 127.0.0.2 does not match the one recorded in known_hosts - it CHANGED "
                            "(a reinstalled node or a man in the middle); verify it, then remove the old entry")
    assert sshd_cluster.wrong_key_known_hosts.read_text() == before


# -- #12: statuses that say what happened -------------------------------------------------------------------


@pytest.mark.parametrize(("connect_s", "login_s", "error"), [
    (1.0, 10.0, "no SSH login to 127.0.0.1:{port} within 1 s (--connect-timeout: TCP connect, SSH banner, key "
                "exchange, authentication)"),
    (10.0, 1.0, "no SSH login to 127.0.0.1:{port} within 1 s of its TCP connect (--login-timeout: SSH banner, key "
                "exchange, authentication)"),
], ids=["connect-timeout-fires", "login-timeout-fires"])
def test_a_silent_server_is_unreachable_whichever_timeout_fires(sshd_cluster, silent_listener: int,  # type: ignore[no-untyped-def]
                                                                connect_s: float, login_s: float,
                                                                error: str) -> None:
    silent = dataclasses.replace(sshd_cluster.host("127.0.0.2", "silent"), address="127.0.0.1",
                                 port=silent_listener)
    result = only(run_sweep([silent], connect_timeout_s=connect_s, login_timeout_s=login_s))
    assert (result.status, result.unreachable_reason, result.error) == (
        HostStatus.UNREACHABLE, UnreachableReason.TIMEOUT, error.format(port=silent_listener))
    assert result.duration_s is not None and result.duration_s < 5
    (finding,) = result.findings
    assert finding.evidence == {"status": "unreachable", "unreachable_reason": "timeout"}


def test_refused_and_silent_hosts_say_which(sshd_cluster, silent_listener: int) -> None:  # type: ignore[no-untyped-def]
    refused = dataclasses.replace(sshd_cluster.host("127.0.0.2", "refused"), address="127.0.0.250")
    silent = dataclasses.replace(sshd_cluster.host("127.0.0.2", "silent"), address="127.0.0.1",
                                 port=silent_listener)
    report = run_sweep([refused, silent, sshd_cluster.host("127.0.0.2", "healthy")], connect_timeout_s=1.0)
    assert [(h.host, h.status, h.unreachable_reason) for h in report.hosts] == [
        ("refused", HostStatus.UNREACHABLE, UnreachableReason.REFUSED),
        ("silent", HostStatus.UNREACHABLE, UnreachableReason.TIMEOUT),
        ("healthy", HostStatus.OK, None)]
    assert [f.evidence for f in report.hosts[0].findings] == [
        {"status": "unreachable", "unreachable_reason": "refused"}]


def test_a_target_its_bastion_cannot_reach_is_unreachable_refused(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    behind = dataclasses.replace(sshd_cluster.host("127.0.0.2", "behind"), address="127.0.0.250",
                                 jump=f"127.0.0.2:{sshd_cluster.port}")
    result = only(run_sweep([behind]))
    assert (result.status, result.unreachable_reason, result.error) == (
        HostStatus.UNREACHABLE, UnreachableReason.REFUSED,
        f"the bastion could not reach 127.0.0.250:{sshd_cluster.port}: Connection refused")


def test_a_label_over_63_characters_cannot_be_resolved(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    name = "n" * 64 + ".example.com"
    host = dataclasses.replace(sshd_cluster.host("127.0.0.2", "long"), address=name)
    result = only(run_sweep([host]))
    assert (result.status, result.unreachable_reason) == (HostStatus.UNREACHABLE, UnreachableReason.DNS)
    assert result.error == (f"cannot resolve {name}: not a valid host name (each dot-separated part must be 1 to "
                            "63 characters)")


# -- #4: the controller's open-file limit is not the hosts' failure -----------------------------------------

_LOW_LIMIT_SWEEP = """
import asyncio, json, resource, sys
from gpudiag.checks import CheckSettings
from gpudiag.model import Host
from gpudiag.sweep.runner import SweepOptions, sweep
from gpudiag.transport.ssh import SshOptions, SshTransport

hosts = [Host(**h) for h in json.loads(sys.argv[1])]
resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))  # as `ulimit -n 40`: the hard limit cannot be raised
notes = []
report = asyncio.run(sweep(hosts, SshTransport(SshOptions(connect_timeout_s=10.0, ssh_config=[])),
                           SweepOptions(samples=1, interval_s=0.0, deadline_s=30.0, settings=CheckSettings()),
                           on_note=notes.append))
print(json.dumps({"notes": notes, "hosts": [[h.host, h.status.value, h.error] for h in report.hosts]}))
"""


def test_a_low_open_file_limit_lowers_the_window_and_no_host_fails(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    hosts = sshd_cluster.extra_hosts(40)
    assert len(hosts) == 40
    # No USER, LOGNAME, LNAME or USERNAME either: the local user comes from the uid, once.
    env = {k: v for k, v in os.environ.items() if k not in ("USER", "LOGNAME", "LNAME", "USERNAME")}
    done = subprocess.run([sys.executable, "-c", _LOW_LIMIT_SWEEP,
                           json.dumps([dataclasses.asdict(h) for h in hosts])],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert [tuple(h) for h in result["hosts"]] == [(h.name, "ok", None) for h in hosts]
    (note,) = result["notes"]
    assert note.startswith("the open-file limit (40, hard 40) fits ") and note.endswith(
        "hosts in flight, not 40: sweeping " + note.split(" fits ")[1].split()[0] + " at a time "
        "(ulimit -n " + note.rsplit("ulimit -n ", 1)[1].split()[0] + " lets all 40 run)")


_NO_PASSWD_AFTER_START = """
import asyncio, json, sys, types
from gpudiag.checks import CheckSettings
from gpudiag.model import Host
from gpudiag.sweep.runner import SweepOptions, sweep
from gpudiag.transport.ssh import SshOptions, SshTransport

host = Host(**json.loads(sys.argv[1]))
transport = SshTransport(SshOptions(connect_timeout_s=10.0, ssh_config=[]))


def getpwuid(uid):  # the passwd lookup as it fails with the process out of open files
    raise KeyError(f"getpwuid(): uid not found: {uid}")


sys.modules["pwd"] = types.SimpleNamespace(getpwuid=getpwuid)
report = asyncio.run(sweep([host], transport, SweepOptions(samples=1, interval_s=0.0, settings=CheckSettings())))
print(json.dumps([report.hosts[0].status.value, report.hosts[0].error]))
"""


def test_without_user_in_the_environment_the_user_is_resolved_once(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    """asyncssh asks for the local user on every connection; with no USER/LOGNAME that was a passwd lookup
    each time, which fails under EMFILE ("Unknown local username"): now it is resolved once, from the uid."""
    env = {k: v for k, v in os.environ.items() if k not in ("USER", "LOGNAME", "LNAME", "USERNAME")}
    done = subprocess.run([sys.executable, "-c", _NO_PASSWD_AFTER_START,
                           json.dumps(dataclasses.asdict(sshd_cluster.host("127.0.0.2", "healthy")))],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == ["ok", None]


def test_a_recorded_key_of_a_type_the_server_lacks_is_a_rejected_host_key(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """known_hosts holds an RSA key for the node, whose sshd has an ed25519 key only: the host key is rejected
    and the message names both types (before: `error`, "SSH connection ... closed: Connection lost")."""
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", str(tmp_path / "rsa")],
                   check=True, stdin=subprocess.DEVNULL)
    kind, blob = (tmp_path / "rsa.pub").read_text().split()[:2]
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.2]:{sshd_cluster.port} {kind} {blob}\n")
    host = dataclasses.replace(sshd_cluster.host("127.0.0.2", "healthy"), known_hosts=str(known))
    result = only(run_sweep([host]))
    assert result.status is HostStatus.HOST_KEY_REJECTED, result.error
    assert "lists a ssh-rsa key" in (result.error or "") and "presents ssh-ed25519" in (result.error or "")
