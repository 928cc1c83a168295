"""Watch mode: one connection per host kept open, a refresh every few seconds, findings as they appear and
clear, hosts that drop and come back (reconnected with exponential backoff).

A refresh reuses the connections (the transport keeps them), so it costs one channel per host instead of
a TCP connect, a key exchange and a login: a fraction of a fresh sweep.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from gpudiag.logs.plan import LogPlan, build_plans
from gpudiag.model import Finding, Host, RemoteResult, SweepReport
from gpudiag.model.request import SweepOptions
from gpudiag.sweep.runner import sweep
from gpudiag.transport.base import RemoteCommand, Transport, TransportError

BACKOFF_BASE_S = 2.0
BACKOFF_MAX_S = 60.0
BACKOFF_REFRESHES = 4  # the longest wait between two tries of a dropped host, in refresh intervals


@dataclass(frozen=True, slots=True, kw_only=True)
class Changes:
    """What changed since the previous refresh: findings that appeared and findings that cleared."""

    appeared: tuple[Finding, ...] = ()
    cleared: tuple[Finding, ...] = ()


def _key(f: Finding) -> tuple[str, int | None, str]:
    return (f.host, f.gpu, f.code)


def changes(previous: SweepReport | None, current: SweepReport) -> Changes:
    """Findings (by host, GPU and code) new in ``current`` and gone since ``previous``.

    A host that did not answer this time (unreachable, timed out) says nothing about its GPUs: their
    findings are not cleared, only the host's own failure appears (see :func:`carry`)."""
    before = {_key(f): f for f in previous.findings} if previous else {}
    now = {_key(f): f for f in current.findings}
    silent = {h.host for h in current.hosts if not h.status.answered}
    return Changes(appeared=tuple(f for k, f in now.items() if k not in before),
                   cleared=tuple(f for k, f in before.items() if k not in now and f.host not in silent))


def carry(previous: SweepReport | None, current: SweepReport) -> SweepReport:
    """What the next refresh is compared with: ``current``, where each host that did not answer keeps the
    findings it had before, so that they neither clear while it is away nor appear again when it is back."""
    if previous is None:
        return current
    earlier = {h.host: h.findings for h in previous.hosts}
    hosts = []
    for host in current.hosts:
        if not host.status.answered and earlier.get(host.host):
            have = {_key(f) for f in host.findings}
            kept = tuple(f for f in earlier[host.host] if _key(f) not in have)
            host = dataclasses.replace(host, findings=host.findings + kept)
        hosts.append(host)
    return dataclasses.replace(current, hosts=tuple(hosts))


class BackoffTransport:
    """Wraps a transport: after a host fails, it is not asked again until its backoff has passed
    (``base_s``, doubling per failure up to ``max_s``); meanwhile the last failure is reported again, at once.

    A retry is awaited at most ``retry_wait_s`` (a dead host's connect lasts its whole connect timeout): past
    that the last failure is reported again and the attempt goes on in the background, its outcome taken by
    a later call, so one dead host never stretches a refresh."""

    def __init__(self, inner: Transport, *, base_s: float = BACKOFF_BASE_S, max_s: float = BACKOFF_MAX_S,
                 retry_wait_s: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.inner, self.base_s, self.max_s, self.clock = inner, base_s, max_s, clock
        self.retry_wait_s = retry_wait_s
        self._failed: dict[Host, tuple[int, float, TransportError]] = {}
        self._retries: dict[Host, asyncio.Future[RemoteResult]] = {}

    async def run(self, host: Host, command: RemoteCommand) -> RemoteResult:
        if host not in self._failed:
            return await self._outcome(host, self.inner.run(host, command))
        failures, next_try, error = self._failed[host]
        retry = self._retries.get(host)
        if retry is None:
            now = self.clock()
            if now < next_try:
                raise type(error)(f"{error} (retrying in {math.ceil(next_try - now)} s)", reason=error.reason)
            retry = self._retries[host] = asyncio.ensure_future(self.inner.run(host, command))
        # Not cancelled when this call is (asyncio.wait): the attempt outlives a refresh that gave up on it.
        await asyncio.wait({retry}, timeout=self.retry_wait_s)
        if not retry.done():
            raise type(error)(f"{error} (retrying now)", reason=error.reason)
        del self._retries[host]
        return await self._outcome(host, retry)

    async def _outcome(self, host: Host, attempt: Awaitable[RemoteResult]) -> RemoteResult:
        try:
            result = await attempt
        except TransportError as exc:
            failures = self._failed[host][0] + 1 if host in self._failed else 1
            delay = min(self.max_s, self.base_s * 2 ** (failures - 1))
            self._failed[host] = (failures, self.clock() + delay, exc)
            raise
        self._failed.pop(host, None)
        return result

    async def close(self) -> None:
        for retry in self._retries.values():
            retry.cancel()
        if self._retries:
            await asyncio.wait(self._retries.values())
        self._retries.clear()
        await self.inner.close()


def watch_backoff(inner: Transport, every_s: float, *,
                  clock: Callable[[], float] = time.monotonic) -> BackoffTransport:
    """The backoff watch puts around its transport: a dropped host is tried again at least every
    ``BACKOFF_REFRESHES`` refresh intervals (and at most a minute apart), so it is back within one such step
    of its return, not up to a minute later; a retry holds a refresh for at most one interval."""
    return BackoffTransport(inner, max_s=min(BACKOFF_MAX_S, max(BACKOFF_BASE_S, BACKOFF_REFRESHES * every_s)),
                            retry_wait_s=every_s, clock=clock)


async def watch(hosts: Sequence[Host], transport: Transport, options: SweepOptions, *, every_s: float,
                count: int, on_refresh: Callable[[int, SweepReport, Changes], None],
                plans: Mapping[str, LogPlan] | None = None) -> SweepReport | None:
    """Refresh ``count`` times (0: until cancelled), ``every_s`` apart; the transport is closed at the end.

    ``plans``: each host's log plan (as for :func:`gpudiag.sweep.runner.sweep`), built here once when not given:
    every refresh scans the same logs."""
    backoff = watch_backoff(transport, every_s)
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
            previous = carry(previous, report)
            if count and refresh >= count:
                break
            await asyncio.sleep(max(0.0, every_s - (time.monotonic() - started)))
    finally:
        await backoff.close()
    return previous
