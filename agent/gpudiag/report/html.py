"""The sweep as one self-contained HTML page (``--format html --output FILE``): it fetches nothing when opened,
so it works as a mail attachment or on an air-gapped laptop. Pure: returns text.

The page, most urgent first: the summary; the findings table (one row per code, severity and host, its GPUs
folded into a range, each GPU's own sentence under a ``<details>``); every host that was not read, with why;
the charts (:mod:`gpudiag.report.html_chart`: utilization and, where measured, SM activity against the power
share, flagged GPUs drawn apart, every mark at its reading with a count where several share a place, the
region from the run's own thresholds);
what changed since the last run, folded the same way (with ``--history``), a sparkline per flagged GPU over
the recorded runs; the per-host table, with the reason beside a host that was not read; the thresholds the
checks judged by.

Inline SVG rather than a plotting library: a scatter with a shaded rectangle is ~150 lines, adds no
dependency, and a library's HTML output would either fetch its JavaScript from a CDN or inline megabytes of it.
No script at all: hovering uses the browser's own tooltips.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import fields

from gpudiag.model import Action, CheckSettings, Finding, HostReport, HostStatus, Severity, SweepReport
from gpudiag.model.changes import ChangeSet
from gpudiag.report.active_report import html_section
from gpudiag.report.counts import actions_phrase, findings_by_severity, gpus_by_sm, hosts_by_status_words
from gpudiag.report.escape import html_text as escape  # node text: controls and bidi escaped, then markup
from gpudiag.report.fold import index_ranges
from gpudiag.report.html_chart import (
    UNFLAGGED_OPACITY,
    UNFLAGGED_STROKE,
    flagged_codes,
    scatter_chart,
    scatter_svg,
    shaded_settings,
    sm_activity_svg,
    sm_colours,
    unflagged_in_region,
    utilization_point,
)
from gpudiag.report.html_jobs import jobs_html
from gpudiag.report.view import ReportView, Trends

_DEFAULTS = CheckSettings()
LEGEND_GREY = "#888"  # the legend's shapes: the marks' own style, in no family's colour
__all__ = ("render", "render_html", "scatter_svg", "sparkline")

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
.critical{color:#b00020;font-weight:600}.warning{color:#9a6700}.unknown{color:#6a1b9a}.ok{color:#2e7d32}
.legend span{display:inline-block;margin-right:14px}.swatch{display:inline-block;width:10px;height:10px;
border-radius:5px;margin-right:4px}svg text{font-size:11px;fill:#444}
.charts{display:flex;flex-wrap:wrap;gap:16px}.charts figure{margin:0;max-width:100%}svg{max-width:100%;height:auto}
td.gpus,td.nowrap{white-space:nowrap}.wide{overflow-x:auto;max-width:100%}td.what{overflow-wrap:anywhere}
details summary{cursor:pointer}tr.changed td{font-weight:600}svg text.stack{font-weight:600;fill:#222}
"""


def _sev(severity: Severity) -> str:
    return f'<span class="{severity.label}">{severity.label.upper()}</span>'


def _region(report: SweepReport, shared: int) -> str:
    """The chart in words, under it: the shaded region, what is in it unflagged and why, the piled marks."""
    settings = shaded_settings(report)
    inside = unflagged_in_region(report)
    text = (f"<p>Shaded: BUSY_LOW_POWER, utilization at least {settings.busy_utilization_pct:g}% and power "
            f"under {settings.low_power_pct:g}% of the enforced limit"
            f"{'' if report.settings is not None else ' (the default thresholds)'}.")
    if inside:
        text += (f" {inside} GPU{'s' if inside != 1 else ''} in it not flagged: memory at least "
                 f"{settings.bandwidth_memory_utilization_pct:g}% busy (bandwidth-bound), SM activity measured, "
                 "or a slowdown reason explains the power (hover for which).")
    return text + _shared(shared) + "</p>"


def _shared(shared: int) -> str:
    """The sentence under a chart for the GPUs drawn on one place (none moved: a count beside the mark)."""
    if not shared:
        return ""
    return (f" {shared} GPUs share a place with another: each mark is at its reading, and the number beside a "
            "pile (×8) says how many read alike; hover for each.")


def _legend(report: SweepReport) -> str:
    counts = gpus_by_sm(report)
    colours = sm_colours(report)
    flagged = len(flagged_codes(report))
    return ('<p class="legend">' + "".join(
        f'<span><i class="swatch" style="background:{colours[sm]}"></i>{escape(sm)} ({n})</span>'
        for sm, n in counts.items())
        + '<span><svg width="14" height="14" viewBox="0 0 14 14"><path d="M7 1L13 7L7 13L1 7Z" '
        f'fill="{LEGEND_GREY}" stroke="#000" stroke-width="1.5"/></svg> flagged by a check ({flagged})</span>'
        '<span><svg width="12" height="12" viewBox="0 0 12 12"><circle cx="6" cy="6" r="5" '
        f'fill="{LEGEND_GREY}" fill-opacity="{UNFLAGGED_OPACITY}" stroke="{UNFLAGGED_STROKE}"/></svg> '
        "not flagged</span></p>")


def _summary(report: SweepReport) -> str:
    statuses = ", ".join(f"{n} {s}" for s, n in hosts_by_status_words(report).items() if n)
    severities = ", ".join(f"{n} {s}" for s, n in findings_by_severity(report).items() if n) or "none"
    gpus = sum(len(h.gpus) for h in report.hosts)
    actions = actions_phrase(report) or "none"
    return (f"<p>Started {escape(report.started_at)}, took {report.duration_s:.1f} s. Hosts: {len(report.hosts)} "
            f"({escape(statuses)}). GPUs: {gpus}. Findings: {escape(severities)}. Actions: {escape(actions)}. "
            f"Exit code {report.exit_code}.</p>")


def _gpus(indexes: list[int | None]) -> str:
    """The GPU cell of a folded row: "", "3", "0-7 (8)"."""
    known = [i for i in indexes if i is not None]
    if not known:
        return ""
    return index_ranges(known) + (f" ({len(known)})" if len(known) > 1 else "")


def _findings(report: SweepReport) -> str:
    """The findings table: one row per code, severity and host, its GPUs folded into a range; a folded row
    shows its first GPU's sentence, every GPU's own in a ``<details>`` under it."""
    rows: dict[tuple[int, str, str, int, Severity, Action], list[Finding]] = defaultdict(list)
    for f in report.findings:
        rows[(-f.severity.rank, f.code, f.host, -f.action.rank, f.severity, f.action)].append(f)
    if not rows:
        return "<p>No findings.</p>"
    out = []
    for (_, code, host, _, severity, action), found in sorted(rows.items(), key=lambda r: r[0][:4]):
        found.sort(key=lambda f: -1 if f.gpu is None else f.gpu)
        text = escape(found[0].summary)
        if len(found) > 1:
            each = "".join(f"<li>{'' if f.gpu is None else f'GPU {f.gpu}: '}{escape(f.summary)}</li>" for f in found)
            first = "" if found[0].gpu is None else f"GPU {found[0].gpu}: "
            text = f"<details><summary>{first}{text}</summary><ul>{each}</ul></details>"
        out.append(f'<tr><td>{_sev(severity)}</td><td class="nowrap">{escape(code)}</td><td class="nowrap">'
                   f'{escape(host)}</td><td class="gpus">{_gpus([f.gpu for f in found])}</td>'
                   f'<td class="nowrap">{escape(action.label)}</td><td class="what">{text}</td></tr>')
    return ('<table id="findings"><tr><th>severity</th><th>code</th><th>host</th><th>GPUs</th><th>action</th>'
            '<th>what</th></tr>' + "".join(out) + "</table>")


def _partial_reasons(h: HostReport) -> list[Finding]:
    """What a host read in part lacks: its UNKNOWN findings (a reading missing), else its CRITICAL ones (a GPU
    lost)."""
    for severity in (Severity.UNKNOWN, Severity.CRITICAL):
        found = [f for f in h.findings if f.severity is severity]
        if found:
            return found
    return []


def host_reason(h: HostReport) -> str:
    """Why a host was not read, or read in part: its status's reason word and its error, and what the
    scheduler says of the node; "" for a host read in full with nothing to say."""
    said = ": ".join(t for t in (h.unreachable_reason.value if h.unreachable_reason else "", h.error or "") if t)
    if not said and h.status is HostStatus.CANCELLED:
        said = "the sweep was stopped before it answered"
    elif not said and h.status is HostStatus.PARTIAL:  # read in part: the findings say what is missing
        said = "; ".join(f"{f.code}{'' if f.gpu is None else f' (GPU {f.gpu})'}: {f.summary}"
                         for f in _partial_reasons(h)) or "some readings are missing"
    elif not said and h.status is not HostStatus.OK:
        said = "no reason recorded"
    if h.scheduler_state:
        said += ("; " if said else "") + f"scheduler: {h.scheduler_state}" + (
            f" ({h.scheduler_reason})" if h.scheduler_reason else "")
    return said


def _not_read(report: SweepReport) -> str:
    """Every host that was not read, or read in part, with its reason."""
    rows = "".join(f'<tr><td class="nowrap">{escape(h.host)}</td><td>{escape(h.status.value)}</td>'
                   f'<td class="what">{escape(host_reason(h))}</td></tr>'
                   for h in report.hosts if h.status is not HostStatus.OK)
    if not rows:
        return ""
    return ('<h2>Hosts not read</h2><table id="not-read"><tr><th>host</th><th>status</th><th>why</th></tr>'
            + rows + "</table>")


def _hosts(report: SweepReport) -> str:
    """One row per GPU (one per host that has none): its host's status and action, its readings. The SM
    activity column only where some GPU measured it (an empty column says nothing)."""
    activity = any(g.sm_active_pct is not None for h in report.hosts for g in h.gpus)
    rows = []
    for h in report.hosts:
        for gpu in h.gpus or (None,):
            power = gpu.power() if gpu else None
            cells = (h.host, h.status.value, h.action.label, "" if gpu is None else str(gpu.index),
                     (gpu.name or "") if gpu else "", (gpu.sm or "") if gpu else "",
                     "" if gpu is None or gpu.utilization_pct is None else f"{gpu.utilization_pct:g}",
                     *(("" if gpu is None or gpu.sm_active_pct is None else f"{gpu.sm_active_pct:g}",)
                       if activity else ()),
                     "" if power is None else f"{power.watts:.0f}",
                     "" if power is None or power.pct_of_limit is None else f"{power.pct_of_limit:g}",
                     str(sum(1 for f in h.findings if gpu is None or f.gpu in (None, gpu.index))),
                     host_reason(h) if gpu is None else "")
            rows.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{c}</th>" for c in ("host", "status", "action", "GPU", "name", "SM", "util %",
                                            *(("SM active %",) if activity else ()),
                                            "power W", "% of limit", "findings", "why not read"))
    return f'<div class="wide"><table id="hosts"><tr>{head}</tr>{"".join(rows)}</table></div>'


def _settings(report: SweepReport) -> str:
    """The thresholds the checks judged by, each beside its default where the run changed it; each finding's
    evidence names the ones that decided it."""
    if report.settings is None:
        return ("<p>This report does not say which thresholds its checks used (an older report, or merged runs "
                "that used different ones): the scatter shades the defaults.</p>")
    rows = []
    for f in fields(CheckSettings):
        value, default = getattr(report.settings, f.name), getattr(_DEFAULTS, f.name)
        changed = "" if value == default else ' class="changed"'
        rows.append(f"<tr{changed}><td>{escape(f.name)}</td><td>{value:g}</td><td>{default:g}</td></tr>")
    return ('<table id="settings"><tr><th>setting</th><th>this run</th><th>default</th></tr>'
            f'{"".join(rows)}</table>')


_STATE_ORDER = {"new": 0, "resolved": 1}  # then the rest (ongoing, carried), each by severity, host and code


def _changes(changes: ChangeSet | None) -> str:
    """What changed since the last run: one row per state, severity, host, code and streak, its GPUs folded."""
    if changes is None:
        return ""
    groups: dict[tuple[int, int, str, str, str, str, int], tuple[Severity, list[int | None]]] = {}
    for c in changes.findings:
        f = c.finding
        state = c.state.value + (" (flapping)" if c.flapping else "")
        key = (_STATE_ORDER.get(c.state.value, 2), -f.severity.rank, f.host, f.code, state, f.since, f.runs)
        groups.setdefault(key, (f.severity, []))[1].append(f.gpu)
    rows = "".join(f'<tr><td>{state}</td><td>{_sev(severity)}</td><td class="nowrap">{escape(host)}</td>'
                   f'<td class="gpus">{_gpus(gpus)}</td><td class="nowrap">{escape(code)}</td>'
                   f"<td>{escape(since)}</td><td>{runs}</td></tr>"
                   for (_, _, host, code, state, since, runs), (severity, gpus) in sorted(groups.items()))
    since = escape(changes.previous_started_at or "no earlier run")
    return (f"<h2>Since the last run ({since})</h2>" + (
        '<div class="wide"><table id="changes"><tr><th>state</th><th>severity</th><th>host</th><th>GPUs</th>'
        f"<th>code</th><th>since</th><th>runs</th></tr>{rows}</table></div>" if rows
        else "<p>No findings, before or now.</p>"))


SPARK_W, SPARK_H = 160, 28
# A sparkline's label, in words: the history's reading names are the model's fields
TREND_WORDS = {"utilization_pct": "utilization %", "power.pct_of_limit": "power, % of enforced limit"}


def sparkline(values: tuple[float | None, ...], top: float = 100.0) -> str:
    """A small inline SVG line of ``values`` (0..``top``); a gap where a value is missing."""
    if not values:
        return ""
    step = SPARK_W / max(len(values) - 1, 1)
    runs: list[list[str]] = [[]]
    for i, value in enumerate(values):
        if value is None:
            runs.append([])
            continue
        y = SPARK_H - 2 - (SPARK_H - 4) * max(0.0, min(value, top)) / top
        runs[-1].append(f"{i * step:.1f},{y:.1f}")
    lines = "".join(f'<polyline points="{" ".join(r)}" fill="none" stroke="#0072B2" stroke-width="1.5"/>'
                    if len(r) > 1 else (f'<circle cx="{r[0].split(",")[0]}" cy="{r[0].split(",")[1]}" r="1.5" '
                                        'fill="#0072B2"/>' if r else "") for r in runs)
    return (f'<svg class="sparkline" xmlns="http://www.w3.org/2000/svg" width="{SPARK_W}" height="{SPARK_H}" '
            f'viewBox="0 0 {SPARK_W} {SPARK_H}"><rect width="{SPARK_W}" height="{SPARK_H}" fill="#f4f4f4"/>'
            f"{lines}</svg>")


def _trends(trends: Trends | None) -> str:
    if not trends:
        return ""
    rows = []
    for (host, index), series in sorted(trends.items()):
        cells = "".join(f"<td>{sparkline(values)}<br><small>{escape(TREND_WORDS.get(name, name))}: "
                        f"{'-' if values[-1] is None else f'{values[-1]:g}'} now</small></td>"
                        for name, values in series if values)
        rows.append(f"<tr><td>{escape(host)} GPU {index}</td>{cells}</tr>")
    return ("<h2>Flagged GPUs over the recorded runs</h2><table id=\"trends\">" + "".join(rows) + "</table>")


def render_html(report: SweepReport, changes: ChangeSet | None = None, trends: Trends | None = None) -> str:
    """The whole page; ``trends``: per flagged GPU, readings over the recorded runs (with ``--history``)."""
    plotted = sum(1 for h in report.hosts for g in h.gpus if utilization_point(g) is not None)
    missing = sum(len(h.gpus) for h in report.hosts) - plotted
    note = (f"<p>{missing} GPU{'s' if missing != 1 else ''} not plotted: no utilization or power share "
            "reading.</p>" if missing else "")
    scatter, shared = scatter_chart(report)
    activity, measured, activity_shared = sm_activity_svg(report)
    charts = f'<figure>{scatter}</figure>'
    if activity:
        charts += f"<figure>{activity}</figure>"
    activity_note = (f"<p>SM activity measured on {measured} GPU{'s' if measured != 1 else ''} (right): a busy "
                     "GPU whose SMs are barely active is starved whatever its power."
                     + _shared(activity_shared) + "</p>"
                     if activity else "")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "img-src data:\"><title>gpudiag sweep " + escape(report.started_at) + "</title><style>" + _CSS
            + "</style></head><body><h1>gpudiag sweep</h1>" + _summary(report)
            + "<h2>Findings</h2>" + _findings(report) + jobs_html(report) + _not_read(report) + html_section(report)
            + f"<h2>{'Utilization and SM activity' if activity else 'Utilization'} against power</h2>"
            + f'<div class="charts">{charts}</div>' + _legend(report) + note
            + _region(report, shared) + activity_note
            + _changes(changes) + _trends(trends)
            + "<h2>Hosts</h2>" + _hosts(report) + "<h2>Thresholds</h2>" + _settings(report) + "</body></html>")


def render(report: SweepReport, view: ReportView) -> str:
    """The HTML format (:class:`gpudiag.report.Format`): the page, with the view's changes and trends."""
    return render_html(report, view.changes, view.trends)
