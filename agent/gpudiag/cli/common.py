"""What the command modules (:mod:`gpudiag.cli.commands`) share: the one-line failure (exit
:data:`~gpudiag.model.report.EXIT_CANNOT_RUN`), the event loop, and carrying out a
:class:`~gpudiag.cli.request.SweepRequest`.

Every command module imports this one and it imports none, so the command layer has no import cycle.
Like them it imports the layers below only where they are used, so that ``gpudiag --help`` starts fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import sys
from collections.abc import Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from gpudiag.model.choices import EventLoop, TextFormat
from gpudiag.model.report import EXIT_CANNOT_RUN
from gpudiag.report import OutputFormat

if TYPE_CHECKING:
    from gpudiag.cli.request import HostSelection, OutputRequest, PreparedSweep, SelectedHosts, SweepRequest
    from gpudiag.demo.demo import DemoNode
    from gpudiag.logs.plan import Planner
    from gpudiag.model import SweepReport
    from gpudiag.sweep.runner import SweepObserver, SweepOptions

    DemoPlan = tuple[SweepOptions, Planner, tuple[DemoNode, ...]]  # prepare_demo's: the demo's options, planner, nodes

T = TypeVar("T")

PIPE_WIDTH = 160  # a report to a pipe or a file: wide enough that a table row is one line for grep
MIN_WIDTH = 40  # narrower than this, no layout reads well: the lines wrap in the terminal instead


# The global --event-loop option, set once per invocation by the app's callback before any command runs.
_event_loop = [EventLoop.ASYNCIO]


def use_event_loop(loop: EventLoop) -> None:
    """Run every later :func:`run_async` on ``loop``."""
    _event_loop[0] = loop


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the chosen event loop (:func:`gpudiag.sweep.loop.run`). Interrupted before it started (a
    Ctrl-C in the import below, or before the loop ran it), it is closed: no "never awaited" warning."""
    try:
        from gpudiag.sweep.loop import run

        return run(coro, _event_loop[0], note=_say)
    except BaseException:
        coro.close()  # a no-op once it ran
        raise


def _say(line: str) -> None:
    typer.echo(f"gpudiag: {line}", err=True)


async def until_signal(start: Callable[[asyncio.Event], Coroutine[Any, Any, T]], stopped_by: list[str], *,
                       say: Callable[[str], None] = _say) -> T:
    """:func:`gpudiag.sweep.loop.until_signal` as a command runs it: the first SIGINT or SIGTERM stops the sweep
    (``say`` prints why, through the progress display while one is shown), a second one exits at once with no
    report."""
    from gpudiag.sweep import loop

    return await loop.until_signal(start, stopped_by, say=say, again=_exit_at_once)


_report_out = [False]  # the report is printed whole: a later signal must not say "without a report"


def report_printed() -> None:
    """Say that the report is out: a second signal from now on exits at once without claiming there was none."""
    _report_out[0] = True


def _exit_at_once(signum: int) -> None:
    """The second signal: exit now, with no report (the nodes end their collectors when the connections drop).
    On a terminal the progress display, when one is shown, is erased first. Once the report is printed
    whole (:func:`report_printed`), the exit says only that (what is left: the notifications)."""
    progress = sys.modules.get("gpudiag.cli.progress")  # not imported: no display was ever shown
    clear = progress.erase_sequence().encode() if progress is not None and os.isatty(2) else b""
    said = b"the report is out; exiting now" if _report_out[0] else b"exiting without a report"
    os.write(2, clear + b"gpudiag: interrupted again; " + said + b"\n")
    os._exit(128 + signum)


_terminated = [False]


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """For the commands that run until stopped (watch, exporter): SIGTERM (systemd's stop) ends them as Ctrl-C
    does, with their "stopped" line, instead of killing them silently; :func:`stop_code` then says 143."""
    import signal

    def on_term(_signum: int, _frame: object) -> None:
        _terminated[0] = True
        raise KeyboardInterrupt

    if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        yield
        return
    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def stop_code() -> int:
    """The exit code of a command stopped by a signal: 143 after SIGTERM, else 130 (SIGINT)."""
    return 143 if _terminated[0] else 130


def fail(message: str) -> typer.Exit:
    """Print ``message`` as gpudiag's one line on stderr; the exit to raise (code 3: cannot run)."""
    typer.echo(f"gpudiag: {message}", err=True)
    return typer.Exit(EXIT_CANNOT_RUN)


def configuration_errors() -> tuple[type[Exception], ...]:
    """The exceptions that mean "the configuration is wrong" (one line, exit 3), imported on use."""
    from gpudiag.sources.inventory import InventoryError
    from gpudiag.transport.base import KeyLoadError

    # ValueError covers the rest: RequestError, SettingsError, ShardError, LogConfigError, PackError.
    return InventoryError, KeyLoadError, ValueError


def selected_hosts(selection: HostSelection) -> SelectedHosts:
    """:func:`gpudiag.cli.request.select_hosts`, saying on stderr what an inventory not in gpudiag's format (an
    Ansible one) was read as."""
    from gpudiag.cli.request import select_hosts

    selected = select_hosts(selection)
    if selected.read_as:
        typer.echo(f"gpudiag: {selected.read_as}", err=True)
    return selected


def sweep_report(request: SweepRequest, *, no_hosts: str = "no hosts given") -> SweepReport:
    """Carry out ``request``: the demo cluster, or the hosts it selects (none: :class:`RequestError` with
    ``no_hosts``, unless a shard came out empty). Configuration errors raise before any connection."""
    from gpudiag.cli.request import RequestError, prepare_demo

    if request.demo:
        from gpudiag.demo.demo import sweep_demo

        options, planner, nodes = prepare_demo(request)
        return _until_stopped(request.output, len(nodes), lambda stop, observer, _say: sweep_demo(
            options, planner=planner, nodes=nodes, connect_timeout_s=request.ssh.connect_timeout_s, stop=stop,
            observer=observer, fleet=not request.hosts.partial))
    selected = selected_hosts(request.hosts)
    if not selected.hosts and request.hosts.shard is None:
        raise RequestError(no_hosts)
    return sweep_selected(request, selected)


def sweep_selected(request: SweepRequest, selected: SelectedHosts) -> SweepReport:
    """Sweep the ``selected`` hosts as ``request`` asks (its own host selection is not read again): in this
    process, or in ``--workers`` processes merged into one report; the live progress follows either."""
    from gpudiag.cli.request import prepare
    from gpudiag.sweep.runner import sweep
    from gpudiag.sweep.workers import resolve_workers, sweep_in_workers
    from gpudiag.transport.build import open_transport

    prepared = prepare(request, selected)
    workers = resolve_workers(request.workers, len(prepared.hosts))
    fleet = not request.hosts.partial  # a part of the hosts sees its groups in part: no fleet verdict

    def start(stop: asyncio.Event, observer: SweepObserver | None,
              say: Callable[[str], None]) -> Coroutine[Any, Any, SweepReport]:
        if workers > 1:
            return sweep_in_workers(prepared.hosts, prepared.options, prepared.plans, request.ssh, workers,
                                    stop=stop, observer=observer, on_note=say,
                                    event_loop=_event_loop[0], fleet=fleet)
        return sweep(prepared.hosts, open_transport(prepared.ssh), prepared.options, plans=prepared.plans, stop=stop,
                     on_note=say, observer=observer, fleet=fleet)

    # A lowered window (the open-file limit cannot hold the fan-out) is said once, before any connection.
    # SIGINT/SIGTERM stop it: the report then holds what finished, the rest cancelled, and says which signal.
    return _until_stopped(request.output, len(prepared.hosts), start)


def _until_stopped(output: OutputRequest, total: int | None, start: Callable[
        [asyncio.Event, SweepObserver | None, Callable[[str], None]], Coroutine[Any, Any, SweepReport]]) -> SweepReport:
    """Run the sweep ``start(stop, observer, say)`` until it ends or SIGINT/SIGTERM stops it (the report then
    says which signal), with the live progress on stderr when ``output`` asks for it: erased before the
    report is printed, on Ctrl-C too. ``say`` prints a line on stderr above the progress."""
    stopped_by: list[str] = []
    if not output.progress:
        report = run_async(until_signal(lambda stop: start(stop, None, _say), stopped_by))
    else:
        from gpudiag.cli.progress import SweepProgress

        with SweepProgress.on_stderr(total) as progress:
            def say(line: str) -> None:
                progress.say(f"gpudiag: {line}")

            report = run_async(until_signal(lambda stop: start(stop, progress, say), stopped_by, say=say))
    return dataclasses.replace(report, stopped_by=stopped_by[0]) if stopped_by else report


def terminal_width() -> int:
    """The report's width: on a terminal, ``COLUMNS`` when set (as ``ls`` and rich read it), else the
    terminal's own width; to a pipe or a file :data:`PIPE_WIDTH` whatever ``COLUMNS`` says (a stray one in
    the environment would cut the lines that scripts and grep read)."""
    if not sys.stdout.isatty():
        return PIPE_WIDTH
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return max(int(columns), MIN_WIDTH)
    with contextlib.suppress(OSError):
        return max(os.get_terminal_size(sys.stdout.fileno()).columns, MIN_WIDTH)
    return PIPE_WIDTH


def output_request(fmt: OutputFormat, *, quiet: bool = False, samples_detail: bool = False, fold: bool = True,
                   progress: bool | None = None) -> OutputRequest:
    """The :class:`OutputRequest` for these flags on this terminal: its width, and progress (``--progress`` /
    ``--no-progress``, else shown when stdout and stderr are both a terminal and not ``--quiet``: never on
    a pipe, where it would garble ``less``, nor for cron)."""
    from gpudiag.cli.request import OutputRequest

    if progress is None:
        progress = not quiet and sys.stdout.isatty() and sys.stderr.isatty()
    return OutputRequest(format=fmt, quiet=quiet, samples_detail=samples_detail, width=terminal_width(), fold=fold,
                         progress=progress)


def render_report(report: SweepReport, output: OutputRequest, *, color: bool = False, one_line: bool = False) -> str:
    """``report`` as the text ``output`` asks for: the one place the commands render a report (sweep's goes
    through the audit step, :func:`gpudiag.audit.scheduled.audit`). ``one_line``: JSON on one line (watch's JSON
    Lines; the JSON format itself indents)."""
    from gpudiag.report import ReportView, render

    return render(report, output.format, ReportView(width=output.width, color=color, fold=output.fold,
                                                    findings_only=output.quiet, samples_detail=output.samples_detail,
                                                    one_line=one_line))


def wants_json(fmt: TextFormat, deprecated_json: bool) -> bool:
    """Whether ``--format`` (or the deprecated ``--json``, saying so on stderr) asks for JSON."""
    if deprecated_json:
        typer.echo("gpudiag: --json is deprecated; use --format json", err=True)
    return deprecated_json or fmt is TextFormat.JSON


def prepare_hosts(request: SweepRequest, no_hosts: str) -> tuple[PreparedSweep | None, DemoPlan | None]:
    """For the commands that keep connections (watch, exporter): the prepared hosts, or with ``--demo`` the
    demo's options, planner and nodes (:func:`gpudiag.cli.request.prepare_demo`). No host: ``RequestError``
    with ``no_hosts``. Configuration errors raise before any connection."""
    from gpudiag.cli.request import RequestError, prepare, prepare_demo

    if request.demo:
        return None, prepare_demo(request)
    selected = selected_hosts(request.hosts)
    if not selected.hosts:
        raise RequestError(no_hosts)
    prepared = prepare(request, selected)
    for note in prepared.notes:  # the kept connections that the open-file limit does not fit
        _say(note)
    return prepared, None
