"""The fan-out with logs: one collector command per distinct log configuration, the config as data, errors first;
and the fake node's topology and systemd-detect-virt answers."""

from __future__ import annotations

import asyncio
import json
import re
import shlex

import pytest
from fake_transport import FakeTransport, answer

from gpudiag.collect.remote import collector_call
from gpudiag.logs import LogConfigError, LogOptions
from gpudiag.model import Host
from gpudiag.sweep.runner import SweepOptions, sweep
from gpudiag.transport.base import RemoteCommand


def recording_transport() -> FakeTransport:
    """A node that answers any command with an empty document; the commands are in its ``calls``."""
    return FakeTransport(lambda host, command: answer(b'{"schema": "gpudiag.probe/2", "nvidia_smi": {}}'))


def _config(command: RemoteCommand) -> dict[str, object]:
    script = command.stdin.decode()
    match = re.search(r"^_CONFIG = (.*)$", script, re.M)
    assert match is not None
    loaded: dict[str, object] = json.loads(eval(match.group(1)))  # noqa: S307 - a repr'd str literal we wrote
    return loaded


def test_one_command_per_distinct_log_configuration() -> None:
    hosts = [Host(name="a", logs=("~/glm5.log",)), Host(name="b", logs=("~/glm5.log",)), Host(name="c"),
             Host(name="d"), Host(name="e", logs=("@kernel",))]
    transport = recording_transport()
    asyncio.run(sweep(hosts, transport, SweepOptions(samples=1, interval_s=0.0)))
    commands = {host.name: command for host, command in transport.calls}
    assert commands["a"] is commands["b"] and commands["c"] is commands["d"]
    assert len({id(c) for c in commands.values()}) == 3
    assert [s["path"] for s in _config(commands["a"])["logs"]] == ["~/glm5.log"]  # type: ignore[index]
    assert _config(commands["c"])["logs"] is None and _config(commands["c"])["context"] is True


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
    transport = recording_transport()
    with pytest.raises(LogConfigError, match=r"^host b: logs\[0\]: unknown key 'grep'"):
        asyncio.run(sweep([Host(name="a"), Host(name="b", logs=({"path": "/x", "grep": "Xid"},))], transport,
                          SweepOptions(logs=LogOptions(paths=("/y",)))))
    assert transport.calls == []
