"""The run's output files, checked before the first connection: ``--output`` (the report, the HTML page
included), ``--json-file``, ``--prom-file`` and ``--history``.

A file that cannot be written is found after a sweep of a thousand hosts only if nobody looks first: then
the report is lost, and with ``--history --only-changes`` the run is recorded all the same, so the next run
says nothing of what this one found. :func:`check_outputs` looks first: the folder exists (a mistyped
path is never created: a new folder would start a new history), it is a folder gpudiag can create a file
in (tried, not guessed from the mode bits: root on a read-only mount, an ACL), and the file itself is not a
folder and, for the history, can be opened for writing. Each problem is one
:class:`OutputError` line naming the file.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gpudiag.model import SweepReport
from gpudiag.report import OutputFormat


class OutputError(ValueError):
    """An output that cannot be written; the message is one line naming it (the CLI: exit 3)."""


class Outputs(Protocol):
    """The files a run writes: :class:`gpudiag.model.request.AuditOptions`."""

    @property
    def output(self) -> Path | None: ...
    @property
    def json_file(self) -> Path | None: ...
    @property
    def prom_file(self) -> Path | None: ...
    @property
    def history(self) -> Path | None: ...
    @property
    def selection(self) -> tuple[str, ...]: ...


class ReportOutput(Protocol):
    """How the report is printed: what this step reads of a :class:`gpudiag.model.request.OutputRequest`."""

    @property
    def format(self) -> OutputFormat: ...
    @property
    def quiet(self) -> bool: ...
    @property
    def samples_detail(self) -> bool: ...
    @property
    def width(self) -> int: ...
    @property
    def fold(self) -> bool: ...


def write_atomic(path: Path, text: str) -> None:
    """Write ``PATH.tmp.<pid>``, fsync, rename over ``path``: a reader sees the old file or the new one.
    The folder must exist (:mod:`gpudiag.audit.outputs` checks it before the sweep): a mistyped path is
    never created."""
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)




def _why(exc: OSError) -> str:
    """An OS error in words, without Python's ``[Errno 13]``."""
    return (exc.strerror or os.strerror(exc.errno or errno.EIO)).lower()


def _check_folder(flag: str, path: Path) -> None:
    folder = path.parent
    if not folder.exists():
        raise OutputError(f"{flag} {path}: folder {folder} does not exist (create it first); "
                               "nothing was swept")
    if not folder.is_dir():
        raise OutputError(f"{flag} {path}: {folder} is not a folder; nothing was swept")
    probe = folder / f".{path.name}.gpudiag-check.{os.getpid()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise OutputError(f"{flag} {path}: cannot create a file in {folder} ({_why(exc)}); "
                               "nothing was swept") from None
    os.close(fd)
    os.unlink(probe)


def _check_file(flag: str, path: Path, *, open_it: bool) -> None:
    if path.is_dir():
        raise OutputError(f"{flag} {path}: is a folder, not a file; nothing was swept")
    if open_it and path.exists():
        try:  # SQLite writes in place: the file itself must open for writing (a mode-444 history, as a user)
            fd = os.open(path, os.O_RDWR)
        except OSError as exc:
            raise OutputError(f"{flag} {path}: cannot write it ({_why(exc)}); nothing was swept") from None
        os.close(fd)


def outputs(options: Outputs) -> Iterable[tuple[str, Path]]:
    """(flag, path) of every file the run will write."""
    for flag, path in (("--output", options.output), ("--json-file", options.json_file),
                       ("--prom-file", options.prom_file), ("--history", options.history)):
        if path is not None:
            yield flag, path.expanduser()


def check_outputs(options: Outputs) -> None:
    """Before any connection: every output of ``options`` can be written, else :class:`OutputError`
    (one line naming it: the CLI exits 3 with nothing swept and nothing recorded)."""
    seen: dict[Path, str] = {}
    for flag, path in outputs(options):
        resolved = path.resolve()
        if resolved in seen:
            raise OutputError(f"{flag} {path}: the same file as {seen[resolved]}; nothing was swept")
        seen[resolved] = flag
        _check_folder(flag, path)
        _check_file(flag, path, open_it=flag == "--history")


@dataclass(frozen=True, slots=True)
class FileFormat:
    """A :class:`~gpudiag.audit.scheduled.ReportOutput` as printed, in another format: the ``--output`` file's
    (``--output-format``) or the ``--json-file``'s, at the width and with the flags of the printed one."""

    printed: ReportOutput
    format: OutputFormat

    @property
    def quiet(self) -> bool:
        return self.printed.quiet

    @property
    def samples_detail(self) -> bool:
        return self.printed.samples_detail

    @property
    def width(self) -> int:
        return self.printed.width

    @property
    def fold(self) -> bool:
        return self.printed.fold


@dataclass(frozen=True, slots=True, kw_only=True)
class Unwritten:
    """A file the run could not write after the sweep (a full disk, a folder removed meanwhile)."""

    line: str  # one line for stderr, naming the file
    report_lost: bool  # the --output file: the report must reach stdout instead


def write_outputs(options: Outputs, report: SweepReport, *, file_text: str | None,
                  json_text: str | None) -> Unwritten | None:
    """Write the ``--output`` file, the ``--json-file`` and the ``--prom-file`` (a partial run's merged with
    the hosts the file held: :func:`gpudiag.report.prom_merge.merge_textfile`); the first that fails stops
    the rest and is returned."""
    report_lost = False
    try:
        if options.output is not None and file_text is not None:
            report_lost = True
            write_atomic(options.output.expanduser(), file_text + "\n")
            report_lost = False
        if options.json_file is not None and json_text is not None:
            write_atomic(options.json_file.expanduser(), json_text + "\n")
        if options.prom_file is not None:
            write_atomic(options.prom_file.expanduser(), _textfile(options, report))
    except OSError as exc:
        name = exc.filename if exc.filename is not None else "a file"
        return Unwritten(line=f"cannot write {name}: {_why(exc)}", report_lost=report_lost)
    return None


def _textfile(options: Outputs, report: SweepReport) -> str:
    """The textfile for ``report``: a run of some of the hosts (``--limit``, ``--exclude``, ``--shard``, a
    Slurm selection) keeps the other hosts the file held, marked as carried with their last sweep's time."""
    from gpudiag.report.prom_merge import merge_textfile
    from gpudiag.report.prometheus import render_prometheus

    text = render_prometheus(report)
    if not options.selection or options.prom_file is None:
        return text
    try:
        with open(options.prom_file.expanduser(), encoding="utf-8", errors="replace") as before:
            old = before.read(MAX_TEXTFILE_BYTES + 1)
    except FileNotFoundError:
        return text
    if len(old) > MAX_TEXTFILE_BYTES:  # not one gpudiag wrote: not merged, as a bad line would not be
        return text
    return merge_textfile(text, old, swept=frozenset(h.host for h in report.hosts))


MAX_TEXTFILE_BYTES = 256 * 1024 * 1024  # a 10,000-GPU fleet's file is some 60 MB
