"""Starting a local process so that a cancellation cannot hang the loop.

CPython's asyncio (3.10 to 3.13: python/cpython#103847, #125502) waits forever when the task that creates a
subprocess is cancelled while the process's pipes are being connected: the exit it then awaits is never
reported, when a child of the process holds the pipes (the collector's shell starts one). A sweep stopped by
SIGINT as a local host (``gpudiag local``, ``localhost``) or a demo node started its collector hung there: 1 in
4 to 6 Ctrl-Cs of the demo sweep (tests/integration/test_terminal_80_views.py; 0 in 40 since), 81 of 300
local runs cancelled one to five loop turns after their start (tests/integration/test_local_transport.py).

:func:`start_process` therefore creates the process in a task of its own that nothing here cancels: the
caller's cancellation raises at once, and the process, once there, is handed to ``end`` (kill it). asyncio.run
still cancels every task left when its main coroutine returns, the creation too, which is the same hang: the
owner of the processes (the local transport's ``close``, the demo cluster's exit) awaits :func:`settle` first.

Standard library only.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable, Coroutine
from typing import TypeVar

from gpudiag.transport.cancel import hand_late

T = TypeVar("T")

SETTLE_S = 5.0  # a creation is a fork and three pipes: well under a second, unless the machine is starved

_STARTING: set[asyncio.Task[object]] = set()


async def start_process(create: Coroutine[object, object, T],
                        end: Callable[[T], Coroutine[object, object, object]]) -> T:
    """``await create`` (``loop.subprocess_exec``, ``asyncio.create_subprocess_exec``) so that a cancellation
    of the caller raises here at once and never reaches the creation; what it still creates after that is
    given to ``end`` (a coroutine: kill the process, await its exit, close its pipes), which :func:`settle`
    awaits too."""
    task = _tracked(create)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        task.add_done_callback(lambda done: hand_late(done, lambda made: _tracked(end(made))))
        raise


async def settle(timeout_s: float = SETTLE_S) -> None:
    """Wait (at most ``timeout_s``) for the creations of this loop still under way."""
    loop = asyncio.get_running_loop()
    give_up_at = loop.time() + timeout_s
    # A creation that ends adds its ``end``: asked again until none is left
    while (pending := {task for task in _STARTING if task.get_loop() is loop}) and loop.time() < give_up_at:
        await asyncio.wait(pending, timeout=give_up_at - loop.time())


def kill_group(pid: int) -> None:
    """SIGKILL the process group ``pid`` leads (a process started in a session of its own, and all it
    started: the shell, the collector, a hung nvidia-smi); nothing when it is gone already."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _tracked(coro: Coroutine[object, object, T]) -> asyncio.Task[T]:
    task = asyncio.ensure_future(coro)
    _STARTING.add(task)
    task.add_done_callback(_STARTING.discard)
    return task

