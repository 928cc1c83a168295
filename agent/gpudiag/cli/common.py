"""What the command modules (:mod:`gpudiag.cli.commands`) share: the one-line failure (exit
:data:`~gpudiag.model.report.EXIT_CANNOT_RUN`), the terminal (its width, the live progress, what a second
Ctrl-C does), and handing a :class:`~gpudiag.model.request.SweepRequest` to the run layer (:mod:`gpudiag.run`),
which carries it out.

Every command module imports this one and it imports none, so the command layer has no import cycle.
Like them it imports the layers below only where they are used, so that ``gpudiag --help`` starts fast.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import typer

from gpudiag.model.choices import EventLoop, OutputFormat, TextFormat
from gpudiag.model.report import EXIT_CANNOT_RUN

if TYPE_CHECKING:
    from gpudiag.logs.plan import Planner
    from gpudiag.model import SweepReport
    from gpudiag.model.request import HostSelection, OutputRequest, SweepRequest
    from gpudiag.run.request import PreparedSweep
    from gpudiag.sources.selected import SelectedHosts

PIPE_WIDTH = 160  # a report to a pipe or a file: wide enough that a table row is one line for grep
MIN_WIDTH = 40  # narrower than this, no layout reads well: the lines wrap in the terminal instead


def use_event_loop(loop: EventLoop) -> None:
    """Run every later run of this invocation on ``loop`` (:func:`gpudiag.run.execute.use_event_loop`)."""
    from gpudiag.run.execute import use_event_loop as use

    use(loop)


def say(line: str) -> None:
    """One line for the operator on stderr: ``gpudiag: line``."""
    typer.echo(f"gpudiag: {line}", err=True)


def _exit_at_once(signum: int) -> None:
    """The second signal: exit now, with no report (the nodes end their collectors when the connections drop).
    On a terminal the progress display, when one is shown, is erased first."""
    progress = sys.modules.get("gpudiag.cli.progress")  # not imported: no display was ever shown
    clear = progress.erase_sequence().encode() if progress is not None and os.isatty(2) else b""
    os.write(2, clear + b"gpudiag: interrupted again; exiting without a report\n")
    os._exit(128 + signum)


def fail(message: str) -> typer.Exit:
    """Print ``message`` as gpudiag's one line on stderr; the exit to raise (code 3: cannot run)."""
    typer.echo(f"gpudiag: {message}", err=True)
    return typer.Exit(EXIT_CANNOT_RUN)


def configuration_errors() -> tuple[type[Exception], ...]:
    """The exceptions that mean "the configuration is wrong" (one line, exit 3). Nothing is imported here: it
    is evaluated as an exception propagates, a Ctrl-C in the middle of an import among them, where importing
    again finds a half-made module (yaml's) and turns the interruption into a traceback. A module that was
    never imported raised none of its errors."""
    inventory = sys.modules.get("gpudiag.sources.inventory")
    found = getattr(inventory, "InventoryError", None)
    # ValueError covers the rest: KeyLoadError, RequestError, SettingsError, ShardError, LogConfigError, PackError.
    return (ValueError,) if found is None else (found, ValueError)


@contextlib.contextmanager
def selected_hosts(selection: HostSelection) -> Iterator[SelectedHosts]:
    """:func:`gpudiag.run.request.selected_hosts` (what a source started stops on leaving), saying on stderr
    what an inventory not in gpudiag's format (an Ansible one) was read as."""
    from gpudiag.run.request import selected_hosts as select

    with select(selection) as selected:
        if selected.read_as:
            typer.echo(f"gpudiag: {selected.read_as}", err=True)
        yield selected


def sweep_report(request: SweepRequest, *, no_hosts: str = "no hosts given") -> SweepReport:
    """Carry out ``request`` on the hosts it selects (:func:`sweep_hosts`): the report."""
    return sweep_hosts(request, no_hosts=no_hosts)[0]


def sweep_hosts(request: SweepRequest, *, no_hosts: str) -> tuple[SweepReport, SelectedHosts]:
    """Carry out ``request`` on the hosts it selects (none: :class:`RequestError` with ``no_hosts``, unless a
    shard came out empty): the report, and the hosts (with the Slurm nodes, when Slurm gave them).
    Configuration errors raise before any connection."""
    from gpudiag.run.request import RequestError, log_planner

    planner = log_planner(request)
    with selected_hosts(request.hosts) as selected:
        if not selected.hosts and request.hosts.shard is None:
            raise RequestError(no_hosts)
        return sweep_selected(request, selected, planner), selected


def sweep_selected(request: SweepRequest, selected: SelectedHosts, planner: Planner | None = None) -> SweepReport:
    """Sweep the ``selected`` hosts as ``request`` asks (:func:`gpudiag.run.execute.sweep`; its own host
    selection is not read again), with the live progress on stderr when ``request.output`` asks for it: erased
    before the report is printed, on Ctrl-C too. SIGINT/SIGTERM stop it: the report then holds what finished,
    the rest cancelled, and says which signal."""
    from gpudiag.run.execute import Display, sweep
    from gpudiag.run.request import prepare

    prepared = prepare(request, selected, planner)
    for note in prepared.notes:  # Slurm's GPU allocations not read, or some jobs' left out
        say(note)
    if not request.output.progress:
        return sweep(request, prepared, Display(say=say, again=_exit_at_once))
    from gpudiag.cli.progress import SweepProgress

    with SweepProgress.on_stderr(len(prepared.hosts)) as progress:
        def above(line: str) -> None:
            progress.say(f"gpudiag: {line}")

        return sweep(request, prepared, Display(say=above, observer=progress, again=_exit_at_once))


@contextlib.contextmanager
def prepared_hosts(request: SweepRequest, no_hosts: str) -> Iterator[PreparedSweep]:
    """For the commands that keep connections (watch, exporter): the prepared hosts, while the run lasts. No
    host: ``RequestError`` with ``no_hosts``. Configuration errors raise before any connection."""
    from gpudiag.run.request import RequestError, log_planner, prepare

    planner = log_planner(request)
    with selected_hosts(request.hosts) as selected:
        if not selected.hosts:
            raise RequestError(no_hosts)
        prepared = prepare(request, selected, planner)
        for note in prepared.notes:  # the kept connections that the open-file limit does not fit
            say(note)
        yield prepared


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
    from gpudiag.model.request import OutputRequest

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
