"""Watch mode: one connection per host kept open, a refresh every few seconds, findings as they appear and
clear, hosts that drop and come back (reconnected with exponential backoff).

A refresh reuses the connections (the transport keeps them), so it costs one channel per host instead of
a TCP connect, a key exchange and a login: a fraction of a fresh sweep.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from gpudiag.logs.plan import LogPlan, build_plans
from gpudiag.model import Finding, Host, RemoteResult, SweepReport
from gpudiag.runner import SweepOptions, sweep
from gpudiag.transport import RemoteCommand, Transport, TransportError


@dataclass(frozen=True, slots=True, kw_only=True)
class Changes:
    """What changed since the previous refresh: findings that appeared and findings that cleared."""

    appeared: tuple[Finding, ...] = ()
    cleared: tuple[Finding, ...] = ()


def _key(f: Finding) -> tuple[str, int | None, str]:
    return (f.host, f.gpu, f.code)


def changes(previous: SweepReport | None, current: SweepReport) -> Changes:
    """Findings (by host, GPU and code) new in ``current`` and gone since ``previous``."""
    before = {_key(f): f for f in previous.findings} if previous else {}
    now = {_key(f): f for f in current.findings}
    return Changes(appeared=tuple(f for k, f in now.items() if k not in before),
                   cleared=tuple(f for k, f in before.items() if k not in now))


class BackoffTransport:
    """Wraps a transport: after a host fails, it is not asked again until its backoff has passed
    (``base_s``, doubling per failure up to ``max_s``); meanwhile the last failure is reported again."""

    def __init__(self, inner: Transport, *, base_s: float = 2.0, max_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.inner, self.base_s, self.max_s, self.clock = inner, base_s, max_s, clock
        self._failed: dict[Host, tuple[int, float, TransportError]] = {}

    async def run(self, host: Host, command: RemoteCommand) -> RemoteResult:
        failures = 0
        if host in self._failed:
            failures, next_try, error = self._failed[host]
            now = self.clock()
            if now < next_try:
                raise type(error)(f"{error} (retrying in {math.ceil(next_try - now)} s)")
        try:
            result = await self.inner.run(host, command)
        except TransportError as exc:
            failures += 1
            delay = min(self.max_s, self.base_s * 2 ** (failures - 1))
            self._failed[host] = (failures, self.clock() + delay, exc)
            raise
        self._failed.pop(host, None)
        return result

    async def close(self) -> None:
        await self.inner.close()


async def watch(hosts: Sequence[Host], transport: Transport, options: SweepOptions, *, every_s: float,
                count: int, on_refresh: Callable[[int, SweepReport, Changes], None],
                plans: Mapping[str, LogPlan] | None = None) -> SweepReport | None:
    """Refresh ``count`` times (0: until cancelled), ``every_s`` apart; the transport is closed at the end.

    ``plans``: each host's log plan (as for :func:`gpudiag.runner.sweep`), built here once when not given:
    every refresh scans the same logs."""
    backoff = BackoffTransport(transport)
    previous: SweepReport | None = None
    refresh = 0
    try:
        if plans is None:
            plans = build_plans(hosts, options.logs)
        while count == 0 or refresh < count:
            started = time.monotonic()
            report = await sweep(hosts, backoff, options, plans=plans, close_transport=False)
            refresh += 1
            on_refresh(refresh, report, changes(previous, report))
            previous = report
            if count and refresh >= count:
                break
            await asyncio.sleep(max(0.0, every_s - (time.monotonic() - started)))
    finally:
        await backoff.close()
    return previous
