"""The transports are one explicit tuple: each host goes to the first kind that serves it, a kind is opened only
when a host needs it, and every opened one is closed. A new transport is one entry more."""

from __future__ import annotations

import asyncio

from fake_transport import FakeTransport, answer

from gpudiag.model import Host
from gpudiag.transport.base import RemoteCommand
from gpudiag.transport.build import TRANSPORTS, RoutingTransport, TransportKind
from gpudiag.transport.ssh import SshOptions


def test_localhost_is_local_and_every_other_host_ssh() -> None:
    assert [k.name for k in TRANSPORTS] == ["local", "ssh"]
    assert [next(k.name for k in TRANSPORTS if k.serves(h)) for h in (Host(name="localhost"), Host(name="gpu01"))
            ] == ["local", "ssh"]


def test_a_kind_is_opened_when_a_host_needs_it_and_closed_at_the_end() -> None:
    opened: dict[str, FakeTransport] = {}

    def kind(name: str, prefix: str) -> TransportKind:
        def open_(ssh: SshOptions) -> FakeTransport:
            opened[name] = FakeTransport(lambda host, command: answer(f"{name}:{host.name}".encode()))
            return opened[name]

        return TransportKind(name=name, serves=lambda host: host.name.startswith(prefix), open=open_)

    # A site's own way to reach its DGX nodes, asked before SSH: one entry more.
    routing = RoutingTransport(SshOptions(), (kind("dgx", "dgx"), kind("ssh", "")))
    command = RemoteCommand(command="true")

    async def go() -> list[bytes]:
        out = [(await routing.run(Host(name=name), command)).stdout for name in ("dgx01", "dgx02")]
        await routing.close()
        return out

    assert asyncio.run(go()) == [b"dgx:dgx01", b"dgx:dgx02"]
    assert list(opened) == ["dgx"]  # no host needed SSH: it was never opened
    assert opened["dgx"].closed and opened["dgx"].hosts == ["dgx01", "dgx02"]
