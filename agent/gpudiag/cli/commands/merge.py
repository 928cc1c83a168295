"""``gpudiag merge``: the JSON reports of several sweeps (shards) as one report."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from gpudiag.cli.common import fail, render_report
from gpudiag.cli.options import command
from gpudiag.cli.params import Given


@command("merge")
def merge(reports: list[Path] = typer.Argument(..., help="JSON reports of gpudiag sweep --format json (shards)."),
          *, given: Given) -> None:
    """Merge the JSON reports of several sweeps (e.g. --shard 1/4 ... 4/4) into one report."""
    import json

    from gpudiag.cli import build
    from gpudiag.model.request import OutputRequest
    from gpudiag.report.json_report import from_document
    from gpudiag.sweep.shard import ShardError
    from gpudiag.sweep.shard import merge as merge_reports

    loaded = []
    for path in reports:
        try:
            loaded.append((str(path), from_document(json.loads(path.read_text()))))
        except (OSError, ValueError) as exc:
            raise fail(f"{path}: {exc}") from None
    try:
        report = merge_reports(loaded)
    except ShardError as exc:
        raise fail(str(exc)) from None
    if not (given["quiet"] and report.exit_code == 0):
        typer.echo(render_report(report, build.request(given, {OutputRequest: {"progress": False}}).output,
                                  color=sys.stdout.isatty()))
    raise typer.Exit(report.exit_code)
