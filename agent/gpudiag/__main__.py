"""``python -m gpudiag``: the same command line as ``gpudiag``."""

import sys


def main() -> None:
    """Import the CLI and run it. A Ctrl-C while the CLI is still being imported (its first few tenths of a
    second) ends the run as a Ctrl-C later does, one line and exit 130, never an import traceback."""
    try:
        from gpudiag.cli.app import main as run_cli
    except KeyboardInterrupt:
        sys.stderr.write("gpudiag: interrupted\n")
        sys.exit(130)
    run_cli()


if __name__ == "__main__":
    main()
