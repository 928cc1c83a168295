"""A cancellation that is never lost to ``asyncio.wait_for``.

On Python 3.10 and 3.11, ``asyncio.wait_for`` returns the result when it is cancelled in the moment after its
awaitable completed (the cancellation is swallowed: bpo-42130, fixed in 3.12 where it is built on
``asyncio.timeout``). asyncssh's ``connect`` is such a ``wait_for`` (its connect timeout): a sweep stopped by
SIGINT as a connection completed got that connection, and its host ran the collector to the end (8 of 21 runs
with a signal 1.2-1.8 s in took 14-19.8 s to end). :func:`honour_cancel` runs the awaitable as a task of its
own and awaits it through a shield, so the caller is cancelled whatever that task does; what the task still
returns after that (a connection) is handed to ``discard`` (closed).

Standard library only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def honour_cancel(awaitable: Awaitable[T], discard: Callable[[T], object]) -> T:
    """``await awaitable``, but a cancellation of the caller always raises here at once; should ``awaitable``
    still produce a value after it, ``discard(value)`` is called (close the connection nobody will use)."""
    task = asyncio.ensure_future(awaitable)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        task.cancel()
        task.add_done_callback(lambda done: hand_late(done, discard))
        raise


def hand_late(done: asyncio.Future[T], discard: Callable[[T], object]) -> None:
    """Give what ``done`` still produced after its caller was cancelled to ``discard``; nothing when it was
    cancelled or failed."""
    if done.cancelled():
        return
    if done.exception() is None:  # retrieved either way: no "exception was never retrieved" in the log
        discard(done.result())
