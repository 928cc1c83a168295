"""``gpudiag history``: the recorded runs of the scheduled audit, or one host's (or GPU's) recent rows."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from gpudiag.cli.common import fail, terminal_width
from gpudiag.cli.options import command
from gpudiag.cli.params import Given
from gpudiag.model.choices import HistoryFormat


@command("history")
def history(
    path: Path = typer.Argument(..., help="The history file (--history of gpudiag sweep)."),
    host: str | None = typer.Option(None, "--host", metavar="HOST", help="One host's recorded readings and "
                                    "findings."),
    gpu: str | None = typer.Option(None, "--gpu", metavar="GPU", help="With --host: one GPU (index or UUID)."),
    last: int = typer.Option(20, "--last", min=1, metavar="N", help="How many rows."),
    fmt: HistoryFormat = typer.Option(HistoryFormat.TABLE, "--format", "-f", help="table or json."),
    *, given: Given,
) -> None:
    """Show the recorded runs, or one host's (or GPU's) recent readings and findings."""
    from gpudiag.audit.history import History, HistoryError
    from gpudiag.report.history_table import render_gpu_rows, render_runs

    if gpu is not None and host is None:
        raise fail("--gpu needs --host")
    if not path.expanduser().is_file():
        raise fail(f"{path}: no such history file")
    try:
        with History.open_to_read(path) as recorded:
            rows = recorded.runs(last) if host is None else recorded.gpu_rows(host, gpu, last)
    except HistoryError as exc:
        raise fail(str(exc)) from None
    if host is not None and not rows:  # a mistyped name is not a host with nothing recorded
        raise fail(f"{path}: no recorded run swept host {host}" + (f" with GPU {gpu}" if gpu is not None else ""))
    if fmt is HistoryFormat.JSON:
        typer.echo(json.dumps(rows, indent=2))
    else:
        width = terminal_width()
        typer.echo(render_runs(rows, width=width) if host is None else render_gpu_rows(rows, width=width), nl=False)
