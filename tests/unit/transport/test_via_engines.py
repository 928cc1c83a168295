"""The pure parts of ``--via``: what an OpenSSH client's exit 255 says (ClusterShell's hops), reading one srun
step's labelled output (with srun's 1 KiB cuts and two tasks interleaved), which Slurm states take no step, and
the names neither engine is given."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json

import pytest

from gpudiag.model import Host, HostStatus, UnreachableReason
from gpudiag.transport.base import ConnectFailed, RemoteCommand
from gpudiag.transport.clush import ClushConfigError, ClushOptions, ClushTransport, ssh_options_for
from gpudiag.transport.srun import WRAPPER, SrunOptions, SrunTransport, read_step, unusable
from gpudiag.transport.ssh_client_errors import ssh_failure


@pytest.mark.parametrize(("stderr", "status", "reason"), [
    (["Host key verification failed."], HostStatus.HOST_KEY_REJECTED, None),
    (["@@@@@@@@@@@", "@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @", "Host key verification failed."],
     HostStatus.HOST_KEY_REJECTED, None),
    (["user@n1: Permission denied (publickey)."], HostStatus.AUTH_FAILED, None),
    (["ssh: connect to host 10.0.0.7 port 22: Connection refused"], HostStatus.UNREACHABLE, UnreachableReason.REFUSED),
    (["ssh: connect to host 10.0.0.7 port 22: Connection timed out"], HostStatus.UNREACHABLE,
     UnreachableReason.TIMEOUT),
    (["ssh: Could not resolve hostname gw9: Name or service not known"], HostStatus.UNREACHABLE, UnreachableReason.DNS),
    (["ssh: connect to host 10.0.0.7 port 22: No route to host"], HostStatus.UNREACHABLE, UnreachableReason.NETWORK),
    ([], HostStatus.ERROR, None),
])
def test_ssh_exit_255_is_read_from_its_stderr(stderr: list[str], status: HostStatus,
                                              reason: UnreachableReason | None) -> None:
    error = ssh_failure(stderr, where="through gateway gw1: ")
    assert (error.status, error.reason) == (status, reason)
    assert str(error).startswith("through gateway gw1: ")
    assert stderr == [] or str(error).endswith(stderr[-1].strip())


def _labelled(task: int, node: str, document: bytes, exit_status: int) -> tuple[list[bytes], list[bytes]]:
    out = [f"{task}: @gpudiag-node {node}".encode()]
    out += [f"{task}: ".encode() + line for line in base64.encodebytes(document).splitlines()]
    return out, [f"{task}: @gpudiag-exit {exit_status}".encode()]


def test_a_step_s_interleaved_tasks_give_each_node_its_document() -> None:
    docs = {"gpu01": json.dumps({"x": "a" * 3000}).encode(), "gpu02": json.dumps({"y": 2}).encode()}
    out1, err1 = _labelled(0, "gpu01", docs["gpu01"], 0)
    out2, err2 = _labelled(1, "gpu02", docs["gpu02"], 124)
    stdout = [line for pair in itertools.zip_longest(out1, out2, fillvalue=b"") for line in pair if line]
    stderr = [b"srun: warning: something of srun's own", *err2, b"1: a line the node wrote", *err1]
    results, said = read_step(b"\n".join(stdout) + b"\n", b"\n".join(stderr), 4 * 1024 * 1024)
    assert {n: (r.stdout, r.exit_status, r.via) for n, r in results.items()} == {
        "gpu01": (docs["gpu01"], 0, "slurm"), "gpu02": (docs["gpu02"], 124, "slurm")}
    assert results["gpu02"].stderr == b"a line the node wrote"
    assert said == ["srun: warning: something of srun's own"]


def test_a_document_past_the_bound_is_cut_and_says_so() -> None:
    out, err = _labelled(0, "gpu01", b"z" * 5000, 0)
    results, _ = read_step(b"\n".join(out), b"\n".join(err), 1000)
    assert results["gpu01"].stdout_truncated and len(results["gpu01"].stdout) <= 1000


def test_a_task_that_never_said_its_node_is_no_node_s_result() -> None:
    results, said = read_step(b"0: QUJD\n", b"srun: error: Unable to allocate resources: Requested nodes are busy\n",
                              1000)
    assert results == {} and said == ["srun: error: Unable to allocate resources: Requested nodes are busy"]


@pytest.mark.parametrize(("state", "takes_no_step"), [
    ("idle", False), ("mixed", False), ("allocated", False), (None, False), ("drained", True), ("draining", True),
    ("down*", True), ("idle*", True), ("maint", True), ("not_responding", True)])
def test_which_slurm_states_take_no_step(state: str | None, takes_no_step: bool) -> None:
    assert unusable(state) is takes_no_step


def test_srun_runs_its_own_argv_and_the_command_is_one_argument() -> None:
    transport = SrunTransport(SrunOptions(job="81723"), fallback=ClushTransport(ClushOptions(ssh_options=())))
    argv = transport.argv(["gpu01", "gpu02"])
    assert argv[0] == "srun" and "--jobid=81723" in argv and "--overlap" in argv and "--immediate=10" not in argv
    assert "--nodelist=gpu01,gpu02" in argv and argv[-4:] == ["sh", "-c", WRAPPER, "gpudiag"]


@pytest.mark.parametrize("name", ["-oProxyCommand=touch x", "n[1-2]", "a,b", "@gpus", "n 1"])
def test_a_name_clustershell_would_read_as_more_is_that_host_s_error(name: str) -> None:
    transport = ClushTransport(ClushOptions(ssh_options=()))
    with pytest.raises(ConnectFailed, match="not a host name ClusterShell can route"):
        asyncio.run(transport.run(Host(name=name), RemoteCommand(command="true")))


def test_clush_ssh_options_check_keys_strictly_and_refuse_what_differs_per_host() -> None:
    hosts = [Host(name="a", port=2222, user="ops"), Host(name="b", port=2222, user="ops")]
    args, user = ssh_options_for(hosts, known_hosts="kh", ssh_config=None, accept_new=False)
    assert args == ("-oStrictHostKeyChecking=yes", "-oServerAliveInterval=15", "-oServerAliveCountMax=3",
                    "-p", "2222", "-oUserKnownHostsFile=kh", "-oGlobalKnownHostsFile=/dev/null") and user == "ops"
    with pytest.raises(ClushConfigError, match="port differ"):
        ssh_options_for([*hosts, Host(name="c", port=22)], known_hosts=None, ssh_config=None, accept_new=False)
    with pytest.raises(ClushConfigError, match="jump host"):
        ssh_options_for([Host(name="c", jump="bastion")], known_hosts=None, ssh_config=None, accept_new=False)
