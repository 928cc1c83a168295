"""What ``gpudiag --version`` prints: read by the entry point's fast path (:mod:`gpudiag.cli.entry`) and by the
typer app's ``--version`` option alike. Standard library and :mod:`gpudiag` only."""

from __future__ import annotations

VERSION_FLAGS = ("--version", "-V")


def version_line() -> str:
    """``gpudiag 0.1.0``: the package's version, the one the distribution's metadata is built from."""
    from gpudiag import __version__

    return f"gpudiag {__version__}"
