"""The scheduled audit on the command line: the audit flags of ``gpudiag sweep`` (typer option objects, defined
once), the sweep's last step (:func:`finish`), and the ``gpudiag history`` and ``gpudiag exporter`` commands.

A command module (like :mod:`.logs_commands` and :mod:`.slurm_commands`): it imports :mod:`.common`, never
:mod:`.app`, which registers its commands. ``sweep`` turns the flags into one
:class:`~gpudiag.audit.scheduled.AuditOptions` (:func:`audit_options`) in its request (``SweepRequest.audit``, checked
when the request is built, before any connection) and ends with :func:`finish`, after the Slurm drain step
when Slurm gave the hosts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from gpudiag.cli import options as opt
from gpudiag.cli.common import configuration_errors, fail, run_async, selected_hosts, terminal_width
from gpudiag.model.choices import HistoryFormat
from gpudiag.report import OutputFormat

if TYPE_CHECKING:
    from gpudiag.audit.scheduled import AuditOptions
    from gpudiag.cli.request import SweepRequest
    from gpudiag.cli.slurm_commands import Drained
    from gpudiag.model import SweepReport

HISTORY = typer.Option(None, "--history", help="Record each run in this SQLite file and say what changed "
                       "(e.g. ~/.local/state/gpudiag/history.sqlite).")
KEEP_DAYS = typer.Option(None, "--keep-days", help="Prune recorded runs older than this many days.")
LOCK_WAIT = typer.Option(10.0, "--history-lock-wait", min=0.0, help="Seconds to wait for another run's "
                         "history write, then exit 3.")
ONLY_CHANGES = typer.Option(False, "--only-changes", help="Print only new and resolved findings (nothing when "
                            "nothing changed); the exit code still says the current state.")
FLAP_CHANGES = typer.Option(4, "--flap-changes", min=2, help="A finding that changed state this many times...")
FLAP_WINDOW = typer.Option(10, "--flap-window", min=2, help="...in this many runs is flapping: said once, "
                           "then not announced while it flaps.")
NOTIFY = typer.Option([], "--notify", help="Send new, resolved and re-notified findings to this URL "
                      "(repeatable): an http(s) webhook gets a JSON POST; other schemes need Apprise.")
NOTIFY_CMD = typer.Option(None, "--notify-cmd", help="Run this command (no shell) with the change set as JSON "
                          "on stdin.")
RENOTIFY = typer.Option(None, "--renotify", help="Send a finding still open again after this long (12h, 30m, 2d).")
PROM_FILE = typer.Option(None, "--prom-file", help="Write the node_exporter textfile-collector file "
                         "(PATH.prom, atomically).")
OUTPUT = typer.Option(None, "--output", "-o", help="Write the report (any --format) to this file instead of "
                      "stdout, which gets one summary line (none with --quiet); the exit code is the same.")


def audit_options(*, history: Path | None, keep_days: float | None, lock_wait_s: float, only_changes: bool,
                  flap_changes: int, flap_window: int, notify: list[str], notify_cmd: str | None,
                  renotify: str | None, prom_file: Path | None, output: Path | None) -> AuditOptions:
    """The flags as one :class:`AuditOptions`; :class:`~gpudiag.audit.scheduled.AuditConfigError` (one line) for a bad
    ``--renotify``. The rest is checked with the output format when the request is built."""
    from gpudiag.audit.scheduled import AuditOptions, parse_duration
    from gpudiag.model.changes import FlapRule

    return AuditOptions(history=history, keep_days=keep_days, lock_wait_s=lock_wait_s, only_changes=only_changes,
                        flap=FlapRule(changes=flap_changes, window=flap_window), notify_urls=tuple(notify),
                        notify_cmd=notify_cmd, renotify_s=parse_duration(renotify) if renotify else None,
                        prom_file=prom_file, output=output)


def finish(report: SweepReport, request: SweepRequest, drained: Drained | None = None) -> int:
    """The end of ``sweep``: record, compare, write the files and notify as ``request.audit`` asks, then print
    the report (with the Slurm step's block and lines when ``drained``); returns the exit code."""
    from gpudiag.audit.scheduled import AuditOptions, audit

    output = request.output
    outcome = audit(report, output, request.audit or AuditOptions(), color=sys.stdout.isatty(),
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
    return outcome.exit_code


def history(
    path: Path = typer.Argument(..., help="The history file (--history of gpudiag sweep)."),
    host: str | None = typer.Option(None, "--host", help="One host's recorded readings and findings."),
    gpu: str | None = typer.Option(None, "--gpu", help="With --host: one GPU (index or UUID)."),
    last: int = typer.Option(20, "--last", min=1, help="How many rows."),
    fmt: HistoryFormat = typer.Option(HistoryFormat.TABLE, "--format", "-f", help="table or json."),
) -> None:
    """Show the recorded runs, or one host's (or GPU's) recent readings and findings."""
    from gpudiag.audit.history import History, HistoryError
    from gpudiag.report.history_table import render_gpu_rows, render_runs

    if gpu is not None and host is None:
        raise fail("--gpu needs --host")
    if not path.expanduser().is_file():
        raise fail(f"{path}: no such history file")
    try:
        with History.open(path) as recorded:
            rows = recorded.runs(last) if host is None else recorded.gpu_rows(host, gpu, last)
    except HistoryError as exc:
        raise fail(str(exc)) from None
    if fmt is HistoryFormat.JSON:
        typer.echo(json.dumps(rows, indent=2))
    else:
        width = terminal_width()
        typer.echo(render_runs(rows, width=width) if host is None else render_gpu_rows(rows, width=width), nl=False)


def exporter(
    targets: list[str] = typer.Argument(None, help="Hosts or patterns, as for sweep."),
    inventory: Path | None = opt.INVENTORY,
    user: str | None = opt.USER,
    port: int | None = opt.PORT,
    identity_file: str | None = opt.IDENTITY_FILE,
    limit: list[str] = opt.LIMIT,
    exclude: list[str] = opt.EXCLUDE,
    listen: str = typer.Option("127.0.0.1:9835", "--listen", help="ADDRESS:PORT to serve /metrics on."),
    every: float = typer.Option(30.0, "--every", min=0.0, help="Seconds from one refresh to the next."),
    samples: int = typer.Option(2, "--samples", min=1, max=600, help="Samples per GPU per refresh."),
    interval: float = opt.INTERVAL,
    timeout: float = opt.TIMEOUT,
    concurrency: int = opt.CONCURRENCY,
    connect_timeout: float = opt.CONNECT_TIMEOUT,
    known_hosts: str | None = opt.KNOWN_HOSTS,
    ssh_config: Path | None = opt.SSH_CONFIG,
) -> None:
    """Keep one connection per host and serve /metrics for the whole fleet (Prometheus), each scrape answered
    from the last refresh."""
    from gpudiag.audit.exporter import ExporterError, parse_listen, run_exporter
    from gpudiag.cli.request import HostSelection, SweepRequest, prepare
    from gpudiag.sweep.runner import SweepOptions
    from gpudiag.transport.build import SshRequest, open_transport

    errors: tuple[type[Exception], ...] = (ExporterError, *configuration_errors())
    try:
        parse_listen(listen)
        try:
            import prometheus_client  # noqa: F401
        except ImportError:
            raise ExporterError("gpudiag exporter needs prometheus_client: pip install 'gpudiag[exporter]'") from None
        # stream: as for watch, one collector per host stays on its kept connection and answers every refresh.
        request = SweepRequest(
            hosts=HostSelection(targets=tuple(targets or ()), inventory=inventory, user=user, port=port,
                                identity_file=identity_file, limit=tuple(limit), exclude=tuple(exclude)),
            ssh=SshRequest(connect_timeout_s=connect_timeout, known_hosts=known_hosts, ssh_config=ssh_config),
            sweep=SweepOptions(samples=samples, interval_s=interval, deadline_s=timeout, concurrency=concurrency,
                               stream=True))
        selected = selected_hosts(request.hosts)
        if not selected.hosts:
            raise ExporterError("no hosts to export: give targets or -i INVENTORY")
        prepared = prepare(request, selected)
    except errors as exc:
        raise fail(str(exc)) from None
    try:
        run_async(run_exporter(prepared.hosts, open_transport(prepared.ssh), prepared.options, plans=prepared.plans,
                               listen=listen, every_s=every))
    except ExporterError as exc:  # the address cannot be listened on
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        typer.echo("gpudiag: exporter stopped", err=True)
        raise typer.Exit(130) from None
