"""Appending to a known_hosts file that other gpudiag runs append to at the same time (``--accept-new-host-keys``
on one file from cron, shards, workers): the file is read again and the decision made under an exclusive
``flock`` of the file itself, so a key another run has just recorded is seen, and never recorded twice.

Four runs of 34 hosts each on an empty file rejected 92 of 136 hosts before (issue 23 #4): each run decided
from its own copy, read before the others wrote. Standard library only (the parsing is the caller's:
asyncssh lives in :mod:`gpudiag.transport.ssh`).
"""

from __future__ import annotations

import fcntl
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

V = TypeVar("V")


def append_unless(path: Path, line: bytes, decide: Callable[[str], V | None]) -> V | None:
    """Under an exclusive lock of ``path`` (created with its folder when missing): ``decide(text)`` on the
    file's text as it is now; when it returns None, ``line`` is appended (after a newline if the file lacks its
    last one) and None returned; else its verdict, and nothing written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+b") as file:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX)  # released when the file is closed
        file.seek(0)
        text = file.read().decode("utf-8", errors="replace")
        verdict = decide(text)
        if verdict is not None:
            return verdict
        file.write((b"\n" if text and not text.endswith("\n") else b"") + line.rstrip(b"\n") + b"\n")
        file.flush()
    return None
