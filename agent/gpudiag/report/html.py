"""The sweep as one self-contained HTML page (``--format html --output FILE``): it fetches nothing when opened,
so it works as a mail attachment or on an air-gapped laptop. Pure: returns text.

The page: the summary, the findings grouped by code with their hosts folded (``<details>``), the per-host
table, what changed since the last run (with ``--history``), and a scatter of every GPU's utilization against
its power as a share of its enforced limit (:meth:`gpudiag.model.GpuReading.power`), coloured by SM family,
with the BUSY_LOW_POWER region the run's thresholds define shaded (:attr:`SweepReport.settings`) and each point
naming its host and GPU on hover (an SVG ``<title>``), with history a sparkline per flagged GPU (utilization
and power share over the recorded runs), and the thresholds the checks judged by.

Inline SVG rather than a plotting library: one scatter with a shaded rectangle is ~60 lines, adds no
dependency, and a library's HTML output would either fetch its JavaScript from a CDN or inline megabytes of it.
No script at all: hovering uses the browser's own tooltips.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import fields
from html import escape

from gpudiag.model import CheckSettings, GpuReading, Severity, SweepReport, worst
from gpudiag.model.changes import ChangeSet
from gpudiag.report.counts import findings_by_severity, gpus_by_sm, hosts_by_status
from gpudiag.report.view import ReportView, Trends

# Okabe-Ito: told apart by colour-blind readers too (https://jfly.uni-koeln.de/color/)
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
UNKNOWN_SM_COLOUR = "#999999"
WIDTH, HEIGHT, PAD = 640, 420, 48
Y_MAX_PCT = 120.0  # power share axis: a GPU above its limit (a brief spike) still shows
_DEFAULTS = CheckSettings()

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
.critical{color:#b00020;font-weight:600}.warning{color:#9a6700}.unknown{color:#6a1b9a}.ok{color:#2e7d32}
.legend span{display:inline-block;margin-right:14px}.swatch{display:inline-block;width:10px;height:10px;
border-radius:5px;margin-right:4px}svg text{font-size:11px;fill:#444}
"""


def _sev(severity: Severity) -> str:
    return f'<span class="{severity.label}">{severity.label.upper()}</span>'


def _point(gpu: GpuReading) -> tuple[float, float] | None:
    power = gpu.power()
    if gpu.utilization_pct is None or power is None or power.pct_of_limit is None:
        return None
    return gpu.utilization_pct, power.pct_of_limit


def _x(util_pct: float) -> float:
    return PAD + (WIDTH - 2 * PAD) * max(0.0, min(util_pct, 100.0)) / 100.0


def _y(power_pct: float) -> float:
    return HEIGHT - PAD - (HEIGHT - 2 * PAD) * max(0.0, min(power_pct, Y_MAX_PCT)) / Y_MAX_PCT


def sm_colours(report: SweepReport) -> dict[str, str]:
    """SM family → its colour, families in the order the summary counts them."""
    families = [sm for sm in gpus_by_sm(report) if sm != "unknown"]
    colours = {sm: PALETTE[i % len(PALETTE)] for i, sm in enumerate(families)}
    colours["unknown"] = UNKNOWN_SM_COLOUR
    return colours


def shaded_settings(report: SweepReport) -> CheckSettings:
    """The thresholds the scatter shades: the ones the run used (:attr:`SweepReport.settings`), else (a report
    that does not say: an older document, merged runs that used different ones) the defaults."""
    return report.settings if report.settings is not None else _DEFAULTS


def scatter_svg(report: SweepReport) -> str:
    """The utilization × power-share scatter: one ``<circle class="gpu">`` per GPU that has both readings, and
    the BUSY_LOW_POWER region the run's thresholds define (:func:`shaded_settings`) shaded."""
    colours = sm_colours(report)
    settings = shaded_settings(report)
    busy, low = settings.busy_utilization_pct, settings.low_power_pct
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" id="scatter" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="GPU utilization against power share">',
             f'<rect class="busy-low-power" x="{_x(busy):.1f}" y="{_y(low):.1f}" width="{_x(100) - _x(busy):.1f}" '
             f'height="{_y(0) - _y(low):.1f}" fill="#d55e00" fill-opacity="0.12" stroke="#d55e00" '
             f'stroke-dasharray="4 3"><title>BUSY_LOW_POWER: utilization at least {busy:g}% and power under '
             f'{low:g}% of the enforced limit</title></rect>',
             f'<text x="{_x(busy) - 4:.1f}" y="{_y(low) + 14:.1f}" text-anchor="end">BUSY_LOW_POWER</text>']
    for tick in range(0, 101, 20):
        parts.append(f'<line x1="{_x(tick):.1f}" y1="{_y(0):.1f}" x2="{_x(tick):.1f}" y2="{_y(0) + 4:.1f}" '
                     f'stroke="#444"/><text x="{_x(tick):.1f}" y="{_y(0) + 16:.1f}" text-anchor="middle">'
                     f'{tick}</text>')
    for tick in range(0, int(Y_MAX_PCT) + 1, 20):
        parts.append(f'<line x1="{_x(0) - 4:.1f}" y1="{_y(tick):.1f}" x2="{_x(0):.1f}" y2="{_y(tick):.1f}" '
                     f'stroke="#444"/><text x="{_x(0) - 6:.1f}" y="{_y(tick) + 4:.1f}" text-anchor="end">'
                     f'{tick}</text>')
    parts.append(f'<rect x="{_x(0):.1f}" y="{_y(Y_MAX_PCT):.1f}" width="{_x(100) - _x(0):.1f}" '
                 f'height="{_y(0) - _y(Y_MAX_PCT):.1f}" fill="none" stroke="#444"/>')
    parts.append(f'<text x="{WIDTH / 2:.0f}" y="{HEIGHT - 8}" text-anchor="middle">GPU utilization (%)</text>')
    parts.append(f'<text transform="translate(14 {HEIGHT / 2:.0f}) rotate(-90)" text-anchor="middle">'
                 'power, % of enforced limit</text>')
    for host in report.hosts:
        for gpu in host.gpus:
            point = _point(gpu)
            if point is None:
                continue
            sm = gpu.sm or "unknown"
            util, share = point
            parts.append(f'<circle class="gpu" data-host="{escape(host.host)}" data-gpu="{gpu.index}" '
                         f'data-sm="{escape(sm)}" cx="{_x(util):.1f}" cy="{_y(share):.1f}" r="5" '
                         f'fill="{colours[sm]}" fill-opacity="0.8" stroke="#fff"><title>{escape(host.host)} GPU '
                         f'{gpu.index} ({escape(gpu.name or sm)}): {util:g}% utilization, {share:g}% of its '
                         f'enforced power limit</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def _region(report: SweepReport) -> str:
    """The shaded region in words, under the scatter."""
    settings = shaded_settings(report)
    return (f"<p>Shaded: BUSY_LOW_POWER, utilization at least {settings.busy_utilization_pct:g}% and power "
            f"under {settings.low_power_pct:g}% of the enforced limit"
            f"{'' if report.settings is not None else ' (the default thresholds)'}.</p>")


def _legend(report: SweepReport) -> str:
    counts = gpus_by_sm(report)
    colours = sm_colours(report)
    return '<p class="legend">' + "".join(
        f'<span><i class="swatch" style="background:{colours[sm]}"></i>{escape(sm)} ({n})</span>'
        for sm, n in counts.items()) + "</p>"


def _summary(report: SweepReport) -> str:
    statuses = ", ".join(f"{n} {s}" for s, n in hosts_by_status(report).items() if n)
    severities = ", ".join(f"{n} {s}" for s, n in findings_by_severity(report).items() if n) or "none"
    gpus = sum(len(h.gpus) for h in report.hosts)
    return (f"<p>Started {escape(report.started_at)}, took {report.duration_s:.1f} s. Hosts: {len(report.hosts)} "
            f"({escape(statuses)}). GPUs: {gpus}. Findings: {escape(severities)}. Exit code {report.exit_code}.</p>")


def _findings(report: SweepReport) -> str:
    by_code = defaultdict(list)
    for f in report.findings:
        by_code[f.code].append(f)
    if not by_code:
        return "<p>No findings.</p>"
    out = []
    for code in sorted(by_code, key=lambda c: (-worst(f.severity for f in by_code[c]).rank, c)):
        found = by_code[code]
        hosts = sorted({f.host for f in found})
        most = worst(f.severity for f in found)
        items = "".join(f"<li>{_sev(f.severity)} {escape(f.host)}"
                        f"{'' if f.gpu is None else f' GPU {f.gpu}'}: {escape(f.summary)}</li>" for f in found)
        out.append(f'<details class="code"><summary>{_sev(most)} <b>{escape(code)}</b>: {len(found)} on '
                   f"{len(hosts)} host{'s' if len(hosts) != 1 else ''}</summary><ul>{items}</ul></details>")
    return "".join(out)


def _hosts(report: SweepReport) -> str:
    rows = []
    for h in report.hosts:
        for gpu in h.gpus or (None,):
            power = gpu.power() if gpu else None
            cells = (h.host, h.status.value, "" if gpu is None else str(gpu.index), (gpu.name or "") if gpu else "",
                     (gpu.sm or "") if gpu else "",
                     "" if gpu is None or gpu.utilization_pct is None else f"{gpu.utilization_pct:g}",
                     "" if power is None else f"{power.watts:.0f}",
                     "" if power is None or power.pct_of_limit is None else f"{power.pct_of_limit:g}",
                     str(sum(1 for f in h.findings if gpu is None or f.gpu in (None, gpu.index))))
            rows.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{c}</th>" for c in ("host", "status", "GPU", "name", "SM", "util %", "power W",
                                            "% of limit", "findings"))
    return f'<table id="hosts"><tr>{head}</tr>{"".join(rows)}</table>'


def _settings(report: SweepReport) -> str:
    """The thresholds the checks judged by, each beside its default where the run changed it; each finding's
    evidence names the ones that decided it."""
    if report.settings is None:
        return ("<p>This report does not say which thresholds its checks used (an older report, or merged runs "
                "that used different ones): the scatter shades the defaults.</p>")
    rows = []
    for f in fields(CheckSettings):
        value, default = getattr(report.settings, f.name), getattr(_DEFAULTS, f.name)
        changed = "" if value == default else f"default {default:g}"
        rows.append(f"<tr><td>{escape(f.name)}</td><td>{value:g}</td><td>{changed}</td></tr>")
    return f'<table id="settings"><tr><th>setting</th><th>value</th><th></th></tr>{"".join(rows)}</table>'


def _changes(changes: ChangeSet | None) -> str:
    if changes is None:
        return ""
    rows = "".join(f"<tr><td>{c.state.value}{' (flapping)' if c.flapping else ''}</td><td>"
                   f"{_sev(c.finding.severity)}</td><td>{escape(c.finding.host)}</td><td>{escape(c.finding.code)}"
                   f"</td><td>{escape(c.finding.since)}</td><td>{c.finding.runs}</td></tr>" for c in changes.findings)
    since = escape(changes.previous_started_at or "no earlier run")
    return (f"<h2>Since the last run ({since})</h2>" + (
        f'<table id="changes"><tr><th>state</th><th>severity</th><th>host</th><th>code</th><th>since</th>'
        f"<th>runs</th></tr>{rows}</table>" if rows else "<p>No findings, before or now.</p>"))


SPARK_W, SPARK_H = 160, 28


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
        cells = "".join(f"<td>{sparkline(values)}<br><small>{escape(name)}: "
                        f"{'-' if values[-1] is None else f'{values[-1]:g}'} now</small></td>"
                        for name, values in series if values)
        rows.append(f"<tr><td>{escape(host)} GPU {index}</td>{cells}</tr>")
    return ("<h2>Flagged GPUs over the recorded runs</h2><table id=\"trends\">" + "".join(rows) + "</table>")


def render_html(report: SweepReport, changes: ChangeSet | None = None, trends: Trends | None = None) -> str:
    """The whole page; ``trends``: per flagged GPU, readings over the recorded runs (with ``--history``)."""
    plotted = sum(1 for h in report.hosts for g in h.gpus if _point(g) is not None)
    missing = sum(len(h.gpus) for h in report.hosts) - plotted
    note = (f"<p>{missing} GPU{'s' if missing != 1 else ''} not plotted: no utilization or power share "
            "reading.</p>" if missing else "")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "img-src data:\"><title>gpudiag sweep " + escape(report.started_at) + "</title><style>" + _CSS
            + "</style></head><body><h1>gpudiag sweep</h1>" + _summary(report)
            + "<h2>Utilization against power</h2>" + scatter_svg(report) + _legend(report) + note
            + _region(report)
            + _changes(changes) + _trends(trends) + "<h2>Findings</h2>" + _findings(report)
            + "<h2>Hosts</h2>" + _hosts(report) + "<h2>Thresholds</h2>" + _settings(report) + "</body></html>")


def render(report: SweepReport, view: ReportView) -> str:
    """The HTML format (:class:`gpudiag.report.Format`): the page, with the view's changes and trends."""
    return render_html(report, view.changes, view.trends)
