"""Carrying out a prepared run: the event loop (``--event-loop``), the signals that stop a sweep, and the one
executor, in this process or in ``--workers`` processes, whose host reports become one report
(:func:`gpudiag.sweep.assemble.assemble_report`). ``watch`` and the exporter keep their connections through
:func:`watch` and :func:`export`. Whatever the hosts' source (an inventory, Slurm, the demo cluster), they go
through here the same way.

What the terminal shows while a run goes (lines, the live progress, what a second signal does) is the
caller's: a :class:`Display`. Nothing here prints.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from gpudiag.model.choices import EventLoop

if TYPE_CHECKING:
    from gpudiag.model import SweepReport
    from gpudiag.model.request import SweepRequest
    from gpudiag.run.request import PreparedSweep
    from gpudiag.sweep.runner import SweepObserver
    from gpudiag.sweep.watch import Changes

T = TypeVar("T")

# The global --event-loop option, set once per invocation (the CLI's callback) before any run.
_event_loop = [EventLoop.ASYNCIO]


def use_event_loop(loop: EventLoop) -> None:
    """Run every later :func:`run_async` on ``loop``."""
    _event_loop[0] = loop


@dataclass(frozen=True, slots=True, kw_only=True)
class Display:
    """What shows a run while it goes: ``say`` a line for the operator, ``observer`` told as each host starts
    and finishes (the live progress), ``again`` called with a second SIGINT/SIGTERM (None: ignored)."""

    say: Callable[[str], None]
    observer: SweepObserver | None = None
    again: Callable[[int], None] | None = None


def run_async(coro: Coroutine[object, object, T], say: Callable[[str], None] | None = None) -> T:
    """Run ``coro`` on the chosen event loop (:func:`gpudiag.sweep.loop.run`; ``say``: uvloop missing).
    Interrupted before it started (a Ctrl-C in the import below, or before the loop ran it), it is closed: no
    "never awaited" warning."""
    try:
        from gpudiag.sweep.loop import run

        return run(coro, _event_loop[0], note=say)
    except BaseException:
        coro.close()  # a no-op once it ran
        raise


def executor(request: SweepRequest, prepared: PreparedSweep, stop: asyncio.Event,
             display: Display) -> Coroutine[object, object, SweepReport]:
    """The one executor: ``prepared``'s hosts swept in this process, or in ``--workers`` processes merged into
    one report (the hosts' order kept either way; the checks across hosts judged unless the run sweeps a part
    of them). ``stop``: set, no host starts any more and the report holds what finished."""
    from gpudiag.sweep.runner import sweep
    from gpudiag.sweep.workers import resolve_workers, sweep_in_workers
    from gpudiag.transport.build import open_transport

    workers = resolve_workers(request.workers, len(prepared.hosts))
    fleet = not request.hosts.partial  # a part of the hosts sees its groups in part: no fleet verdict
    if workers > 1:
        return sweep_in_workers(prepared.hosts, prepared.options, prepared.plans, request.ssh, workers, stop=stop,
                                observer=display.observer, on_note=display.say, event_loop=_event_loop[0],
                                fleet=fleet)
    return sweep(prepared.hosts, open_transport(prepared.ssh), prepared.options, plans=prepared.plans, stop=stop,
                 on_note=display.say, observer=display.observer, fleet=fleet)


def sweep(request: SweepRequest, prepared: PreparedSweep, display: Display) -> SweepReport:
    """Sweep ``prepared``'s hosts as ``request`` asks, until done or the first SIGINT/SIGTERM (the report then
    holds what finished, the rest ``cancelled``, and says which signal). A lowered window (the open-file limit
    cannot hold the fan-out) is said once, through ``display``, before any connection."""
    from gpudiag.sweep.loop import until_signal

    stopped_by: list[str] = []
    report = run_async(until_signal(lambda stop: executor(request, prepared, stop, display), stopped_by,
                                    say=display.say, again=display.again), display.say)
    if prepared.report_notes:  # what the report says once (Slurm's GPU allocations not read)
        report = dataclasses.replace(report, notes=(*report.notes, *prepared.report_notes))
    return dataclasses.replace(report, stopped_by=stopped_by[0]) if stopped_by else report


def watch(prepared: PreparedSweep, *, every_s: float, count: int,
          on_refresh: Callable[[int, SweepReport, Changes], None],
          say: Callable[[str], None]) -> SweepReport | None:
    """Keep one connection (and one collector) per host and refresh every ``every_s`` seconds, ``count`` times
    (0: until Ctrl-C); the last report."""
    from gpudiag.sweep.watch import watch as keep_watching
    from gpudiag.transport.build import open_transport

    return run_async(keep_watching(prepared.hosts, open_transport(prepared.ssh), prepared.options,
                                   plans=prepared.plans, every_s=every_s, count=count, on_refresh=on_refresh), say)


def export(prepared: PreparedSweep, *, listen: str, every_s: float, announce: Callable[[str], None],
           say: Callable[[str], None]) -> SweepReport | None:
    """Keep one connection per host and serve the fleet's ``/metrics`` on ``listen`` until Ctrl-C
    (:func:`gpudiag.audit.exporter.run_exporter`; ``announce``: where it listens)."""
    from gpudiag.audit.exporter import run_exporter
    from gpudiag.transport.build import open_transport

    return run_async(run_exporter(prepared.hosts, open_transport(prepared.ssh), prepared.options,
                                  plans=prepared.plans, listen=listen, every_s=every_s, announce=announce), say)
