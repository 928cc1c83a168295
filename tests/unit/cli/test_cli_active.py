"""``--active`` through the CLI and the fake transport (answered with the H200's recorded documents): the flag
and the config file's key reach the collector's configuration, off by default; the figures and a slowed
GPU's finding come back in the JSON; the help says what it costs."""

from __future__ import annotations

import json
from pathlib import Path

from fake_transport import FakeTransport, answer, override_transport, recorded
from typer.testing import CliRunner

from gpudiag.cli.app import app
from gpudiag.model import Host, RemoteResult
from gpudiag.transport.base import RemoteCommand

ENV = {"PATH": "/usr/bin:/bin"}
IDLE = json.loads(recorded("h200_580.159_active", "probe_active.json"))


def slowed() -> bytes:
    """The recorded document with the GPU's FMA loop at half its rate (a GPU held at half its clock)."""
    doc = json.loads(json.dumps(IDLE))
    doc["active"]["gpus"][0]["compute"].update(tflops=31.2, sm_clock_mhz_median=990)
    return json.dumps(doc).encode()


def handler(host: Host, command: RemoteCommand) -> RemoteResult:
    return answer(slowed() if host.name == "gpu03" else json.dumps(IDLE).encode())


def run(*args: str) -> tuple[FakeTransport, object]:
    transport = FakeTransport(handler)
    with override_transport(lambda _ssh: transport):
        done = CliRunner().invoke(app, ["sweep", "gpu[01-03]", "--format", "json", *args], env=ENV)
    return transport, done


def test_active_reaches_the_collector_and_the_figures_come_back() -> None:
    transport, done = run("--active")
    assert done.exit_code == 1, done.output  # type: ignore[attr-defined]
    assert all(b'"active": {"budget_s": 10.0, "deadline_s": 30.0}' in c.stdin for _, c in transport.calls)
    doc = json.loads(done.stdout)  # type: ignore[attr-defined]
    assert [h["gpus"][0]["active"]["compute_tflops"] for h in doc["hosts"]] == [62.51, 62.51, 31.2]
    assert [[f["code"] for f in h["findings"]] for h in doc["hosts"]] == [[], [], ["SLOW_COMPUTE"]]
    (slow,) = doc["hosts"][2]["findings"]
    assert slow["evidence"]["fleet_median"] == 62.51 and slow["evidence"]["expected"] == 53.6
    assert slow["action"] == "drain_and_inspect"


def test_off_by_default_and_on_from_the_config_file(tmp_path: Path) -> None:
    transport, done = run()
    assert done.exit_code in (0, 1), done.output  # type: ignore[attr-defined]
    # Every declared key travels (wire.make_config): off is the key's default, null, on every call.
    assert transport.calls and all(b'"active": null' in c.stdin and b'"active": {' not in c.stdin
                                   for _, c in transport.calls)
    config = tmp_path / "config.toml"
    config.write_text("[sweep]\nactive = true\n")
    transport, done = run("--config", str(config))
    assert all(b'"active": {"budget_s": 10.0' in c.stdin for _, c in transport.calls), done.output  # type: ignore[attr-defined]


def test_the_help_says_what_it_costs() -> None:
    for command in ("sweep", "local"):
        done = CliRunner().invoke(app, [command, "--help"], env={**ENV, "COLUMNS": "80"}, prog_name="gpudiag")
        text = " ".join(done.stdout.replace("│", " ").split())
        assert "--active" in text and "Costs ~4 s per node" in text and "never touched" in text, text
