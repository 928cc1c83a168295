"""The scheduled audit: what ``gpudiag sweep`` does after the sweep when it runs from cron or a systemd timer.
Records the run in the history, works out what changed, sends notifications that do not repeat, writes the
Prometheus textfile and the report file. Prints nothing: :func:`audit` returns what the CLI should print on
stdout and stderr and the exit code. The options are part of the sweep's typed request
(``SweepRequest.audit``, checked by :func:`check` when the request is built, before any connection); the sweep
command calls :func:`audit` at its end, after the Slurm drain step when Slurm gave the hosts, so that what is
recorded and written carries each node's Slurm state and the report's ``slurm`` block.

Order of a run: (1) one history transaction: compare with the last runs, record this one, prune; (2) the
report text, the ``--output`` file and the ``--prom-file``; (3) notifications, then one short transaction
that records what was sent and what failed. A failed notification is a line on stderr and in the run's record;
the run is kept and the exit code still says the state of the cluster.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from gpudiag.model import SweepReport
from gpudiag.model.changes import ChangeSet, ChangeState, FindingChange
from gpudiag.model.report import EXIT_CANNOT_RUN
from gpudiag.model.request import AuditOptions
from gpudiag.report import OutputFormat

if TYPE_CHECKING:
    from gpudiag.audit.history import History
    from gpudiag.audit.notify import Target
    from gpudiag.report import Trends

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_S = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


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


class AuditConfigError(ValueError):
    """Flags that cannot work together; the message is one line for the operator."""


def parse_duration(text: str, flag: str = "--renotify") -> float:
    """ "12h" → 43200.0 (s, m, h, d; a bare number is seconds); :class:`AuditConfigError` otherwise."""
    match = _DURATION.match(text)
    if not match or float(match.group(1)) <= 0:
        raise AuditConfigError(f"{flag} {text}: expected a duration such as 90s, 30m, 12h or 2d")
    return float(match.group(1)) * _UNIT_S[match.group(2)]



@dataclass(frozen=True, slots=True, kw_only=True)
class AuditOutcome:
    """What the CLI prints and exits with."""

    stdout: str  # empty: print nothing
    stderr: tuple[str, ...] = ()
    report_shown: bool = False  # stdout is the whole report (with the caller's ``tail``), not only the changes
    exit_code: int = 0
    run_id: int | None = None
    changes: ChangeSet | None = None
    notified: tuple[FindingChange, ...] = ()
    pending: PendingNotification | None = None  # the notifications, to :func:`deliver` after printing


def check(options: AuditOptions, fmt: OutputFormat) -> None:
    """Before the sweep: flags that cannot work raise :class:`AuditConfigError` (one line)."""
    from gpudiag.audit.notify import NotifyConfigError, targets

    needs_history = [flag for flag, used in (("--only-changes", options.only_changes),
                                             ("--notify", bool(options.notify_urls)),
                                             ("--notify-cmd", options.notify_cmd is not None),
                                             ("--renotify", options.renotify_s is not None),
                                             ("--keep-days", options.keep_days is not None)) if used]
    if needs_history and options.history is None:
        raise AuditConfigError(f"{needs_history[0]} needs --history PATH (it works from the recorded runs)")
    if options.keep_days is not None and options.keep_days <= 0:
        raise AuditConfigError(f"--keep-days {options.keep_days:g}: expected a number of days above 0")
    if fmt is OutputFormat.HTML and options.output is None:
        raise AuditConfigError("--format html writes a file: give --output FILE")
    if options.prom_file is not None and options.prom_file.suffix != ".prom":
        raise AuditConfigError(f"--prom-file {options.prom_file}: node_exporter reads only *.prom files")
    try:
        targets(options.notify_urls, options.notify_cmd)
    except NotifyConfigError as exc:
        raise AuditConfigError(str(exc)) from None


def write_atomic(path: Path, text: str) -> None:
    """Write ``PATH.tmp.<pid>``, fsync, rename over ``path``: a reader sees the old file or the new one.
    The folder is created when missing (a first run from cron)."""
    path.parent.mkdir(parents=True, exist_ok=True)
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


def to_send(changes: ChangeSet, last_sent: dict[str, float], renotify_s: float | None,
            now_s: float) -> tuple[tuple[FindingChange, ...], frozenset[str]]:
    """(what to notify, the fingerprints among them sent again): new and resolved findings that do not flap,
    one that started to flap, and an open one never sent or last sent ``renotify_s`` ago or more."""
    announced = changes.announced
    chosen = list(announced)
    again = set()
    for change in changes.findings:
        if change in announced or change.state is ChangeState.RESOLVED or change.flapping:
            continue
        sent = last_sent.get(change.finding.fingerprint)
        if sent is None or (renotify_s is not None and now_s - sent >= renotify_s):
            chosen.append(change)
            if sent is not None:
                again.add(change.finding.fingerprint)
    return tuple(chosen), frozenset(again)


TREND_READINGS = ("utilization_pct", "power.pct_of_limit")  # the scatter's two axes, over time


def _trends(report: SweepReport, history: History) -> Trends:
    """Per GPU with a finding: the scatter's two readings over its recorded runs."""
    from gpudiag.model.changes import gpu_keys

    keys = gpu_keys(report)
    flagged = {(f.host, f.gpu) for f in report.findings if f.gpu is not None and (f.host, f.gpu) in keys}
    return {(host, index): tuple((name, history.trend(host, keys[(host, index)], name)) for name in TREND_READINGS)
            for host, index in flagged}


def _render(report: SweepReport, output: ReportOutput, changes: ChangeSet | None, run_id: int | None,
            options: AuditOptions, color: bool, history: History | None = None,
            extra: Mapping[str, object] | None = None, tail: str = "") -> str:
    from gpudiag.report import ReportView, render

    # The trends are read from the history only for the page that draws them (one query per flagged GPU).
    trends = _trends(report, history) if history is not None and output.format is OutputFormat.HTML else None
    # --quiet prints only the findings when something is wrong; a report written to --output stays whole.
    view = ReportView(width=output.width, color=color, fold=output.fold,
                      findings_only=output.quiet and options.output is None, samples_detail=output.samples_detail,
                      changes=changes, run_id=run_id, flap=options.flap, trends=trends, extra=extra or {}, tail=tail)
    return render(report, output.format, view)


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingNotification:
    """What is left to do after the report is printed: send ``document`` to ``to``, then record what was sent
    and what failed in run ``run_id`` of ``history`` (one short transaction, :func:`deliver`). Sent after the
    report is out, so that no receiver (one that never answers, one that answers forever) can hold it back."""

    document: Mapping[str, object]
    to: tuple[Target, ...]
    history: Path
    lock_wait_s: float
    run_id: int
    sent: tuple[str, ...]  # the fingerprints to mark as sent when every target took it
    cleared: tuple[str, ...]  # the resolved ones, forgotten
    now_s: float


def check_history(options: AuditOptions) -> None:
    """Before any connection: the ``--history`` file opens, reads back and its write lock can be had, else
    :class:`AuditConfigError` naming the file (the CLI: one line, exit 3, nothing swept)."""
    if options.history is None:
        return
    from gpudiag.audit.history import History, HistoryError

    try:
        History.check(options.history, lock_wait_s=options.lock_wait_s)
    except HistoryError as exc:
        raise AuditConfigError(f"{exc}; nothing was swept") from None


def audit(report: SweepReport, output: ReportOutput, options: AuditOptions, *, color: bool = False,
          clock: Callable[[], float] = time.time, extra: Mapping[str, object] | None = None, tail: str = "",
          loud: bool = False) -> AuditOutcome:
    """:func:`prepare`, then :func:`deliver` its notifications: their failures join ``stderr``. For callers that
    print nothing in between; the sweep command prints the report first."""
    outcome = prepare(report, output, options, color=color, clock=clock, extra=extra, tail=tail, loud=loud)
    if outcome.pending is None:
        return outcome
    return replace(outcome, stderr=(*outcome.stderr, *deliver(outcome.pending)), pending=None)


def prepare(report: SweepReport, output: ReportOutput, options: AuditOptions, *, color: bool = False,
            clock: Callable[[], float] = time.time, extra: Mapping[str, object] | None = None, tail: str = "",
            loud: bool = False) -> AuditOutcome:
    """After the sweep: record, compare, write; the notifications are left in ``pending``. Returns what to print
    and the exit code.

    ``extra``: top-level keys added to the JSON document (the Slurm step's ``slurm`` block); ``tail``: lines
    printed after the table (the Slurm states and actions); ``loud``: print the report even with ``--quiet``
    when all is well (there were drain actions), unless it went to ``--output``. A history that fails here
    (checked before the sweep, it can still break: a full disk, a lock held past the wait) loses nothing but
    the record: the report is printed and written as if there were no ``--history``, a line says the run was
    not recorded, and the exit code is 3."""
    from gpudiag.audit.history import History, HistoryError

    changes: ChangeSet | None = None
    run_id = None
    history = None
    lost: str | None = None  # why the history could not be used after the sweep
    try:
        if options.history is not None:
            history = History.open(options.history, lock_wait_s=options.lock_wait_s)
            recorded = history.record(report, flap=options.flap, keep_days=options.keep_days, now_s=clock(),
                                      selection=options.selection)
            changes, run_id = recorded.changes, recorded.run_id
            from gpudiag.audit.streaks import with_streaks

            report = with_streaks(report, changes)  # a GPU held idle says for how long (runs and hours)
        text = _render(report, output, changes, run_id, options, color, history, extra, tail)
        pending = _pending(changes, history, run_id, options, clock) if history is not None else None
    except HistoryError as exc:
        lost = str(exc) if "not recorded" in str(exc) else f"{exc}; this run was not recorded"
        changes, run_id, pending = None, None, None
        text = _render(report, output, None, None, options, color, None, extra, tail)
    finally:
        if history is not None:
            history.close()
    try:
        if options.output is not None:
            write_atomic(options.output, text + "\n")
        if options.prom_file is not None:
            from gpudiag.report.prometheus import render_prometheus

            write_atomic(options.prom_file, render_prometheus(report))
    except OSError as exc:
        return AuditOutcome(stdout="", stderr=(*([lost] if lost else ()),
                                               f"cannot write {exc.filename}: {exc.strerror}"),
                            exit_code=EXIT_CANNOT_RUN)
    code = report.exit_code
    shown = False
    if options.only_changes and lost is None:
        document = pending.document if pending is not None else None
        stdout = _only_changes(changes, document, output.format, options, output.width) if changes is not None else ""
    elif output.quiet and (options.output is not None or (code == 0 and not loud and lost is None)):
        stdout = ""
    elif options.output is not None:
        # The report went to the file, as `sort -o` or `curl -o` would: stdout says where, and the cluster's
        # state in one line (the exit code says it too), so a terminal is not flooded with a JSON document.
        from gpudiag.report.table import render_summary_line

        stdout = f"wrote {options.output}: {render_summary_line(report)}"
    else:
        stdout, shown = text, True
    return AuditOutcome(stdout=stdout, stderr=(lost,) if lost else (),
                        exit_code=EXIT_CANNOT_RUN if lost else code, run_id=run_id, changes=changes,
                        notified=pending.notified if pending is not None else (), report_shown=shown,
                        pending=pending.notification if pending is not None else None)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Chosen:
    notified: tuple[FindingChange, ...]
    document: Mapping[str, object] | None
    notification: PendingNotification | None


def _changes_document(changes: ChangeSet, chosen: tuple[FindingChange, ...],
                      again: frozenset[str] = frozenset()) -> dict[str, object] | None:
    """The change set sent and printed by ``--only-changes``; None when nothing changed."""
    from gpudiag.report.changes_report import changes_document

    return changes_document(changes, chosen, again) if chosen or changes.hosts else None


def _pending(changes: ChangeSet | None, history: History, run_id: int | None, options: AuditOptions,
             clock: Callable[[], float]) -> _Chosen | None:
    """What to notify about this run, and the document: read from the history while it is open."""
    from gpudiag.audit.notify import targets

    if changes is None or options.history is None:
        return None
    to = targets(options.notify_urls, options.notify_cmd)
    now = clock()
    chosen, again = (to_send(changes, history.last_sent(), options.renotify_s, now) if to
                     else (changes.announced, frozenset()))
    chosen += tuple(c for c in changes.newly_carried if c not in chosen)
    document = _changes_document(changes, chosen, again)
    if not to or document is None:
        return _Chosen(notified=(), document=document, notification=None)
    return _Chosen(notified=chosen, document=document, notification=PendingNotification(
        document=document, to=to, history=options.history, lock_wait_s=options.lock_wait_s, run_id=run_id or 0,
        sent=tuple(c.finding.fingerprint for c in chosen if c.state is not ChangeState.RESOLVED),
        cleared=tuple(c.finding.fingerprint for c in changes.findings if c.state is ChangeState.RESOLVED),
        now_s=now))


def deliver(pending: PendingNotification) -> tuple[str, ...]:
    """Send the change set, then record in the history what was sent and what failed; one line per failure
    (a target, or the history that could not take the record)."""
    from gpudiag.audit.history import History, HistoryError
    from gpudiag.audit.notify import send

    failed = send(pending.document, pending.to)
    try:
        with History.open(pending.history, lock_wait_s=pending.lock_wait_s) as history:
            history.mark_notified(pending.run_id, sent=() if failed else pending.sent, cleared=pending.cleared,
                                  errors=failed, now_s=pending.now_s)
    except HistoryError as exc:
        return (*failed, f"{exc} (what was sent was not recorded: it may be sent again)")
    return failed


def _only_changes(changes: ChangeSet, document: Mapping[str, object] | None, fmt: OutputFormat,
                  options: AuditOptions, width: int) -> str:
    """``--only-changes``: the text lines, folded and fitted to ``width``, or with ``--format json`` the very
    document the notifications send (nothing when nothing changed)."""
    from gpudiag.report.changes_text import render_changes

    if fmt is OutputFormat.JSON:
        if document is None:
            return ""
        from gpudiag.report.json_report import dumps

        return dumps(document)
    return render_changes(changes, options.flap, width=width)
