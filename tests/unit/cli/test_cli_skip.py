"""``--skip CODE`` (and ``skip`` in a config file) switches a check off: its findings are left out of every
host, so neither the exit code nor a host's action counts them; a code gpudiag does not have is one line, before
any connection. Through the shared fake transport (recorded H200 documents), as tests/unit/cli/test_cli_sweep.py."""

from __future__ import annotations

import json
from pathlib import Path

from fake_transport import FakeTransport, answer, override_transport, recorded
from typer.testing import CliRunner

from gpudiag.cli.app import app
from gpudiag.model import Host, RemoteResult
from gpudiag.transport.base import ConnectFailed, RemoteCommand

ENV = {"PATH": "/usr/bin:/bin"}


def handler(host: Host, command: RemoteCommand) -> RemoteResult:
    if host.name != "gpu01":
        raise ConnectFailed(f"connection refused by {host.name}:22 (host up, nothing listening)")
    return answer(recorded("h200_580.159_spin"))  # one thread spinning: BUSY_LOW_POWER


def _codes(*args: str, env: dict[str, str] = ENV) -> tuple[int, list[list[str]]]:
    transport = FakeTransport(handler)
    with override_transport(lambda _ssh: transport):
        done = CliRunner().invoke(app, ["sweep", "gpu0[1-2]", "--format", "json", *args], env=env)
    assert done.exit_code in (0, 1, 2), done.output
    return done.exit_code, [[f["code"] for f in h["findings"]] for h in json.loads(done.stdout)["hosts"]]


def test_skip_leaves_the_codes_out_and_the_exit_code_follows() -> None:
    assert _codes() == (2, [["BUSY_LOW_POWER"], ["HOST_UNREACHABLE"]])
    assert _codes("--skip", "busy_low_power") == (2, [[], ["HOST_UNREACHABLE"]])
    assert _codes("--skip", "BUSY_LOW_POWER,host_unreachable") == (0, [[], []])


def test_skip_in_a_config_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[sweep]\nskip = ["HOST_UNREACHABLE"]\n')
    assert _codes("--config", str(config)) == (1, [["BUSY_LOW_POWER"], []])  # 1: the warning alone


def test_an_unknown_code_is_one_line_before_any_connection() -> None:
    transport = FakeTransport(handler)
    with override_transport(lambda _ssh: transport):
        done = CliRunner().invoke(app, ["sweep", "gpu01", "--skip", "NO_SUCH_CODE"], env=ENV)
    assert (done.exit_code, done.stdout) == (3, "")
    assert done.stderr == "gpudiag: --skip NO_SUCH_CODE: no such finding code (the codes: docs/findings.md)\n"
    assert transport.hosts == []
