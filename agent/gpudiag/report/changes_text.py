"""What changed since the last recorded run, as text: ``--only-changes`` (the cron mail) and the tail of the
table report. Folded as the report folds (the same change of one code on several GPUs of a host is one line
naming ``GPUs 0-7``), ordered by host then GPU, one line per change cut to the width (a mail from cron keeps
one line per change; the JSON has every word). Pure: returns text."""

from __future__ import annotations

from collections.abc import Sequence

from gpudiag.model.changes import ChangeSet, ChangeState, FindingChange, FlapRule
from gpudiag.report.escape import safe
from gpudiag.report.fold import index_ranges

CHANGES_WIDTH = 160  # a pipe's width (the CLI's PIPE_WIDTH): what a caller that names none gets


def _head(change: FindingChange) -> str:
    if change.became_flapping:
        return "FLAPPING"
    return "NEW" if change.state is ChangeState.NEW else "RESOLVED"


def _tail(head: str, found: Sequence[FindingChange], flap: FlapRule) -> str:
    f = found[0].finding
    if head == "FLAPPING":
        return (f"changed state {flap.changes}+ times in the last {flap.window} runs; "
                "not announced again while it flaps")
    named = f.summary if f"GPU {f.gpu}" in f.summary else f"GPU {f.gpu}: {f.summary}"  # the first GPU's sentence
    said = f.summary if len(found) == 1 else f"{len(found)} GPUs; {named}"
    if head == "RESOLVED":  # before the sentence, which the width may cut
        said = f"open since {f.since}, {f.runs} run{'s' if f.runs != 1 else ''}; {said}"
    return said


def fit(line: str, width: int) -> str:
    """``line`` cut to ``width`` characters, ending in ``…`` where it was cut: at a space near the end, else
    inside the word (a long path would otherwise take the whole sentence with it)."""
    if len(line) <= width:
        return line
    cut = line[:width - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut[-16:] else cut) + "…"


def change_lines(changes: ChangeSet, flap: FlapRule = FlapRule()) -> list[str]:
    """One uncut line per folded change: findings by host then GPU, then the hosts that went or came back."""
    groups: dict[tuple[str, str, str, str, bool], list[FindingChange]] = {}
    for change in changes.announced:
        f = change.finding
        # a finding without a GPU is a line of its own; GPUs fold on the same change of the same code
        key = (f.host, _head(change), f.severity.label, f.code, f.gpu is None)
        groups.setdefault(key, []).append(change)

    def order(item: tuple[tuple[str, str, str, str, bool], list[FindingChange]]) -> tuple[str, int, str, str]:
        (host, head, _, code, _), found = item
        first = min((c.finding.gpu for c in found if c.finding.gpu is not None), default=-1)
        return (host, first, code, head)

    lines = []
    for (host, head, severity, code, _), found in sorted(groups.items(), key=order):
        found = sorted(found, key=lambda c: -1 if c.finding.gpu is None else c.finding.gpu)
        gpus = [c.finding.gpu for c in found if c.finding.gpu is not None]
        where = host if not gpus else f"{host} GPU{'s' * (len(gpus) > 1)} {index_ranges(gpus)}"
        lines.append(f"{head:<9} {severity.upper():<8} {where}  {code}: {_tail(head, found, flap)}")
    for h in sorted(changes.hosts, key=lambda h: h.host):
        if h.came_back:
            lines.append(f"{'BACK':<9} {'':<8} {h.host}  answers again (was {h.previous_status})")
        else:
            lines.append(f"{'AWAY':<9} {'':<8} {h.host}  does not answer ({h.status})")
    return [safe(line) for line in lines]  # node text (a summary quoting a log line, a host name): escaped


def render_changes(changes: ChangeSet, flap: FlapRule = FlapRule(), *, width: int = CHANGES_WIDTH) -> str:
    """``--only-changes``: a heading, then one line per change (:func:`change_lines`), each cut to ``width``;
    empty text when nothing changed (cron mails nothing)."""
    lines = change_lines(changes, flap)
    if not lines:
        return ""
    since = f" since {changes.previous_started_at}" if changes.previous_started_at else " (first recorded run)"
    counts = {s: sum(1 for c in changes.announced if c.state is s) for s in ChangeState}
    head = (f"gpudiag {changes.started_at}: {counts[ChangeState.NEW]} new, {counts[ChangeState.RESOLVED]} "
            f"resolved{since}")
    return "\n".join(fit(line, width) for line in [head, *lines])
