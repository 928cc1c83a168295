"""A report written by an earlier run, read back within bounds (``gpudiag merge``'s shards).

What is read is a file someone passed on the command line: it may be a FIFO (the read would hang), a device
(``/dev/zero`` never ends), a 1 GiB file (7.35 GB of memory and 112 s before), not UTF-8, nested past the
parser's recursion limit, or JSON that is not a gpudiag report. Each is one :class:`InputError` line naming
the file, in words (no ``[Errno 2]``, no decoder internals).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from gpudiag.model import SweepReport

MAX_REPORT_BYTES = 256 * 1024 * 1024  # a 7,000-host shard's JSON; more is not one report of gpudiag's


class InputError(ValueError):
    """A file that cannot be read as a report; the message is one line naming it."""


def read_bytes(path: Path, limit: int = MAX_REPORT_BYTES, what: str = "a report of gpudiag's") -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` (more: not ``what``); :class:`InputError`
    otherwise. Opened without blocking, so that a FIFO is refused, not waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({(exc.strerror or str(exc)).lower()})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):  # before fdopen, which raises "[Errno 21] Is a directory: 3" for a folder
        os.close(fd)
        raise InputError(f"{path}: {'a folder' if stat.S_ISDIR(mode) else 'not a regular file'}, not {what}")
    with os.fdopen(fd, "rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        size = f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit // 1024} KiB"
        raise InputError(f"{path}: larger than {size}; not {what}")
    return data


def read_report(path: Path) -> SweepReport:
    """The report in the JSON file ``path`` (``gpudiag sweep --format json``)."""
    from gpudiag.report.json_report import from_document

    data = read_bytes(path)
    try:
        document = json.loads(data.decode("utf-8").removeprefix("\ufeff"))
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON (line {exc.lineno}, column {exc.colno})") from None
    except (RecursionError, ValueError):  # ValueError: a number past Python's digit limit
        raise InputError(f"{path}: not a JSON document gpudiag reads (nested too deeply, or a huge number)") \
            from None
    if not isinstance(document, dict) or not str(document.get("schema", "")).startswith("gpudiag.sweep/"):
        raise InputError(f"{path}: not a gpudiag sweep report (gpudiag sweep --format json)")
    try:
        return from_document(document)
    except ValueError as exc:  # from_document's own sentence: "malformed ... document: missing key 'x'"
        raise InputError(f"{path}: a gpudiag report this version cannot read ({str(exc)[:120]})") from None
    except (KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise InputError(f"{path}: a gpudiag report this version cannot read ({type(exc).__name__}: "
                         f"{str(exc)[:80]})") from None
