"""The ``gpudiag`` command: the only code that prints or sets the exit code.

Exit codes, for cron and Nagios: 0 all well, 1 a warning (or a reading that should be there is missing),
2 a critical finding or a host that did not answer, 3 gpudiag could not run (bad inventory, bad flags).
Click reports usage errors with exit 2 by default; :func:`main` turns them into 3 so that 2 always
means "something on the cluster is critical".
"""

from __future__ import annotations

import sys

import typer

from gpudiag.cli.commands import exporter, history, inventory, local, logs, merge, sweep, undrain, watch
from gpudiag.cli.common import use_event_loop
from gpudiag.cli.params import Command, RootGroup
from gpudiag.cli.version import VERSION_FLAGS, version_line
from gpudiag.model.choices import EventLoop
from gpudiag.model.report import EXIT_CANNOT_RUN

# The commands, in the order --help lists them: each is one module of gpudiag.cli.commands (grep beside
# signatures in logs), named for what it does; what options it takes is gpudiag.cli.options.TAKES.
COMMANDS = (sweep.sweep, local.local, inventory.inventory, watch.watch, merge.merge, logs.signatures, logs.grep,
            undrain.undrain, history.history, exporter.exporter)

# -h as well as --help, on every command (click passes help_option_names down to the subcommands' contexts).
app = typer.Typer(cls=RootGroup, add_completion=False, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]})


def _version(value: bool) -> None:
    if value:  # `gpudiag --version` alone never gets here (gpudiag.cli.entry); `--event-loop X --version` does
        typer.echo(version_line())
        raise typer.Exit(0)


@app.callback(invoke_without_command=True)
def _global(ctx: typer.Context,
            event_loop: EventLoop = typer.Option(EventLoop.ASYNCIO, "--event-loop", envvar="GPUDIAG_EVENT_LOOP",
                                                 help="asyncio (default) or uvloop (faster, when installed)."),
            _show_version: bool = typer.Option(False, *VERSION_FLAGS, callback=_version, is_eager=True, metavar="",
                                               help="Print gpudiag's version and exit."),
            ) -> None:
    """Agentless GPU health sweep over SSH: what is wrong with the GPUs of a cluster."""
    if ctx.invoked_subcommand is None:  # bare `gpudiag`: the help, and success (not a usage error)
        typer.echo(ctx.get_help())
        raise typer.Exit(0)
    use_event_loop(event_loop)


for _command in COMMANDS:
    app.command(_command.command_name, cls=Command)(_command)  # type: ignore[attr-defined]


def _click_classes(name: str) -> tuple[type[BaseException], ...]:
    """``name`` from click and from the copy of click that newer typers vendor (``typer._click``)."""
    import importlib

    found = []
    for module in ("click.exceptions", "typer._click.exceptions"):
        try:
            found.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    return tuple(found)


def main() -> None:
    """Console entry point: run the app, mapping click's usage errors (exit 2) to exit 3."""
    try:
        code = app(standalone_mode=False, prog_name="gpudiag")  # also as python -m gpudiag.cli.app
    except _click_classes("ClickException") as exc:
        exc.show()  # type: ignore[attr-defined]
        sys.exit(EXIT_CANNOT_RUN)
    except _click_classes("Abort"):
        typer.echo("gpudiag: interrupted", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
