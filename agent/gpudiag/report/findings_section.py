"""The report's findings, by host: hosts whose findings read the same folded into one heading
("gpu[01-50] (50 hosts)"), the host's action beside it ("action: reset_gpu": the highest of its findings'), a
finding on several GPUs of a host one line ("gpu 0-7"), the context lines once per group. Wide terminals get
one line per finding (severity, code, GPUs, its action, sentence in columns); narrow ones the sentence
wrapped under its code, indented.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from rich.console import RenderableType
from rich.padding import Padding
from rich.table import Table

from gpudiag.model import Action, Finding, HostReport, Severity, SweepReport
from gpudiag.report.evidence import evidence_lines
from gpudiag.report.fold import counted_label, generic, group_hosts, index_ranges
from gpudiag.report.terminal import safe, safe_text

SEVERITY_TAGS = {
    Severity.CRITICAL: ("CRITICAL", "bold red"),
    Severity.WARNING: ("WARNING", "yellow"),
    Severity.UNKNOWN: ("UNKNOWN", "magenta"),
    Severity.OK: ("OK", "green"),
}

# Below this many cells beside the code, GPUs and action, the sentence goes under them: 50 keeps a sentence
# to a few lines, and the columns at 120 (the action column takes up to 19 of them: "drain_and_inspect").
_SENTENCE_MIN = 50
_SENTENCE_INDENT = 6


def most_serious_first(severity: Severity) -> int:
    """A sort key: UNKNOWN between CRITICAL and WARNING, as :func:`gpudiag.model.worst` ranks it."""
    return -severity.rank


Line = tuple[Severity, str, str, str, str]  # severity, code, GPUs ("gpu 0-7"), action ("" for none), sentence


def shown_action(action: Action) -> str:
    """An action as the table shows it: its word, nothing for ``none`` (nothing to do reads as nothing)."""
    return "" if action is Action.NONE else action.label


@dataclass(frozen=True, slots=True)
class HostFindings:
    """What a host's findings say: the heading's note, the host's action ("" with no finding), one (severity,
    code, GPUs, action, sentence) per line, the context lines. Equal values fold."""

    note: str
    lines: tuple[Line, ...]
    context: tuple[tuple[str, str], ...]
    action: str = ""

    def map(self, change: Callable[[str], str]) -> HostFindings:
        return HostFindings(change(self.note), tuple((s, c, g, a, change(t)) for s, c, g, a, t in self.lines),
                            tuple((label, change(text)) for label, text in self.context), self.action)


def finding_lines(host: HostReport, *, fold: bool = True) -> tuple[Line, ...]:
    """One line per finding; when ``fold``, the same code, severity and action on several GPUs of a host is
    one line whose sentence is the first GPU's (eight identical lines hide the one that differs)."""

    def order(f: Finding) -> tuple[int, int, str]:
        return (most_serious_first(f.severity), -1 if f.gpu is None else f.gpu, f.code)

    lines: list[Line] = []
    per_gpu: dict[tuple[Severity, str, str], list[Finding]] = {}
    for f in sorted(host.findings, key=order):
        if f.gpu is None:
            lines.append((f.severity, f.code, "", shown_action(f.action), f.summary))
        elif not fold:
            lines.append((f.severity, f.code, f"gpu {f.gpu}", shown_action(f.action), f.summary))
        else:
            per_gpu.setdefault((f.severity, f.code, shown_action(f.action)), []).append(f)
    for (severity, code, action), found in per_gpu.items():
        if len(found) == 1:
            lines.append((severity, code, f"gpu {found[0].gpu}", action, found[0].summary))
        else:
            gpus = index_ranges(f.gpu for f in found if f.gpu is not None)
            lines.append((severity, code, f"gpu {gpus}", action,
                          f"{len(found)} GPUs; gpu {found[0].gpu} {found[0].summary}"))
    return tuple(sorted(lines, key=lambda line: most_serious_first(line[0])))


def host_findings(host: HostReport, *, fold: bool = True) -> HostFindings:
    """``host``'s findings as the section shows them; an answered host's error goes in its heading."""
    note = ""
    if host.status.answered and (host.status.value != "ok" or host.error):
        note = f"{host.status.value}: {host.error}" if host.error else host.status.value
    return HostFindings(note, finding_lines(host, fold=fold), evidence_lines(host),
                        shown_action(host.action))


def _generic_for(host: HostReport, text: str) -> str:
    return generic(text, host)


def findings_section(report: SweepReport, *, width: int, color: bool, fold: bool = True) -> list[RenderableType]:
    """The "Findings" section as rich renderables for a console ``width`` cells wide."""
    own = {h.host: host_findings(h, fold=fold) for h in report.hosts}
    # Hosts fold on what they say with their own name and address taken out; a group of one says it as is.
    items = [(h.host, own[h.host].map(partial(_generic_for, h))) for h in report.hosts]
    groups = [(names, own[names[0]] if len(names) == 1 else said)
              for names, said in group_hosts(items, fold=fold) if said.note or said.lines]
    if not groups:
        return [safe_text("No findings.")]
    code_width = max((len(line[1]) for _, said in groups for line in said.lines), default=4)
    gpu_width = max((len(line[2]) for _, said in groups for line in said.lines), default=0)
    action_width = max((len(line[3]) for _, said in groups for line in said.lines), default=0)
    beside = width - 2 - sum(w + 2 for w in (8, code_width, gpu_width)) - (action_width + 2 if action_width else 0)
    out: list[RenderableType] = [safe_text("Findings", style="bold" if color else "")]
    for names, said in groups:
        heading = safe_text(counted_label(names), style="bold" if color else "")
        if said.action:
            heading.append(safe(f"  action: {said.action}"))
        if said.note:
            heading.append(safe(f"  {said.note}"))
        out.append(heading)
        if said.lines:
            out.extend(_in_columns(said, code_width, gpu_width, action_width, color) if beside >= _SENTENCE_MIN
                       else _stacked(said, color))
    return out


def _in_columns(said: HostFindings, code_width: int, gpu_width: int, action_width: int,
                color: bool) -> list[RenderableType]:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True, min_width=8)
    grid.add_column(no_wrap=True, min_width=code_width)
    grid.add_column(no_wrap=True, min_width=gpu_width)
    if action_width:  # a column only when some finding asks for more than nothing
        grid.add_column(no_wrap=True, min_width=action_width)
    grid.add_column(overflow="fold")
    for severity, code, gpus, action, summary in said.lines:
        tag, style = SEVERITY_TAGS[severity]
        grid.add_row(safe_text(tag, style=style if color else ""), safe_text(code), safe_text(gpus),
                     *([safe_text(action)] if action_width else []), safe_text(summary))
    for label, text in said.context:  # context for the verdict: topology, VM, the servers' configuration
        grid.add_row(safe_text(""), safe_text(label, style="dim" if color else ""), safe_text(""),
                     *([safe_text("")] if action_width else []), safe_text(text))
    return [Padding(grid, (0, 0, 0, 2), expand=False)]


def _stacked(said: HostFindings, color: bool) -> list[RenderableType]:
    """Each finding's severity, code and GPUs on a line, its sentence wrapped under it, indented."""
    out: list[RenderableType] = []
    for severity, code, gpus, action, summary in said.lines:
        tag, style = SEVERITY_TAGS[severity]
        head = safe_text(tag, style=style if color else "").append(
            safe(f"  {code}" + (f"  {gpus}" if gpus else "") + (f"  {action}" if action else "")))
        out.append(Padding(head, (0, 0, 0, 2)))
        out.append(Padding(safe_text(summary), (0, 0, 0, _SENTENCE_INDENT)))
    for label, text in said.context:
        line = safe_text(f"{label}: ", style="dim" if color else "").append(safe(text))
        out.append(Padding(line, (0, 0, 0, 4)))
    return out
