"""``gpudiag sweep`` end to end in this process (typer's runner), through the shared fake transport: what the
nodes answer are collector documents recorded on a real H200 (tests/data/h200_580.159_<workload>/probe.json)
and a host that refuses the connection; the command line, the request, the fan-out, the parser, the checks and
the report are the real ones. No network, no process: the transport is the test seam's
(:func:`gpudiag.transport.build.override_transport`)."""

from __future__ import annotations

import json

from fake_transport import FakeTransport, answer, override_transport, recorded
from typer.testing import CliRunner

from gpudiag.cli.app import app
from gpudiag.model import Host, RemoteResult
from gpudiag.transport.base import ConnectFailed, RemoteCommand
from gpudiag.transport.ssh import SshOptions

ENV = {"PATH": "/usr/bin:/bin"}
NODES = {"gpu01": "h200_580.159_spin", "gpu02": "h200_580.159_gemm"}  # gpu03: nothing listens


def handler(host: Host, command: RemoteCommand) -> RemoteResult:
    if host.name not in NODES:
        raise ConnectFailed(f"connection refused by {host.name}:22 (host up, nothing listening)")
    return answer(recorded(NODES[host.name]))


def test_a_sweep_through_the_fake_transport_reports_the_recorded_h200s() -> None:
    transport = FakeTransport(handler)
    given: list[SshOptions] = []

    def factory(ssh: SshOptions) -> FakeTransport:
        given.append(ssh)
        return transport

    with override_transport(factory):
        done = CliRunner().invoke(app, ["sweep", "gpu[01-03]", "--connect-timeout", "4", "--format", "json"],
                                  env=ENV)
    assert done.exit_code == 2, done.output  # 2: critical (the host that did not answer)
    doc = json.loads(done.stdout)
    rows = [(h["host"], h["status"], [g["name"] for g in h["gpus"]], [f["code"] for f in h["findings"]])
            for h in doc["hosts"]]
    assert rows == [("gpu01", "ok", ["NVIDIA H200"], ["BUSY_LOW_POWER"]),  # one thread spinning: 100% at 17%
                    ("gpu02", "ok", ["NVIDIA H200"], []),  # a GEMM at its power cap
                    ("gpu03", "unreachable", [], ["HOST_UNREACHABLE"])]
    assert doc["hosts"][2]["error"] == "connection refused by gpu03:22 (host up, nothing listening)"
    assert doc["hosts"][0]["node"]["driver_version"] == "580.159.04"  # read from the recorded document
    # Each host was asked once, with the collector the command line built, and the fan-out closed the transport.
    assert transport.hosts == ["gpu01", "gpu02", "gpu03"] and transport.closed
    assert all(c.stdin.startswith(b"# gpudiag collector bundle") for _, c in transport.calls)
    assert [ssh.connect_timeout_s for ssh in given] == [4.0]  # the options the command built reach the factory


def test_the_table_is_the_default_and_the_seam_closes_with_its_block() -> None:
    transport = FakeTransport(handler)
    with override_transport(lambda _ssh: transport):
        done = CliRunner().invoke(app, ["sweep", "gpu02"], env=ENV)
    assert done.exit_code == 0, done.output
    assert "gpu02" in done.stdout and "exit 0: nothing needs attention" in done.stdout
    assert transport.hosts == ["gpu02"]
    from gpudiag.transport.build import _overrides

    assert _overrides == []  # outside the block, open_transport builds SSH again
