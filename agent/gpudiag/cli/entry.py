"""The ``gpudiag`` console entry point (and ``python -m gpudiag``): ``gpudiag --version`` is answered here,
before typer, rich or any layer is imported (the interpreter's own start-up is most of what it costs); every
other command line goes to the typer app, :func:`gpudiag.cli.app.main`, imported only then.

Only the standard library and :mod:`gpudiag.cli.version` are imported at this module's top:
tests/unit/cli/test_cli_imports.py checks it.
"""

from __future__ import annotations

import sys

from gpudiag.cli.version import VERSION_FLAGS, version_line


def main() -> None:
    """Run the command line: ``--version`` (or ``-V``) alone at once, anything else through the typer app."""
    if len(sys.argv) == 2 and sys.argv[1] in VERSION_FLAGS:
        sys.stdout.write(version_line() + "\n")
        sys.exit(0)
    try:
        from gpudiag.cli.app import main as run_app

        run_app()
    except KeyboardInterrupt:
        # A Ctrl-C before the run's own signal handling is in place (the CLI still being imported, typer
        # still building its command: the first few tenths of a second) ends the run as a Ctrl-C later
        # does: one line and exit 130, never a traceback.
        sys.stderr.write("gpudiag: interrupted\n")
        sys.exit(130)
