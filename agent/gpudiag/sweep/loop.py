"""The event loop a sweep runs on, and the signals that stop it: one place for the CLI and the ``--workers``
processes.

:func:`run` runs a coroutine on asyncio or uvloop (uvloop falls back to asyncio, saying so through ``note``,
when not installed). :func:`until_signal` runs a sweep until the first SIGINT or SIGTERM sets its ``stop``
event (the sweep cancels what is in flight and reports what finished); what a second signal does is the
caller's: the CLI exits at once with no report, a worker leaves it to its parent.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Coroutine
from typing import TypeVar

from gpudiag.model.choices import EventLoop

T = TypeVar("T")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def run(coro: Coroutine[object, object, T], loop: EventLoop = EventLoop.ASYNCIO,
        note: Callable[[str], None] | None = None) -> T:
    """Run ``coro`` on ``loop``; uvloop, when not installed, falls back to asyncio (``note`` says so)."""
    if loop is EventLoop.UVLOOP:
        try:
            import uvloop
        except ImportError:
            if note is not None:
                note("uvloop is not installed; using asyncio")
        else:
            chosen: asyncio.AbstractEventLoop = uvloop.new_event_loop()
            try:
                asyncio.set_event_loop(chosen)
                return chosen.run_until_complete(coro)
            finally:
                asyncio.set_event_loop(None)
                chosen.close()
    return asyncio.run(coro)


async def until_signal(start: Callable[[asyncio.Event], Coroutine[object, object, T]], stopped_by: list[str], *,
                       say: Callable[[str], None] | None = None,
                       again: Callable[[int], None] | None = None) -> T:
    """Run ``start(stop)``; the first SIGINT or SIGTERM sets ``stop`` and puts its name in ``stopped_by``
    (``say`` is told); a later one calls ``again(signum)`` (None: ignored), also while the report of what
    finished is written after ``start`` returned. Where the loop cannot watch signals (not the main thread),
    it runs as is."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        if stop.is_set():
            if again is not None:
                again(signum)
            return
        stopped_by.append(signal.Signals(signum).name)
        if say is not None:
            say(f"{stopped_by[0]}: stopping; reporting what finished (again: exit now)")  # fits 80 columns
        stop.set()

    watched = []
    try:
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, on_signal, signum)
            watched.append(signum)
    except (ValueError, RuntimeError, NotImplementedError):  # not the main thread, or no signals here
        pass
    def later(signum: int, _frame: object) -> None:
        if again is not None:
            again(signum)

    try:
        return await start(stop)
    finally:
        for signum in watched:
            loop.remove_signal_handler(signum)
            if stop.is_set() and again is not None:
                signal.signal(signum, later)
