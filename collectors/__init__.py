"""What runs on the node: ``probe.py`` (stdlib Python) and ``probe.sh`` (POSIX fallback).

Nothing here imports from ``agent``; the controller reads these files as text and sends them.
"""

from pathlib import Path

HERE = Path(__file__).resolve().parent


def probe_source() -> bytes:
    """The Python collector's source, as sent to ``python3 -`` on the node."""
    return (HERE / "probe.py").read_bytes()


def fallback_source() -> str:
    """The POSIX-shell collector, run when the node has no python3."""
    return (HERE / "probe.sh").read_text()
