"""``--workers N``: one sweep spread over N processes of this machine, merged in memory into one report.

Each worker is a shard (:func:`gpudiag.sweep.shard.select_shard`, the stable split by host name) swept by
:func:`gpudiag.sweep.runner.sweep` on its own event loop, in a fresh interpreter: the ``spawn`` start method, so
no asyncssh connection, event loop or lock of this process is ever copied into a child (``fork`` would copy
them in whatever state they are), and it works the same on Linux and macOS. A ``multiprocessing`` process
rather than a ``gpudiag`` subprocess because the request crosses already checked, as the typed objects
(pickled): the inventory is not read again, a configuration error is said once, before any worker starts.

Each worker sends its events up one pipe as it goes (a host started, a host's report, a note, the end); the
parent calls its :class:`~gpudiag.sweep.runner.SweepObserver` with them and keeps the reports, so it builds the
report from what arrived even when a worker died. Stopping: the parent writes to each worker's control pipe
(its end closing, should the parent die, reads the same); a worker also stops on its own SIGINT/SIGTERM
(Ctrl-C reaches the whole process group, ``scancel`` every process of the step). A stopped worker reports
what finished; the rest of its hosts are ``cancelled``, as in one process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from gpudiag.model import Host, HostReport, HostStatus, SweepReport
from gpudiag.model.choices import EventLoop
from gpudiag.sweep.assemble import assemble_report
from gpudiag.sweep.loop import run, until_signal
from gpudiag.sweep.shard import select_shard

if TYPE_CHECKING:  # multiprocessing is imported where a worker starts: a sweep in one process never needs it
    import multiprocessing.context
    import multiprocessing.process
    from multiprocessing.connection import Connection

    from gpudiag.logs import LogPlan
    from gpudiag.model.request import SshRequest, SweepOptions
    from gpudiag.sweep.runner import SweepObserver

# --workers auto: one per usable core, at most this many (each is an interpreter of ~60 MiB, and past a few the
# sshd side, not this one, is what a sweep waits for), and one per this many hosts at least.
MAX_AUTO_WORKERS = 8
MIN_HOSTS_PER_WORKER = 50
MAX_WORKERS = 64


class WorkersError(ValueError):
    """A bad ``--workers`` value; the message is one line."""


def parse_workers(text: str) -> int | None:
    """``"4"`` → 4; ``"auto"`` → None (decided once the hosts are known: :func:`resolve_workers`)."""
    if text == "auto":
        return None
    if not text.isdigit() or not 1 <= int(text) <= MAX_WORKERS:
        raise WorkersError(f"--workers {text}: expected a number from 1 to {MAX_WORKERS}, or auto")
    return int(text)


def resolve_workers(wanted: int | None, host_count: int, cpu_count: int | None = None) -> int:
    """How many workers sweep ``host_count`` hosts: ``wanted`` (None: auto), never more than hosts."""
    if wanted is None:
        cores = cpu_count if cpu_count is not None else usable_cores()
        wanted = min(cores, MAX_AUTO_WORKERS, host_count // MIN_HOSTS_PER_WORKER)
    return max(1, min(wanted, host_count))


# The workers' split is salted: independent of a --shard split of the same hosts (which it may split again).
WORKER_SALT = "workers"


def usable_cores() -> int:
    """The cores this process may run on: a Slurm job's or a container's cpuset, not the whole machine's."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def shards(hosts: Sequence[Host], count: int) -> list[tuple[Host, ...]]:
    """The non-empty shards of ``hosts`` for ``count`` workers (each in the hosts' order)."""
    return [part for index in range(1, count + 1) if (part := select_shard(hosts, index, count, WORKER_SALT))]


def share(total: int, count: int) -> int:
    """One worker's part of a bound that holds for all of them together (the window, the handshakes)."""
    return max(1, total // count)


def in_order(hosts: Sequence[Host], finished: Mapping[str, HostReport],
             unfinished: Callable[[Host], HostReport]) -> tuple[HostReport, ...]:
    """Every host's report in the hosts' (the inventory's) order; ``unfinished(host)`` for one with none."""
    return tuple(finished[h.name] if h.name in finished else unfinished(h) for h in hosts)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Job:
    """What one worker sweeps and how: everything pickles (the SSH keys are loaded again in the worker)."""

    hosts: tuple[Host, ...]
    options: SweepOptions
    plans: Mapping[str, LogPlan]
    ssh: SshRequest
    event_loop: EventLoop


class _Forward:
    """The worker's :class:`~gpudiag.sweep.runner.SweepObserver`: every event goes up the pipe."""

    def __init__(self, events: Connection) -> None:
        self.events = events

    def host_started(self, host: Host) -> None:
        self.events.send(("started", host.name))

    def host_finished(self, report: HostReport) -> None:
        self.events.send(("finished", report))


def _worker(job: _Job, events: Connection, control: Connection) -> None:
    """A worker's process: sweep ``job``, sending events on ``events``; stop when ``control`` is readable."""
    stopped_by: list[str] = []

    async def main(stop: asyncio.Event) -> None:
        from gpudiag.sweep.runner import sweep
        from gpudiag.transport.build import open_transport, ssh_options

        loop = asyncio.get_running_loop()

        def on_control() -> None:  # "stop", or EOF: the parent is gone
            loop.remove_reader(control.fileno())
            stop.set()

        loop.add_reader(control.fileno(), on_control)
        transport = open_transport(ssh_options(job.ssh, job.hosts))
        await sweep(job.hosts, transport, job.options, plans=job.plans, stop=stop, observer=_Forward(events),
                    on_note=lambda line: events.send(("note", line)), fleet=False)

    try:
        # A signal stops this worker's sweep once; the parent decides what a second one does.
        run(until_signal(main, stopped_by), job.event_loop)  # uvloop missing: the parent said so already
        events.send(("done", stopped_by[0] if stopped_by else None))
    except BrokenPipeError:  # the parent is gone: nobody to tell
        pass
    except Exception as exc:  # noqa: BLE001 - the parent turns it into its hosts' rows
        events.send(("failed", f"{type(exc).__name__}: {exc}"))


@dataclasses.dataclass(slots=True)
class _Running:
    """The parent's side of one worker."""

    process: multiprocessing.process.BaseProcess
    events: Connection
    control: Connection
    ended: asyncio.Future[None]
    stopped_by: str | None = None
    failure: str | None = None  # why it ended without its "done"


def _start(context: multiprocessing.context.SpawnContext, job: _Job) -> tuple[
        multiprocessing.process.BaseProcess, Connection, Connection]:
    events_in, events_out = context.Pipe(duplex=False)
    control_in, control_out = context.Pipe(duplex=False)
    process = context.Process(target=_worker, args=(job, events_out, control_in), daemon=True)
    # SIGINT is ignored while the child starts (exec keeps an ignored signal ignored) so that a Ctrl-C during
    # its imports is no traceback; it installs its own handlers once its loop runs.
    main = threading.current_thread() is threading.main_thread()  # only the main thread may set handlers
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        process.start()
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)
    events_out.close()  # the child's ends: the child holds them now, and EOF means it ended
    control_in.close()
    return process, events_in, control_out


async def sweep_in_workers(hosts: Sequence[Host], options: SweepOptions, plans: Mapping[str, LogPlan],
                           ssh: SshRequest, count: int, *, stop: asyncio.Event | None = None,
                           observer: SweepObserver | None = None, on_note: Callable[[str], None] | None = None,
                           event_loop: EventLoop = EventLoop.ASYNCIO, fleet: bool = True) -> SweepReport:
    """Sweep ``hosts`` in ``count`` worker processes; one report, in the hosts' order, as
    :func:`gpudiag.sweep.runner.sweep` would
    make it. ``options.concurrency`` and the SSH pacing bounds hold for all the workers together."""
    import multiprocessing

    from gpudiag.checks import evaluate
    from gpudiag.sweep.runner import cancelled_report, host_groups
    from gpudiag.transport.build import shared_by

    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    started = time.monotonic()
    loop = asyncio.get_running_loop()
    context = multiprocessing.get_context("spawn")
    parts = shards(hosts, count)
    per_worker = dataclasses.replace(options, concurrency=share(options.concurrency, len(parts)))
    by_name = {h.name: h for h in hosts}
    finished: dict[str, HostReport] = {}
    notes: set[str] = set()
    running: list[_Running] = []

    def on_event(worker: _Running) -> None:
        try:
            while worker.events.poll():
                kind, value = worker.events.recv()
                if kind == "started" and observer is not None:
                    observer.host_started(by_name[value])
                elif kind == "finished":
                    finished[value.host] = value
                    if observer is not None:
                        observer.host_finished(value)
                elif kind == "note" and value not in notes:
                    notes.add(value)
                    if on_note is not None:
                        on_note(value)
                elif kind == "done":
                    worker.stopped_by = value
                    worker.failure = None
                elif kind == "failed":
                    worker.failure = value
        except (EOFError, OSError):
            loop.remove_reader(worker.events.fileno())
            if not worker.ended.done():
                worker.ended.set_result(None)

    try:
        for part in parts:
            job = _Job(hosts=part, options=per_worker, plans={h.name: plans[h.name] for h in part},
                       ssh=shared_by(ssh, len(parts)), event_loop=event_loop)
            process, events, control = _start(context, job)
            worker = _Running(process=process, events=events, control=control, ended=loop.create_future(),
                              failure="it ended without a report")
            running.append(worker)
            loop.add_reader(events.fileno(), on_event, worker)
        await _until_ended(running, stop)
    finally:
        for worker in running:  # this sweep cancelled (not stopped): the workers must not sweep on
            if not worker.ended.done():
                _tell_stop(worker)
                loop.remove_reader(worker.events.fileno())
            worker.process.join(timeout=5)
            worker.events.close()
            worker.control.close()
    stopped_by = next((w.stopped_by for w in running if w.stopped_by), None)
    stopped = stopped_by is not None or (stop is not None and stop.is_set())
    failures = {h.name: w.failure for w, part in zip(running, parts, strict=True) for h in part if w.failure}

    def unfinished(host: Host) -> HostReport:
        why = failures.get(host.name)
        if stopped or why is None:
            return cancelled_report(host)
        error = f"the worker process sweeping this host failed: {why}"
        return HostReport(host=host.name, address=host.address, status=HostStatus.ERROR, error=error,
                          findings=evaluate(host.name, HostStatus.ERROR, error, None, options.settings))

    # across every worker's hosts, not each share (``fleet``: as for gpudiag.sweep.runner.sweep)
    return assemble_report(in_order(hosts, finished, unfinished), started_at=started_at,
                           duration_s=round(time.monotonic() - started, 3), settings=options.settings,
                           groups=host_groups(hosts) if fleet else None, stopped_by=stopped_by, options=options,
                           hosts_judged=True)  # each worker judged its own hosts against the allocations


def _tell_stop(worker: _Running) -> None:
    try:
        worker.control.send_bytes(b"stop")
    except OSError:  # it has ended already
        pass


async def _until_ended(running: Sequence[_Running], stop: asyncio.Event | None) -> None:
    """Wait until every worker ended; on ``stop``, tell each to stop, and still wait for what they send."""
    everything: asyncio.Future[Any] = asyncio.gather(*(w.ended for w in running))
    if stop is not None:
        stopped: asyncio.Future[object] = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait([everything, stopped], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        if stop.is_set():
            for worker in running:
                _tell_stop(worker)
    await everything
