"""Gathering the runner's one-host calls into batches, for the transports whose engine fans out itself
(ClusterShell's Task, one srun step): the calls that arrive together with the same command become one batch, and
the batch is launched once, with each host's future to settle. The :class:`~gpudiag.transport.base.Transport`
protocol stays one call per host, so the runner judges each host as in a direct sweep (and these engines run
with the whole host list in one window: ``gpudiag.run.request.prepare``). Standard library only."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from gpudiag.model import Host, RemoteResult
from gpudiag.transport.base import RemoteCommand

# Calls that arrive within this long of the first are one batch (the runner starts its whole window at once).
GATHER_S = 0.05


@dataclass(slots=True, kw_only=True)
class Batch:
    """The hosts that asked for ``command`` together, each with the future its ``run`` awaits."""

    command: RemoteCommand
    futures: dict[str, asyncio.Future[RemoteResult]] = field(default_factory=dict)
    hosts: dict[str, Host] = field(default_factory=dict)

    def settle(self, name: str, outcome: RemoteResult | BaseException) -> None:
        """Give host ``name`` its result or its error (once; a host the sweep gave up on is left alone)."""
        future = self.futures.get(name)
        if future is None or future.done():
            return
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)

    def pending(self) -> list[str]:
        """The hosts still waiting."""
        return [name for name, future in self.futures.items() if not future.done()]


class Gatherer:
    """Collects the calls; ``launch(batch)`` starts a batch's one run (it settles every host, in time)."""

    def __init__(self, launch: Callable[[Batch], None]) -> None:
        self._launch = launch
        self._open: dict[tuple[str, bytes, float], Batch] = {}

    async def run(self, host: Host, command: RemoteCommand) -> RemoteResult:
        """Join the open batch of ``command`` (or open one) and wait for this host's outcome."""
        loop = asyncio.get_running_loop()
        key = (command.command, command.stdin, command.deadline_s)
        batch = self._open.get(key)
        if batch is None or host.name in batch.futures:  # the same name twice: the second goes in the next batch
            batch = self._open[key] = Batch(command=command)
            loop.call_later(GATHER_S, self._start, key, batch)
        future: asyncio.Future[RemoteResult] = loop.create_future()
        batch.futures[host.name], batch.hosts[host.name] = future, host
        return await future

    def _start(self, key: tuple[str, bytes, float], batch: Batch) -> None:
        if self._open.get(key) is batch:
            del self._open[key]
        if batch.pending():
            self._launch(batch)
