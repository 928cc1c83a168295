"""``gpudiag watch``: one kept connection per host and a live view, refreshed until Ctrl-C or ``--count``."""

from __future__ import annotations

import contextlib
import shutil
import sys
from typing import TYPE_CHECKING

import typer

from gpudiag.cli.common import configuration_errors, fail, prepared_hosts, render_report, say, terminal_width
from gpudiag.cli.options import command
from gpudiag.cli.params import Given
from gpudiag.model.choices import TextFormat

if TYPE_CHECKING:
    from gpudiag.model import SweepReport
    from gpudiag.sweep.watch import Changes

EVERY = typer.Option(5.0, "--every", min=0.0, metavar="S", help="Seconds from one refresh to the next.")
COUNT = typer.Option(0, "--count", min=0, metavar="N", help="Stop after this many refreshes (0: until Ctrl-C).")
PLAIN = typer.Option(False, "--plain", metavar="", rich_help_panel="Output",
                     help="Print each refresh below the last (no redraw).")


@command("watch")
def watch(every: float = EVERY, count: int = COUNT, plain: bool = PLAIN, *, given: Given) -> None:
    """Keep one connection per host and refresh a live view: bars, findings as they appear and clear."""
    from gpudiag.cli import build
    from gpudiag.cli.live import LiveScreen, render_watch
    from gpudiag.model.request import SweepOptions
    from gpudiag.run.execute import watch as keep_watching

    fmt = given["fmt"]
    running = contextlib.ExitStack()  # the run's hosts (and what their sources started), until the watch ends
    # stream: one collector per host stays on its kept connection and answers every refresh; three missed
    # refreshes and it leaves.
    try:
        request = build.request(given, {SweepOptions: {"stream": True, "idle_s": 3 * every + given["timeout"]}})
        prepared = running.enter_context(prepared_hosts(request, "no hosts to watch: give targets, -i INVENTORY "
                                                                 "or --demo"))
    except configuration_errors() as exc:
        running.close()
        raise fail(str(exc)) from None
    live = sys.stdout.isatty() and not plain and fmt is TextFormat.TABLE
    screen = LiveScreen() if live else None

    def show(refresh: int, report: SweepReport, change: Changes) -> None:
        if fmt is TextFormat.JSON:  # JSON Lines: one document a line
            typer.echo(render_report(report, request.output, one_line=True))
            return
        # asked each refresh: the terminal may have been resized; a redrawn screen holds its rows only
        text = render_watch(refresh, count, report, appeared=change.appeared, cleared=change.cleared, color=live,
                            width=terminal_width(), height=shutil.get_terminal_size().lines if live else None)
        if screen is not None:
            screen.show(text)
        else:
            typer.echo(text)

    try:
        with running, screen if screen is not None else contextlib.nullcontext():
            last = keep_watching(prepared, every_s=every, count=count, on_refresh=show, say=say)
    except KeyboardInterrupt:
        typer.echo("gpudiag: watch stopped", err=True)
        raise typer.Exit(130) from None
    raise typer.Exit(last.exit_code if last else 0)
