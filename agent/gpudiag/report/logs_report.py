"""Text for ``gpudiag signatures`` (the packs) and ``gpudiag grep`` (one signature across hosts). Pure text.

``grep`` output is grouped like ``clush -b``: hosts whose output reads the same are printed once, under a
host range (``gpu[01-03]``). Exit codes of ``grep``: 0 a line matched somewhere, 1 no line matched, 2 a
host did not answer or a log could not be read (so "no match" cannot be trusted there).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from gpudiag.logs.packs import Pack
from gpudiag.model import HostReport, LogMatch, LogScan, LogStatus, SweepReport
from gpudiag.report.columns import wrap
from gpudiag.report.fold import generic, group_hosts, host_label, shown
from gpudiag.report.terminal import safe_lines

REGEX_CHARS = 70


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ------------------------------------------------------------------------------------------ signatures


def render_signatures(packs: Iterable[Pack], *, width: int = 160) -> str:
    """Every pack: its echoes (configuration, never matches), signatures and expectations, in ``width``
    columns (each entry's text wrapped under it where it does not fit beside its name)."""
    out: list[str] = []
    for pack in packs:
        applies = "the kernel log (@kernel)" if pack.applies_to == "kernel" else "log files"
        window = f", last {pack.since_hours:g} h" if pack.since_hours else ""
        out += wrap(f"{pack.name} ", f"({pack.origin}; {applies}{window}): {pack.description}", width, indent=4)
        rows: list[tuple[str, str, str]] = []
        for echo in pack.echoes:
            rows.append(("echo", echo.name, f"/{_cut(echo.regex, REGEX_CHARS)}/ {echo.format} -> "
                                              f"{', '.join(echo.facts) or 'no facts'}"))
        for sig in pack.signatures:
            extra = f" exclude /{_cut(sig.exclude, 30)}/" if sig.exclude else ""
            meaning = f" - {sig.meaning}" if sig.meaning else ""
            rows.append((sig.severity, sig.name, f"/{_cut(sig.regex, REGEX_CHARS)}/{extra}{meaning}"))
        for exp in pack.expectations:
            when = ", ".join(f"{k}={'|'.join(str(v) for v in vs)}" for k, vs in exp.when)
            after = f", after {' '.join(exp.after)}" if exp.after else ""
            rows.append(("expect", exp.name, f"when {exp.echo}: {when or 'always'}{after}: expect "
                                             f"{' or '.join(exp.expect)} ({exp.severity} if absent)"))
        name_width = max((len(name) for _, name, _ in rows), default=0)
        for kind, name, text in rows:
            out += wrap(f"  {kind:<8} {name:<{name_width}}  ", text, width)
        out.append("")
    return "\n".join(out).rstrip("\n")


# ------------------------------------------------------------------------------------------ grep


def _match_lines(match: LogMatch) -> list[str]:
    shown = list(match.recent) or [x for x in (match.last,) if x is not None]
    if match.first is not None and all(x.seq != match.first.seq for x in shown):
        shown.insert(0, match.first)
        gap = match.count > len(shown)
        lines = [f"    {shown[0].text}"] + (["    ..."] if gap else []) + [f"    {x.text}" for x in shown[1:]]
        return lines
    return [f"    {x.text}" for x in shown]


def _scan_text(scan: LogScan, signature: str) -> list[str]:
    if scan.status is not LogStatus.OK:
        return [f"  {scan.path}: {scan.status.value} ({scan.error or 'no reason given'})"]
    matches = [m for m in scan.found(signature) if m.count]
    older = sum(m.older for m in scan.found(signature))
    cut = " (only its tail was read)" if scan.cut else ""
    if not matches:
        more = f"; {older} before the time window" if older else ""
        return [f"  {scan.path}: no match in {scan.lines} lines{cut}{more}"]
    lines = []
    for match in matches:
        key = " ".join(f"{k}={v}" for k, v in match.key)
        older_text = f", {match.older} before the time window" if match.older else ""
        lines.append(f"  {scan.path}{' ' + key if key else ''}: {match.count} matching line"
                     f"{'s' if match.count != 1 else ''}{older_text}{cut}")
        lines += _match_lines(match)
    keyless_older = sum(m.older for m in scan.found(signature) if not m.count)
    if keyless_older:  # a group_by signature counts the lines before its window apart, without their keys
        lines.append(f"  {scan.path}: {keyless_older} more before the time window")
    return lines


def _host_text(host: HostReport, signature: str) -> str:
    if not host.status.answered or host.readings is None:
        return f"  {host.status.value}: {host.error or 'no answer'}"
    if not host.readings.logs:
        problems = "; ".join(host.readings.problems)
        return f"  no log scanned{': ' + problems if problems else ' (no logs configured: -i INVENTORY or --log)'}"
    return "\n".join(line for scan in host.readings.logs for line in _scan_text(scan, signature))


def render_grep(report: SweepReport, signature: str, *, width: int = 160, fold: bool = True) -> str:
    """Matches of ``signature`` host by host, hosts with identical output folded into one block (each
    host's own name and address taken out first, so that 50 dead hosts are one block), every line within
    ``width`` columns (a long log line continues on the next, indented)."""
    # Escaped before the lines are cut to the width: log lines and errors come from the nodes.
    own = {h.host: safe_lines(_host_text(h, signature)) for h in report.hosts}
    out = []
    for names, text in group_hosts(((h.host, generic(own[h.host], h)) for h in report.hosts), fold=fold):
        heading = safe_lines(f"{host_label(names)} ({len(names)} host{'s' if len(names) != 1 else ''})")
        rule = "-" * min(len(heading), width)
        out += [rule, *wrap("", heading, width), rule]
        for line in shown(own[names[0]], text, names).splitlines():
            indent = len(line) - len(line.lstrip(" "))
            out += wrap(" " * indent, line.lstrip(" "), width)
    return "\n".join(out)


def grep_exit_code(report: SweepReport, signature: str) -> int:
    """0: matched somewhere; 1: nowhere; 2: a host or a log could not be read (and nothing matched... or did)."""
    failed = any(not h.status.answered or h.readings is None or
                 any(s.status is not LogStatus.OK for s in h.readings.logs) for h in report.hosts)
    matched = any(m.count for h in report.hosts if h.readings for s in h.readings.logs for m in s.found(signature))
    if failed:
        return 2
    return 0 if matched else 1


GREP_SCHEMA = "gpudiag.grep/1"


def grep_document(report: SweepReport, signature: str) -> str:
    """The matches as JSON: per host, per log, the count and the lines kept."""
    def scan_doc(scan: LogScan) -> dict[str, object]:
        return {"path": scan.path, "status": scan.status.value, "error": scan.error, "lines_scanned": scan.lines,
                "matches": [{"key": dict(m.key), "count": m.count, "older": m.older,
                             "first": m.first.text if m.first else None,
                             "lines": [x.text for x in m.recent] or ([m.last.text] if m.last else [])}
                            for m in scan.found(signature)]}

    doc = {"schema": GREP_SCHEMA, "signature": signature, "started_at": report.started_at,
           "hosts": [{"host": h.host, "status": h.status.value, "error": h.error,
                      "logs": [scan_doc(s) for s in (h.readings.logs if h.readings else ())]} for h in report.hosts],
           "exit_code": grep_exit_code(report, signature)}
    return json.dumps(doc, indent=2)
