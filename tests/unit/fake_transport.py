"""One fake transport for every unit test: each run is answered by a plain handler function (httpx's
``MockTransport`` idea), so a test says what the nodes answer and nothing else is faked.

    def handler(host: Host, command: RemoteCommand) -> RemoteResult:
        return answer(recorded("h200_580.159_gemm"))           # or raise ConnectFailed(...), or be async

    transport = FakeTransport(handler)                          # hand it to gpudiag.sweep.runner.sweep(...)
    with override_transport(lambda _ssh: transport):            # ... or to the CLI (gpudiag.transport.build)
        CliRunner().invoke(app, ["sweep", "gpu[01-02]"])

The handler may return a :class:`~gpudiag.model.RemoteResult` or an awaitable of one (an ``async def``), and
may raise what a transport raises (:class:`~gpudiag.transport.base.TransportError` and its kinds). The
transport records every call in order (:attr:`FakeTransport.calls`) and whether it was closed.

Import with ``from fake_transport import FakeTransport`` (pyproject.toml's ``pythonpath`` puts ``tests/unit`` on
``sys.path``).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from pathlib import Path

from gpudiag.model import Host, RemoteResult
from gpudiag.transport.base import RemoteCommand
from gpudiag.transport.build import override_transport

__all__ = ["DATA", "FakeTransport", "Handler", "answer", "override_transport", "recorded"]

DATA = Path(__file__).resolve().parents[1] / "data"

Handler = Callable[[Host, RemoteCommand], "RemoteResult | Awaitable[RemoteResult]"]


class FakeTransport:
    """A :class:`~gpudiag.transport.base.Transport` whose every run is answered by ``handler``."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.calls: list[tuple[Host, RemoteCommand]] = []  # every run, in the order the runner made them
        self.closed = False

    async def run(self, host: Host, command: RemoteCommand) -> RemoteResult:
        """Record the call, then answer it with the handler (awaited when it is async)."""
        self.calls.append((host, command))
        result = self.handler(host, command)
        if inspect.isawaitable(result):
            return await result
        return result

    async def close(self) -> None:
        """Only remembered: a test asserts the runner closed what it was given."""
        self.closed = True

    @property
    def hosts(self) -> list[str]:
        """The names of the hosts asked, in order."""
        return [host.name for host, _ in self.calls]


def recorded(capture: str, name: str = "probe.json") -> bytes:
    """A collector document recorded on a real node: ``tests/data/<capture>/<name>`` (each folder's README says
    how it was captured), as the node printed it."""
    return (DATA / capture / name).read_bytes()


def answer(stdout: bytes, *, exit_status: int | None = 0, stderr: bytes = b"") -> RemoteResult:
    """What a node that ran the command answers: its stdout, its exit status (``None``: none came back)."""
    return RemoteResult(exit_status=exit_status, stdout=stdout, stderr=stderr)
