"""``gpudiag watch`` on a host whose ``logs`` hold an inventory-style mapping (``{path, packs}``): such a Host
was not hashable, and watch's backoff and the SSH transport's kept connections are keyed by Host, so every
such host read "error: unexpected TypeError: unhashable type: 'dict'" (the demo's spare node in ``gpudiag
watch --demo``). The logs are left out of a Host's hash (not of its equality)."""

from __future__ import annotations

import asyncio

from gpudiag.model import Host, RemoteResult
from gpudiag.sweep.watch import BackoffTransport
from gpudiag.transport.base import ConnectFailed, RemoteCommand

HOST = Host(name="spare-h200-03", logs=({"path": "/var/log/kern.log", "packs": ["xid"]},))
COMMAND = RemoteCommand(command="true")


class Answers:
    def __init__(self) -> None:
        self.up = False

    async def run(self, host: Host, command: RemoteCommand) -> RemoteResult:
        if not self.up:
            raise ConnectFailed("connection refused")
        return RemoteResult(exit_status=0, stdout=b"{}", stderr=b"")

    async def close(self) -> None:
        pass


def test_a_host_with_a_log_mapping_is_hashable_and_equal_by_its_logs() -> None:
    same = Host(name="spare-h200-03", logs=({"path": "/var/log/kern.log", "packs": ["xid"]},))
    assert {HOST: 1}[same] == 1 and HOST != Host(name="spare-h200-03")


def test_a_host_with_a_log_mapping_is_watched_and_backed_off() -> None:
    async def go() -> None:
        inner = Answers()
        backoff = BackoffTransport(inner, base_s=0.0, max_s=0.0)
        for _ in range(2):
            try:
                await backoff.run(HOST, COMMAND)
            except ConnectFailed:
                pass
            else:
                raise AssertionError("the host is down")
        inner.up = True
        assert (await backoff.run(HOST, COMMAND)).exit_status == 0

    asyncio.run(go())
