"""The fan-out with logs: one collector command per distinct log configuration, the config as data, errors first;
and the fake node's topology and systemd-detect-virt answers."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from gpudiag.collect.remote import collector_call
from gpudiag.logs import LogConfigError, LogOptions
from gpudiag.model import Host, RemoteResult
from gpudiag.sweep.runner import SweepOptions, sweep
from gpudiag.transport.base import RemoteCommand

STUB = Path(__file__).resolve().parents[2] / "agent" / "gpudiag" / "demo" / "fake_nvidia_smi"


class RecordingTransport:
    def __init__(self) -> None:
        self.commands: dict[str, RemoteCommand] = {}
        self.connected = False

    async def run(self, host: Host, command: RemoteCommand) -> RemoteResult:
        self.connected = True
        self.commands[host.name] = command
        return RemoteResult(exit_status=0, stdout=b'{"schema": "gpudiag.probe/2", "nvidia_smi": {}}', stderr=b"")

    async def close(self) -> None:
        pass


def _config(command: RemoteCommand) -> dict[str, object]:
    script = command.stdin.decode()
    match = re.search(r"^_CONFIG = (.*)$", script, re.M)
    assert match is not None
    loaded: dict[str, object] = json.loads(eval(match.group(1)))  # noqa: S307 - a repr'd str literal we wrote
    return loaded


def test_one_command_per_distinct_log_configuration() -> None:
    hosts = [Host(name="a", logs=("~/glm5.log",)), Host(name="b", logs=("~/glm5.log",)), Host(name="c"),
             Host(name="d"), Host(name="e", logs=("@kernel",))]
    transport = RecordingTransport()
    asyncio.run(sweep(hosts, transport, SweepOptions(samples=1, interval_s=0.0)))
    commands = transport.commands
    assert commands["a"] is commands["b"] and commands["c"] is commands["d"]
    assert len({id(c) for c in commands.values()}) == 3
    assert [s["path"] for s in _config(commands["a"])["logs"]] == ["~/glm5.log"]  # type: ignore[index]
    assert "logs" not in _config(commands["c"]) and _config(commands["c"])["context"] is True


def test_log_paths_and_patterns_never_reach_the_command_line() -> None:
    hostile = "$(touch /tmp/pwned); `id`; 'quote\""
    call = collector_call(samples=1, interval_s=0.0, deadline_s=10.0,
                          logs=[{"path": f"/var/log/{hostile}.log", "signatures": [{"name": "x", "regex": hostile}]}])
    assert hostile not in call.command and "pwned" not in call.command
    argv = shlex.split(call.command)
    assert [a for a in argv if a.startswith("@note=")] == [  # what the shell collector says instead
        "@note=the logs were not scanned: the log scan needs python3, which this node lacks"]
    assert _config(RemoteCommand(command=call.command, stdin=call.stdin, deadline_s=1.0,
                                 stdout_limit_bytes=1))["logs"][0]["signatures"][0]["regex"] == hostile  # type: ignore[index]


def test_a_broken_log_entry_fails_before_any_connection() -> None:
    transport = RecordingTransport()
    with pytest.raises(LogConfigError, match=r"^host b: logs\[0\]: unknown key 'grep'"):
        asyncio.run(sweep([Host(name="a"), Host(name="b", logs=({"path": "/x", "grep": "Xid"},))], transport,
                          SweepOptions(logs=LogOptions(paths=("/y",)))))
    assert not transport.connected


def _stub(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    target.write_text(f"#!{sys.executable}\n" + STUB.read_text().split("\n", 1)[1])
    target.chmod(0o755)
    (tmp_path / "scenarios").symlink_to(STUB.parent / "scenarios")
    return target


def _run(stub: Path, *args: str, scenario: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(stub), *args], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "GPUDIAG_FAKE_SCENARIO": scenario,
                               "GPUDIAG_FAKE_STATE_DIR": str(stub.parent / "state")})


def test_the_fake_node_answers_topo_m(tmp_path: Path) -> None:
    from gpudiag.collect.parse_logs import parse_topology

    stub = _stub(tmp_path, "nvidia-smi")
    case = _run(stub, "topo", "-m", scenario="case_study")
    links = parse_topology(case.stdout)
    assert case.returncode == 0 and len(links) == 28 and {x.kind for x in links} == {"pcie"}
    assert {x.link for x in links} == {"PIX", "NODE", "SYS"}
    healthy = parse_topology(_run(stub, "topo", "-m", scenario="healthy").stdout)
    assert len(healthy) == 28 and {x.link for x in healthy} == {"NV18"}
    assert _run(stub, "topo", "-m", scenario="driver_error").returncode == 9
    assert _run(stub, "topo", "-x", scenario="healthy").returncode == 2


@pytest.mark.parametrize(("scenario", "args", "out", "code"), [
    ("case_study", ["--vm"], "kvm", 0), ("case_study", ["--container"], "none", 1), ("case_study", [], "kvm", 0),
    ("healthy", ["--vm"], "none", 1)])
def test_the_fake_node_answers_systemd_detect_virt(tmp_path: Path, scenario: str, args: list[str], out: str,
                                                   code: int) -> None:
    done = _run(_stub(tmp_path, "systemd-detect-virt"), *args, scenario=scenario)
    assert (done.stdout.strip(), done.returncode) == (out, code)
