"""``gpudiag sweep``: sweep hosts once, check them, report; with the scheduled audit's last step (:func:`finish`)
and, when Slurm gave the hosts, its drain step."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer

from gpudiag.cli.common import configuration_errors, fail, sweep_hosts
from gpudiag.cli.options import command
from gpudiag.cli.params import Given
from gpudiag.report import OutputFormat

if TYPE_CHECKING:
    from gpudiag.cli.slurm import Drained
    from gpudiag.model import SweepReport
    from gpudiag.model.request import SweepRequest


@command("sweep")
def sweep(*, given: Given) -> None:
    """Sweep hosts over SSH, read their GPUs and logs, and report what is wrong."""
    from gpudiag.audit.scheduled import check_history
    from gpudiag.cli import build, slurm

    try:
        request = build.request(given)
        if request.audit is not None:
            check_history(request.audit)  # a history that cannot take the run: one line, before any connection
        # Where Slurm gave the hosts, its nodes' states are kept with them (selected.slurm_nodes).
        report, selected = sweep_hosts(request, no_hosts="no hosts to sweep: give targets, -i INVENTORY, --local, "
                                                         "--slurm-* or --demo")
    except configuration_errors() as exc:
        raise fail(str(exc)) from None
    # Slurm's drain step first (never after SIGINT/SIGTERM: that report is partial), so that the history, the
    # files and the notifications carry each node's Slurm state and the actions; then the audit step (record,
    # write, notify) prints the report (a stopped one exits 130/143).
    report = with_repeats(report, request)
    drained = None
    if selected.slurm_nodes is not None and report.stopped_by is None:
        report, drained = slurm.drain(report, request, selected.slurm_nodes)
    raise typer.Exit(finish(report, request, drained))


def with_repeats(report: SweepReport, request: SweepRequest) -> SweepReport:
    """With ``--history``: the findings of GPUs that needed the same action 3 times this week raised one step
    (:mod:`gpudiag.audit.repeats`), before the drain step and the audit see the report. A history that cannot
    be read leaves the report as it is: the audit step says why in its one line."""
    import time

    from gpudiag.audit.history import HistoryError
    from gpudiag.audit.repeats import escalate_with_history

    audit = request.audit
    if audit is None or audit.history is None or report.stopped_by is not None:
        return report
    try:
        return escalate_with_history(report, audit.history, now_s=time.time(), lock_wait_s=audit.lock_wait_s)
    except HistoryError:
        return report


def finish(report: SweepReport, request: SweepRequest, drained: Drained | None = None) -> int:
    """The end of ``sweep``: record, compare and write the files as ``request.audit`` asks, print the report
    (with the Slurm step's block and lines when ``drained``), then notify; returns the exit code."""
    from gpudiag.audit.scheduled import deliver, prepare
    from gpudiag.model.request import AuditOptions

    output = request.output
    outcome = prepare(report, output, request.audit or AuditOptions(), color=sys.stdout.isatty(),
                    extra=drained.document(request) if drained is not None else None,
                    tail=drained.tail(report, request) if drained is not None else "",
                    loud=drained is not None and bool(drained.actions))
    if outcome.stdout:
        typer.echo(outcome.stdout)
    if drained is not None and (output.format is not OutputFormat.TABLE or not outcome.report_shown):
        for action in drained.actions:  # said on stderr where stdout does not list them
            typer.echo(f"gpudiag: {action.line}", err=True)
    for line in outcome.stderr:
        typer.echo(f"gpudiag: {line}", err=True)
    # The notifications only now, the report out: no receiver can hold it back.
    for line in deliver(outcome.pending) if outcome.pending is not None else ():
        typer.echo(f"gpudiag: {line}", err=True)
    return outcome.exit_code
