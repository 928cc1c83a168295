"""Connection pacing: how many SSH handshakes may be under way at once toward one sshd, and how fast new ones
start, so that a bastion's or a node's ``MaxStartups`` is never what fails a sweep.

OpenSSH's sshd counts a connection as a "startup" from its accept until authentication completes; past the
first number of ``MaxStartups`` (default ``10:30:100``: past 10, it drops 30 % of new connections, rising to
all of them at 100) it closes new connections before its banner. A sweep that opens hundreds at once through
one bastion, or to one address, loses hosts to that; so each handshake holds a slot of every gate it goes
through (the bastion it is tunnelled through, the address and port it reaches) from before the TCP connect
until it is logged in. An established session waiting in its sampling window holds none.

Standard library only; the transport (:mod:`gpudiag.transport.ssh`) calls :meth:`Pacer.handshake` around each
connect.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass

# Under sshd's default MaxStartups (10:30:100) with room for another client (an operator's ssh) at the same time.
DEFAULT_MAX_STARTUPS = 8
# Handshakes under way at once in the whole sweep, whatever they reach, shared by --workers processes: the connect
# timeout runs from a handshake's start, so one that waits its turn at a busy sshd or behind this machine's own
# CPU must not be on the clock. Without it, --workers 2 started handshakes twice as fast as one process, and 28 of
# 300 healthy hosts read "no SSH login within 10 s" (19.5-19.9 s: the executor's queue, then the timeout).
# An idle handshake takes ~30-100 ms: 32 at once is still hundreds of hosts a second.
DEFAULT_MAX_HANDSHAKES = 32


class PacingError(ValueError):
    """A bad ``--max-startups`` or ``--connect-rate`` value; the message is one line."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Pacing:
    """The bounds: ``max_startups`` handshakes at once per gate, ``rate_per_s`` new ones a second (None: no
    rate). Both hold for a whole sweep; :meth:`shared_by` splits them between worker processes."""

    max_startups: int = DEFAULT_MAX_STARTUPS
    rate_per_s: float | None = None
    max_handshakes: int = DEFAULT_MAX_HANDSHAKES  # at once in the whole sweep, toward every sshd together

    def __post_init__(self) -> None:
        if self.max_startups < 1:
            raise PacingError(f"--max-startups {self.max_startups}: expected 1 or more")
        if self.rate_per_s is not None and not self.rate_per_s > 0:
            raise PacingError(f"--connect-rate {self.rate_per_s:g}/s: expected more than 0 a second")

    def shared_by(self, workers: int) -> Pacing:
        """One of ``workers`` processes' part (at least one handshake at a time each)."""
        rate = None if self.rate_per_s is None else self.rate_per_s / workers
        return Pacing(max_startups=max(1, self.max_startups // workers), rate_per_s=rate,
                      max_handshakes=max(1, self.max_handshakes // workers))


def parse_rate(text: str | None) -> float | None:
    """``--connect-rate``: ``"50"``, ``"50/s"`` or ``"3000/min"`` → connections a second; None: no rate."""
    if text is None:
        return None
    number, _, unit = text.strip().partition("/")
    per = {"": 1.0, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0}.get(unit.strip().lower())
    try:
        value = float(number)
    except ValueError:
        value = float("nan")
    if per is None or not value > 0 or value == float("inf"):
        raise PacingError(f"--connect-rate {text}: expected new connections a second, e.g. 50/s (or 3000/min)")
    return value / per


class Pacer:
    """Holds the gates of one event loop's sweep (create it on that loop's side: its semaphores bind to it)."""

    def __init__(self, pacing: Pacing, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.pacing = pacing
        self._clock, self._sleep = clock, sleep  # a test's own clock: the schedule, not a wall time, is checked
        self._gates: dict[str, asyncio.Semaphore] = {}
        self._all = asyncio.Semaphore(pacing.max_handshakes)  # taken after the gates, always
        self._next_start = 0.0  # monotonic time the next handshake may start, under a rate

    @contextlib.asynccontextmanager
    async def handshake(self, gates: Iterable[str]) -> AsyncIterator[None]:
        """Hold a slot of each gate (acquired in one order, so two handshakes never wait on each other) and
        the next start of the rate, for the block: the connect, up to a logged-in session."""
        held: list[asyncio.Semaphore] = []
        try:
            for gate in sorted(set(gates)):
                semaphore = self._gates.setdefault(gate, asyncio.Semaphore(self.pacing.max_startups))
                await semaphore.acquire()
                held.append(semaphore)
            # The sweep's bound last: a handshake waiting for a busy bastion's slot does not hold one of these.
            await self._all.acquire()
            held.append(self._all)
            await self._rate()
            yield
        finally:
            for semaphore in held:
                semaphore.release()

    async def _rate(self) -> None:
        if self.pacing.rate_per_s is None:
            return
        now = self._clock()
        start = max(now, self._next_start)
        self._next_start = start + 1.0 / self.pacing.rate_per_s
        if start > now:
            await self._sleep(start - now)
