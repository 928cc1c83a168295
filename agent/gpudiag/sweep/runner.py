"""Fan-out: every host through one transport, a sliding window of concurrent hosts, one deadline each.

:func:`sweep_host` is the one place where a host's failure becomes its status: nothing but
cancellation escapes it, so one bad host never takes the sweep down.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from gpudiag.checks import CheckSettings, evaluate
from gpudiag.collect.parse import ProbeFormatError, parse_probe_output
from gpudiag.collect.remote import TIMEOUT_EXIT_STATUSES, collector_call
from gpudiag.logs.plan import NO_LOGS, LogPlan, build_plans
from gpudiag.model import Host, HostReport, HostStatus, NodeReadings, RemoteResult, SweepReport, UnreachableReason
from gpudiag.model.active import ACTIVE_BUDGET_S
from gpudiag.model.request import SweepOptions
from gpudiag.sweep.assemble import assemble_report
from gpudiag.transport.base import OutOfFiles, RemoteCommand, Transport, TransportError
from gpudiag.transport.limits import window_for

# Client-side grace past the remote deadline, so the node's own `timeout` answers first.
DEADLINE_GRACE_S = 5.0
# This machine out of open files: the host is tried again after this (doubling), until its deadline.
OUT_OF_FILES_RETRY_S = 0.05



class SweepObserver(Protocol):
    """Told as hosts start and finish (the CLI's live progress; ``--workers`` forwards these across processes).
    Called on the event loop: an observer must not block."""

    def host_started(self, host: Host) -> None: ...

    def host_finished(self, report: HostReport) -> None: ...


def _last_line(data: bytes) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text.splitlines()[-1][:200] if text else ""


def _status_of(readings: NodeReadings) -> HostStatus:
    incomplete = readings.output_truncated or readings.problems or any(g.lost for g in readings.gpus)
    return HostStatus.PARTIAL if incomplete else HostStatus.OK


def interpret(host: Host, result: RemoteResult, options: SweepOptions,
              plan: LogPlan | None = None) -> tuple[HostStatus, str | None, NodeReadings | None]:
    """A finished remote run → (status, error sentence, readings); ``plan``: the host's logs, to read them."""
    if result.exit_status in TIMEOUT_EXIT_STATUSES:
        return (HostStatus.TIMEOUT, f"the collector did not finish within {options.deadline_s:.0f} s "
                f"(nvidia-smi may be hung); the remote process was ended", None)
    try:
        readings = parse_probe_output(result.stdout, output_truncated=result.stdout_truncated, log_plan=plan)
    except ProbeFormatError as exc:
        if result.stdout_truncated:
            why = f"the node's output passed the {options.stdout_limit_bytes} byte bound and was cut"
        else:
            why = f"{exc}; exit {result.exit_status}"
            if _last_line(result.stderr):
                why += f", stderr: {_last_line(result.stderr)}"
        return HostStatus.ERROR, why, None
    return _status_of(readings), None, readings


def _save_raw(folder: Path, host: str, stdout: bytes) -> None:
    """Write a host's raw output; the name is made safe for a file (a host name may hold '/' or '..')."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in host).lstrip(".") or "host"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{safe}.json").write_bytes(stdout)


def collector_command(options: SweepOptions, plan: LogPlan = NO_LOGS) -> RemoteCommand:
    """The command hosts with log plan ``plan`` run, built once per distinct plan in a sweep (it carries the
    collector's source, and the logs to scan as data)."""
    call = collector_call(samples=options.samples, interval_s=options.interval_s, deadline_s=options.deadline_s,
                          source=options.source, logs=plan.node_config(), context=options.context,
                          gpus=options.gpus, stream=options.stream, idle_s=options.idle_s,
                          discover_logs=plan.discover_config(),
                          topology_if={"busy_pct": options.settings.busy_utilization_pct,
                                       "low_power_pct": options.settings.low_power_pct},
                          active_budget_s=ACTIVE_BUDGET_S if options.active else None)
    return RemoteCommand(command=call.command, stdin=call.stdin, deadline_s=options.deadline_s + DEADLINE_GRACE_S,
                         stdout_limit_bytes=options.stdout_limit_bytes, stream=options.stream,
                         ends_with_stdin=call.ends_with_stdin, kept_stdin=call.kept_stdin)


async def sweep_host(transport: Transport, host: Host, options: SweepOptions, *, plan: LogPlan,
                     command: RemoteCommand | None = None) -> HostReport:
    """Collect one host and judge it; every failure becomes this host's status, never an exception.

    ``plan`` is the host's log plan, built by the caller (once per sweep: :func:`sweep`), so a broken log
    configuration has already failed before anything connects; ``command``: the one its plan runs."""
    started = time.monotonic()
    command = command or collector_command(options, plan)
    readings: NodeReadings | None = None
    reason: UnreachableReason | None = None
    via: str | None = None
    try:
        result = await _run(transport, host, command, started + command.deadline_s)
        if options.raw_dir is not None:
            _save_raw(options.raw_dir, host.name, result.stdout)
        status, error, readings = interpret(host, result, options, plan)
        via = result.via
    except TransportError as exc:
        status, error = exc.status, str(exc)
        reason = exc.reason if status is HostStatus.UNREACHABLE else None
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - the one place a host's failure becomes data
        status, error = HostStatus.ERROR, f"unexpected {type(exc).__name__}: {exc}"
    findings = evaluate(host.name, status, error, readings, options.settings, plan, unreachable_reason=reason)
    return HostReport(host=host.name, address=host.address, status=status, error=error, readings=readings,
                      findings=findings, duration_s=round(time.monotonic() - started, 3), unreachable_reason=reason,
                      read_via=via)


async def _run(transport: Transport, host: Host, command: RemoteCommand, give_up_at: float) -> RemoteResult:
    """``transport.run``, tried again while this machine is out of open files (another host in flight lets its
    connection go soon), until ``give_up_at``: the controller's limit is never the host's failure."""
    wait_s = OUT_OF_FILES_RETRY_S
    while True:
        try:
            return await transport.run(host, command)
        except OutOfFiles:
            if time.monotonic() + wait_s >= give_up_at:
                raise
        await asyncio.sleep(wait_s)
        wait_s = min(wait_s * 2, 1.0)


async def sweep(hosts: Sequence[Host], transport: Transport, options: SweepOptions, *,
                plans: Mapping[str, LogPlan] | None = None, close_transport: bool = True,
                on_note: Callable[[str], None] | None = None, stop: asyncio.Event | None = None,
                observer: SweepObserver | None = None, fleet: bool = True) -> SweepReport:
    """Sweep ``hosts`` with at most ``options.concurrency`` in flight; reports keep the hosts' order.

    Fewer are in flight when this process's open-file limit cannot fit that many
    (:func:`gpudiag.transport.limits.window_for`): ``on_note`` is then given one line that says so, for the
    operator (the CLI prints it on stderr).

    ``plans``: each host's log plan by host name, as :func:`gpudiag.logs.build_plans` made them (the CLI
    builds them once, before it connects; watch once for all its refreshes); built here from
    ``options.logs`` when not given. ``close_transport=False`` leaves its connections open for the next
    sweep (watch mode).

    ``stop`` set (the CLI sets it on SIGINT/SIGTERM): no host starts any more, the hosts in flight are
    cancelled (their channels close, which ends the collector on the node: :mod:`gpudiag.collect.remote`), and the
    report holds the hosts that finished, the rest ``cancelled``. ``observer`` is told as each host starts
    (holds a slot of the window) and finishes. ``fleet``: add the checks across hosts (DRIVER_DRIFT within each
    host's groups) once all are in; False for a worker's share of a larger sweep (the parent adds them)."""
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    started = time.monotonic()
    in_flight, note = window_for(max(1, min(options.concurrency, len(hosts))))
    if note is not None and on_note is not None:
        on_note(note)
    window = asyncio.Semaphore(in_flight)
    # Without plans, a broken log configuration fails here, before any connection.
    by_host = plans if plans is not None else build_plans(hosts, options.logs)
    # One command per distinct log configuration, not per host; a plan that many hosts share (the Planner's
    # for hosts without logs of their own) is keyed once (the key is the plan as JSON: 0.07 ms a time).
    commands: dict[str, RemoteCommand] = {}
    of_plan: dict[int, RemoteCommand] = {}
    for plan in by_host.values():
        if id(plan) not in of_plan:
            key = plan.key
            if key not in commands:
                commands[key] = collector_command(options, plan)
            of_plan[id(plan)] = commands[key]

    async def one(host: Host) -> HostReport:
        plan = by_host[host.name]
        async with window:
            if observer is not None:
                observer.host_started(host)
            report = await sweep_host(transport, host, options, plan=plan, command=of_plan[id(plan)])
        if observer is not None:
            observer.host_finished(report)
        return report

    tasks = [asyncio.ensure_future(one(h)) for h in hosts]
    try:
        await _until_done_or_stopped(tasks, stop)
    finally:
        for task in tasks:  # stopped, or this sweep itself cancelled: close every channel on the way out
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        if close_transport:
            await transport.close()
    stopped = stop is not None and stop.is_set()
    if not stopped and any(task.cancelled() for task in tasks):
        raise asyncio.CancelledError  # not stopped by the caller: a cancellation is never swallowed
    reports = tuple(cancelled_report(host) if task.cancelled() else task.result()
                    for host, task in zip(hosts, tasks, strict=True))
    return assemble_report(reports, started_at=started_at, duration_s=round(time.monotonic() - started, 3),
                           settings=options.settings, groups=host_groups(hosts) if fleet else None, options=options)


def host_groups(hosts: Sequence[Host]) -> dict[str, tuple[str, ...]]:
    """host -> its groups (inventory groups, Slurm partitions, ``job N``): what the fleet checks compare within."""
    return {host.name: host.groups for host in hosts}


async def _until_done_or_stopped(tasks: Sequence[asyncio.Future[HostReport]], stop: asyncio.Event | None) -> None:
    """Wait for every task, or until ``stop`` is set."""
    if not tasks:
        return
    if stop is None:
        await asyncio.wait(tasks)
        return
    stopped: asyncio.Future[object] = asyncio.ensure_future(stop.wait())
    everything: asyncio.Future[Any] = asyncio.gather(*tasks, return_exceptions=True)
    try:
        await asyncio.wait([everything, stopped], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()


def cancelled_report(host: Host) -> HostReport:
    """The row of a host the sweep was stopped before it answered (its connection, if any, was closed)."""
    error = "the sweep was interrupted before this host answered"
    return HostReport(host=host.name, address=host.address, status=HostStatus.CANCELLED, error=error,
                      findings=evaluate(host.name, HostStatus.CANCELLED, error, None, CheckSettings()))
