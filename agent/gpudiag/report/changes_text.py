"""What changed since the last recorded run, as text: ``--only-changes`` (the cron mail) and the tail of the
table report. Folded as the report folds (the same change of one code on several GPUs of a host is one change
naming ``GPUs 0-7``), ordered by host then GPU. Each change is a line that names it whole (state, severity,
host and GPUs, code and the action to take: what a reader scans and greps), then its sentence under it, cut
to two lines: the text is at most 80 columns wide, as a mail from cron is read (the JSON has every word).
Pure: returns text."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from gpudiag.model.actions import Action, highest
from gpudiag.model.changes import ChangeSet, ChangeState, FindingChange, FlapRule
from gpudiag.report.escape import safe
from gpudiag.report.fold import index_ranges

CHANGES_WIDTH = 80  # the widest the text gets: a cron mail is read at 80 columns, and a pipe is a mail
SENTENCE_INDENT = "    "
SENTENCE_LINES = 2  # the sentence under each change, cut after this many lines


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


def _action(head: str, found: Sequence[FindingChange]) -> str:
    """What the change asks for: the finding's action (the highest of the GPUs folded); nothing once resolved."""
    if head == "RESOLVED":
        return "resolved"
    action = highest([c.finding.action for c in found])
    return f"action: {action.label}"


def change_entries(changes: ChangeSet, flap: FlapRule = FlapRule()) -> list[tuple[str, str, str]]:
    """Per folded change, its head (state, severity, host and GPUs, code), the action it asks for and its
    sentence (empty for a host that went away or came back): findings by host then GPU, then the hosts.
    Uncut; escaped."""
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

    entries = []
    for (host, head, severity, code, _), found in sorted(groups.items(), key=order):
        found = sorted(found, key=lambda c: -1 if c.finding.gpu is None else c.finding.gpu)
        gpus = [c.finding.gpu for c in found if c.finding.gpu is not None]
        where = host if not gpus else f"{host} GPU{'s' * (len(gpus) > 1)} {index_ranges(gpus)}"
        entries.append((f"{head:<9} {severity.upper():<8} {where}  {code}", _action(head, found),
                        _tail(head, found, flap)))
    for h in sorted(changes.hosts, key=lambda h: h.host):
        if h.came_back:
            entries.append((f"{'BACK':<9} {'':<8} {h.host}  answers again (was {h.previous_status})", "", ""))
        else:
            entries.append((f"{'AWAY':<9} {'':<8} {h.host}  does not answer ({h.status})",
                            f"action: {Action.CHECK_NODE.label}", ""))
    # node text (a summary quoting a log line, a host name): escaped
    return [(safe(head), action, safe(sentence)) for head, action, sentence in entries]


def _sentence(sentence: str, width: int) -> list[str]:
    """The sentence under its change, indented, in at most :data:`SENTENCE_LINES` lines of ``width``."""
    room = max(20, width - len(SENTENCE_INDENT))
    lines = textwrap.wrap(sentence, width=room, break_long_words=True, break_on_hyphens=False)
    if len(lines) > SENTENCE_LINES:
        rest = " ".join(lines[SENTENCE_LINES - 1:])
        lines = [*lines[:SENTENCE_LINES - 1], fit(rest, room)]
    return [SENTENCE_INDENT + line for line in lines]


def render_changes(changes: ChangeSet, flap: FlapRule = FlapRule(), *, width: int = CHANGES_WIDTH) -> str:
    """``--only-changes``: a heading, then per change its head line and its sentence under it, in ``width``
    columns (at most :data:`CHANGES_WIDTH`); empty text when nothing changed (cron mails nothing)."""
    width = min(width, CHANGES_WIDTH)
    entries = change_entries(changes, flap)
    if not entries:
        return ""
    since = f" since {changes.previous_started_at}" if changes.previous_started_at else " (first recorded run)"
    counts = {s: sum(1 for c in changes.announced if c.state is s) for s in ChangeState}
    lines = [fit(f"gpudiag {changes.started_at}: {counts[ChangeState.NEW]} new, {counts[ChangeState.RESOLVED]} "
                 f"resolved{since}", width)]
    for head, action, sentence in entries:
        whole = f"{head}  {action}" if action else head
        if len(whole) <= width:
            lines.append(whole)
        else:  # a long host name: the action on a line of its own rather than cut off
            lines += [fit(head, width), *([SENTENCE_INDENT + action] if action else [])]
        if sentence:
            lines += _sentence(sentence, width)
    return "\n".join(lines)
