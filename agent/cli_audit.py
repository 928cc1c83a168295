"""The scheduled-audit flags of ``gpudiag sweep`` (typer option objects, defined once) and the ``gpudiag history``
command. The sweep command passes its values to :func:`audit_options` and hands the result to
:mod:`gpudiag.audit`; this module prints only in ``history``."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from gpudiag.audit import AuditConfigError, AuditOptions, parse_duration
from gpudiag.changes import FlapRule

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
OUTPUT = typer.Option(None, "--output", "-o", help="Also write the report (any --format) to this file; with "
                      "--quiet, stdout stays silent.")


def audit_options(*, history: Path | None, keep_days: float | None, lock_wait_s: float, only_changes: bool,
                  flap_changes: int, flap_window: int, notify: list[str], notify_cmd: str | None,
                  renotify: str | None, prom_file: Path | None, output: Path | None, quiet: bool) -> AuditOptions:
    """The flags as one :class:`AuditOptions`; :class:`AuditConfigError` (one line) for a bad value."""
    return AuditOptions(history=history, keep_days=keep_days, lock_wait_s=lock_wait_s, only_changes=only_changes,
                        flap=FlapRule(changes=flap_changes, window=flap_window), notify_urls=tuple(notify),
                        notify_cmd=notify_cmd, renotify_s=parse_duration(renotify) if renotify else None,
                        prom_file=prom_file, output=output, quiet=quiet)


def history(
    path: Path = typer.Argument(..., help="The history file (--history of gpudiag sweep)."),
    host: str | None = typer.Option(None, "--host", help="One host's recorded readings and findings."),
    gpu: str | None = typer.Option(None, "--gpu", help="With --host: one GPU (index or UUID)."),
    last: int = typer.Option(20, "--last", min=1, help="How many rows."),
    fmt: str = typer.Option("table", "--format", "-f", help="table or json."),
) -> None:
    """Show the recorded runs, or one host's (or GPU's) recent readings and findings."""
    from gpudiag.history import History, HistoryError
    from gpudiag.report.history_table import render_gpu_rows, render_runs

    if fmt not in ("table", "json"):
        typer.echo(f"gpudiag: --format {fmt}: choose table or json", err=True)
        raise typer.Exit(3)
    if gpu is not None and host is None:
        typer.echo("gpudiag: --gpu needs --host", err=True)
        raise typer.Exit(3)
    if not path.expanduser().is_file():
        typer.echo(f"gpudiag: {path}: no such history file", err=True)
        raise typer.Exit(3)
    try:
        with History.open(path) as recorded:
            rows = recorded.runs(last) if host is None else recorded.gpu_rows(host, gpu, last)
    except HistoryError as exc:
        typer.echo(f"gpudiag: {exc}", err=True)
        raise typer.Exit(3) from None
    if fmt == "json":
        typer.echo(json.dumps(rows, indent=2))
    else:
        typer.echo(render_runs(rows) if host is None else render_gpu_rows(rows), nl=False)


__all__ = ["AuditConfigError", "audit_options", "exporter", "history"]


def exporter(
    targets: list[str] = typer.Argument(None, help="Hosts or patterns, as for sweep."),
    inventory: Path | None = typer.Option(None, "--inventory", "-i", help="Inventory YAML file."),
    listen: str = typer.Option("127.0.0.1:9835", "--listen", help="ADDRESS:PORT to serve /metrics on."),
    every: float = typer.Option(30.0, "--every", min=0.0, help="Seconds from one refresh to the next."),
    samples: int = typer.Option(2, "--samples", min=1, max=600, help="Samples per GPU per refresh."),
    interval: float = typer.Option(0.5, "--interval", min=0.0, max=60.0, help="Seconds between samples."),
    timeout: float = typer.Option(30.0, "--timeout", min=1.0, help="Per-host deadline of a refresh (seconds)."),
    concurrency: int = typer.Option(256, "--concurrency", min=1, help="Hosts in flight at once."),
    known_hosts: str | None = typer.Option(None, "--known-hosts", help="known_hosts file to trust."),
) -> None:
    """Keep one connection per host and serve /metrics for the whole fleet (Prometheus), each scrape answered
    from the last refresh."""
    from gpudiag import cli
    from gpudiag.exporter import ExporterError, parse_listen, run_exporter
    from gpudiag.inventory import InventoryError
    from gpudiag.transport import KeyLoadError

    try:
        parse_listen(listen)
        try:
            import prometheus_client  # noqa: F401
        except ImportError:
            raise ExporterError("gpudiag exporter needs prometheus_client: pip install 'gpudiag[exporter]'") from None
        hosts, overrides = cli._select_hosts(targets or [], inventory, None, None, None, [], [], False)
        if not hosts:
            raise ExporterError("no hosts to export: give targets or -i INVENTORY")
        transport, options = cli._prepare(hosts, cli._settings(overrides, {}), samples=samples, interval=interval,
                                          timeout=timeout, concurrency=concurrency, connect_timeout=10.0,
                                          login_timeout=10.0, known_hosts=known_hosts, accept_new=False,
                                          keep_connections=True)
        cli.run_async(run_exporter(hosts, transport, options, listen=listen, every_s=every))
    except (ExporterError, InventoryError, KeyLoadError, cli.CannotRun, ValueError) as exc:
        typer.echo(f"gpudiag: {exc}", err=True)
        raise typer.Exit(3) from None
    except KeyboardInterrupt:
        typer.echo("gpudiag: exporter stopped", err=True)
        raise typer.Exit(130) from None
