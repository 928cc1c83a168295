"""The HTML report's charts, inline SVG: every GPU's utilization against its power as a share of its enforced
limit (:meth:`gpudiag.model.GpuReading.power`) and, where SM activity was measured (NVML GPM, DCGM), its SM
activity against the same share (utilization reads 100% whenever any kernel is resident, so it says little
on a busy node; SM activity says how many SMs did work).

What a chart must not hide:

- one mark per plotted GPU (``class="gpu"``); a GPU a check flagged is a diamond with a dark outline
  (``class="gpu flagged"``, its codes in ``data-codes``), the rest plain circles: told apart without colour;
- every mark at its reading, never moved: marks that cover one another (eight GPUs of one node read alike)
  get one count beside them (``×8``; the counts move apart, the marks never), and unflagged circles are
  half transparent, so a pile reads as one;
  the hover text (an SVG ``<title>``) gives the exact reading;
- the utilization axis widens above a knee below the busy threshold, so busy GPUs at 97-100% spread out
  instead of piling against the right edge; the knee is drawn and labelled;
- the shaded region is the one the run's own thresholds define (:attr:`SweepReport.settings`).

Pure: returns text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gpudiag.model import CheckSettings, GpuReading, Severity, SweepReport
from gpudiag.report.counts import gpus_by_sm
from gpudiag.report.escape import html_text as escape  # node text: controls and bidi escaped, then markup

# Okabe-Ito: told apart by colour-blind readers too (https://jfly.uni-koeln.de/color/)
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
UNKNOWN_SM_COLOUR = "#999999"
WIDTH, HEIGHT, PAD = 640, 420, 48
Y_MAX_PCT = 120.0  # power share axis: a GPU above its limit (a brief spike) still shows
RADIUS = 5.0
KNEE_SHARE = 0.3  # the part of the utilization axis below the knee
STACKED_PX = 2 * RADIUS  # marks whose centres are this close cover one another: one count says how many
LABEL_H = 12.0  # a count's line height: counts are set apart by this (the counts move, never the marks)
UNFLAGGED_OPACITY = 0.55  # an unflagged circle's fill: near ones show through one another (the legend's too)
UNFLAGGED_STROKE = "#555"  # its outline: visible on the white page, as the legend draws it
_DEFAULTS = CheckSettings()


def shaded_settings(report: SweepReport) -> CheckSettings:
    """The thresholds the charts shade: the ones the run used (:attr:`SweepReport.settings`), else (a report
    that does not say: an older document, merged runs that used different ones) the defaults."""
    return report.settings if report.settings is not None else _DEFAULTS


def sm_colours(report: SweepReport) -> dict[str, str]:
    """SM family → its colour, families in the order the summary counts them."""
    families = [sm for sm in gpus_by_sm(report) if sm != "unknown"]
    colours = {sm: PALETTE[i % len(PALETTE)] for i, sm in enumerate(families)}
    colours["unknown"] = UNKNOWN_SM_COLOUR
    return colours


def flagged_codes(report: SweepReport) -> dict[tuple[str, int], tuple[str, ...]]:
    """(host, GPU index) → the codes of the findings (worse than OK) that name that GPU, sorted."""
    codes: dict[tuple[str, int], set[str]] = {}
    for f in report.findings:
        if f.gpu is not None and f.severity is not Severity.OK:
            codes.setdefault((f.host, f.gpu), set()).add(f.code)
    return {key: tuple(sorted(found)) for key, found in codes.items()}


def utilization_knee(settings: CheckSettings) -> float:
    """Where the utilization axis widens: 10 points under the busy threshold, on a multiple of 10."""
    return max(0.0, min(90.0, math.floor((settings.busy_utilization_pct - 10.0) / 10.0) * 10.0))


def _y(power_pct: float) -> float:
    return HEIGHT - PAD - (HEIGHT - 2 * PAD) * max(0.0, min(power_pct, Y_MAX_PCT)) / Y_MAX_PCT


def linear_x(pct: float) -> float:
    return PAD + (WIDTH - 2 * PAD) * max(0.0, min(pct, 100.0)) / 100.0


def knee_x(knee: float) -> Callable[[float], float]:
    """The utilization axis: [0, knee] over the first :data:`KNEE_SHARE` of the width, [knee, 100] the rest."""
    span = WIDTH - 2 * PAD
    if knee <= 0:
        return linear_x

    def x(pct: float) -> float:
        pct = max(0.0, min(pct, 100.0))
        if pct <= knee:
            return PAD + span * KNEE_SHARE * pct / knee
        return PAD + span * (KNEE_SHARE + (1 - KNEE_SHARE) * (pct - knee) / (100.0 - knee))

    return x


@dataclass(frozen=True, slots=True, kw_only=True)
class Mark:
    """One GPU on a chart: where its reading puts it, what the hover says, whether a check flagged it."""

    host: str
    index: int
    sm: str
    x_pct: float
    y_pct: float
    title: str
    codes: tuple[str, ...]


def _diamond(cx: float, cy: float, r: float) -> str:
    r *= 1.35
    return f"M{cx:.1f} {cy - r:.1f}L{cx + r:.1f} {cy:.1f}L{cx:.1f} {cy + r:.1f}L{cx - r:.1f} {cy:.1f}Z"


def _axes(x: Callable[[float], float], x_ticks: Sequence[float], x_label: str, knee: float | None) -> list[str]:
    parts = []
    for tick in x_ticks:
        parts.append(f'<line x1="{x(tick):.1f}" y1="{_y(0):.1f}" x2="{x(tick):.1f}" y2="{_y(0) + 4:.1f}" '
                     f'stroke="#444"/><text x="{x(tick):.1f}" y="{_y(0) + 16:.1f}" text-anchor="middle">'
                     f"{tick:g}</text>")
    for tick in range(0, int(Y_MAX_PCT) + 1, 20):
        parts.append(f'<line x1="{x(0) - 4:.1f}" y1="{_y(tick):.1f}" x2="{x(0):.1f}" y2="{_y(tick):.1f}" '
                     f'stroke="#444"/><text x="{x(0) - 6:.1f}" y="{_y(tick) + 4:.1f}" text-anchor="end">'
                     f"{tick}</text>")
    if knee:
        parts.append(f'<line class="knee" x1="{x(knee):.1f}" y1="{_y(0):.1f}" x2="{x(knee):.1f}" '
                     f'y2="{_y(Y_MAX_PCT):.1f}" stroke="#999" stroke-dasharray="2 3"/>'
                     f'<text x="{x(knee) + 4:.1f}" y="{_y(Y_MAX_PCT) + 12:.1f}">scale widens above {knee:g}%</text>')
    parts.append(f'<rect x="{x(0):.1f}" y="{_y(Y_MAX_PCT):.1f}" width="{x(100) - x(0):.1f}" '
                 f'height="{_y(0) - _y(Y_MAX_PCT):.1f}" fill="none" stroke="#444"/>')
    parts.append(f'<text x="{WIDTH / 2:.0f}" y="{HEIGHT - 8}" text-anchor="middle">{x_label}</text>')
    parts.append(f'<text transform="translate(14 {HEIGHT / 2:.0f}) rotate(-90)" text-anchor="middle">'
                 "power, % of enforced limit</text>")
    return parts


def _stacks(points: Sequence[tuple[float, float]]) -> list[list[int]]:
    """The marks that share a place, as lists of indexes (in order): a mark joins the first stack whose first
    mark is within :data:`STACKED_PX` of it. A stack of one is a mark on its own."""
    stacks: list[list[int]] = []
    for i, (px, py) in enumerate(points):
        for stack in stacks:
            qx, qy = points[stack[0]]
            if math.hypot(px - qx, py - qy) <= STACKED_PX:
                stack.append(i)
                break
        else:
            stacks.append([i])
    return stacks


def _marks(marks: Sequence[Mark], x: Callable[[float], float], colours: dict[str, str]) -> tuple[list[str], int]:
    """The marks' SVG, each at its reading (flagged ones last, on top), and how many GPUs share a place with
    another. Marks are never moved off their readings: where several fall on one place (eight GPUs of a node
    that read alike), a count beside it says how many (``class="stack"``, its hover text names them), and the
    circles are half transparent so that near ones show as a darker blot."""
    ordered = sorted(marks, key=lambda m: (bool(m.codes), m.host, m.index))
    spots = [(x(m.x_pct), _y(m.y_pct)) for m in ordered]
    parts = []
    for m, (cx, cy) in zip(ordered, spots, strict=True):
        common = (f'data-host="{escape(m.host)}" data-gpu="{m.index}" data-sm="{escape(m.sm)}" '
                  f'fill="{colours.get(m.sm, UNKNOWN_SM_COLOUR)}"')
        title = f"<title>{escape(m.title)}</title>"
        if m.codes:
            codes = " ".join(m.codes)
            parts.append(f'<path class="gpu flagged" {common} data-codes="{escape(codes)}" '
                         f'd="{_diamond(cx, cy, RADIUS)}" stroke="#000" stroke-width="1.5">{title}</path>')
        else:
            parts.append(f'<circle class="gpu" {common} cx="{cx:.1f}" cy="{cy:.1f}" r="{RADIUS:g}" '
                         f'fill-opacity="{UNFLAGGED_OPACITY}" stroke="{UNFLAGGED_STROKE}">{title}</circle>')
    shared = 0
    labels: list[tuple[float, float]] = []
    for stack in _stacks(spots):
        if len(stack) < 2:
            continue
        shared += len(stack)
        lx = max(spots[i][0] for i in stack) + RADIUS + 3
        ly = min(spots[i][1] for i in stack) - RADIUS + 4
        while any(abs(lx - ox) < 3 * LABEL_H and abs(ly - oy) < LABEL_H for ox, oy in labels):
            ly -= LABEL_H  # above the count it would cover
        labels.append((lx, ly))
        names = ", ".join(f"{ordered[i].host} GPU {ordered[i].index}" for i in stack)
        parts.append(f'<text class="stack" x="{lx:.1f}" y="{ly:.1f}" font-size="11">×{len(stack)}'
                     f"<title>{len(stack)} GPUs here cover one another: {escape(names)}</title></text>")
    return parts, shared


def _svg(chart_id: str, label: str, body: list[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" id="{chart_id}" width="{WIDTH}" height="{HEIGHT}" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{label}">' + "".join(body) + "</svg>")


def _title(host: str, gpu: GpuReading, what: str, codes: tuple[str, ...], why_not: str) -> str:
    flagged = f"; flagged: {', '.join(codes)}" if codes else why_not
    return f"{host} GPU {gpu.index} ({gpu.name or gpu.sm or 'unknown'}): {what}{flagged}"


def utilization_point(gpu: GpuReading) -> tuple[float, float] | None:
    """(utilization %, power % of the enforced limit), or None when either is not reported."""
    power = gpu.power()
    if gpu.utilization_pct is None or power is None or power.pct_of_limit is None:
        return None
    return gpu.utilization_pct, power.pct_of_limit


def _why_not(gpu: GpuReading, util: float, share: float, s: CheckSettings) -> str:
    """For an unflagged GPU inside the shaded region: why BUSY_LOW_POWER did not flag it."""
    if util < s.busy_utilization_pct or share > s.low_power_pct:
        return ""
    if gpu.sm_active_pct is not None:
        return f"; in the region, not flagged: SM activity {gpu.sm_active_pct:g}% measured (not starved)"
    mem = gpu.memory_utilization_pct
    if mem is not None and mem >= s.bandwidth_memory_utilization_pct:
        return f"; in the region, not flagged: memory {mem:g}% busy (bandwidth-bound)"
    return "; in the region, not flagged (a slowdown reason explains it)"


def unflagged_in_region(report: SweepReport) -> int:
    """How many GPUs sit in the shaded region that BUSY_LOW_POWER did not flag (memory-bound, SMs measured)."""
    s, codes = shaded_settings(report), flagged_codes(report)
    count = 0
    for host in report.hosts:
        for gpu in host.gpus:
            point = utilization_point(gpu)
            if point and point[0] >= s.busy_utilization_pct and point[1] <= s.low_power_pct \
                    and "BUSY_LOW_POWER" not in codes.get((host.host, gpu.index), ()):
                count += 1
    return count


def scatter_svg(report: SweepReport) -> str:
    """The utilization × power-share scatter (``#scatter``): one mark (``class="gpu"``) per GPU that has both
    readings, the BUSY_LOW_POWER region the run's thresholds define shaded."""
    return scatter_chart(report)[0]


def scatter_chart(report: SweepReport) -> tuple[str, int]:
    """:func:`scatter_svg`, and how many GPUs share a place with another (a count beside the mark)."""
    colours, s, codes = sm_colours(report), shaded_settings(report), flagged_codes(report)
    knee = utilization_knee(s)
    x = knee_x(knee)
    busy, low = s.busy_utilization_pct, s.low_power_pct
    marks = []
    for host in report.hosts:
        for gpu in host.gpus:
            point = utilization_point(gpu)
            if point is None:
                continue
            util, share = point
            found = codes.get((host.host, gpu.index), ())
            what = f"{util:g}% utilization, {share:g}% of its enforced power limit"
            marks.append(Mark(host=host.host, index=gpu.index, sm=gpu.sm or "unknown", x_pct=util, y_pct=share,
                              title=_title(host.host, gpu, what, found,
                                           "" if found else _why_not(gpu, util, share, s)), codes=found))
    body = [f'<rect class="busy-low-power" x="{x(busy):.1f}" y="{_y(low):.1f}" width="{x(100) - x(busy):.1f}" '
            f'height="{_y(0) - _y(low):.1f}" fill="#d55e00" fill-opacity="0.12" stroke="#d55e00" '
            f'stroke-dasharray="4 3"><title>BUSY_LOW_POWER: utilization at least {busy:g}% and power under '
            f'{low:g}% of the enforced limit</title></rect>',
            f'<text x="{x(busy) - 4:.1f}" y="{_y(low) + 14:.1f}" text-anchor="end">BUSY_LOW_POWER</text>']
    ticks = [*range(0, int(knee) + 1, 20 if knee > 40 else 10)] if knee else [*range(0, 101, 20)]
    if knee:
        ticks = sorted({*ticks, knee, *(t for t in range(int(knee), 101, 5 if 100 - knee <= 30 else 10))})
    body += _axes(x, ticks, "GPU utilization (%)", knee)
    parts, shared = _marks(marks, x, colours)
    return _svg("scatter", "GPU utilization against power share", body + parts), shared


def sm_activity_svg(report: SweepReport) -> tuple[str, int, int]:
    """Where SM activity was measured: SM activity × power share (``#sm-activity``), with the starved region
    (SM activity under ``starved_sm_activity_pct``) shaded; the SVG, the GPUs plotted and those that share a
    place with another.
    Empty when no GPU measured it."""
    colours, s, codes = sm_colours(report), shaded_settings(report), flagged_codes(report)
    marks = []
    for host in report.hosts:
        for gpu in host.gpus:
            power = gpu.power()
            if gpu.sm_active_pct is None or power is None or power.pct_of_limit is None:
                continue
            share = power.pct_of_limit
            found = codes.get((host.host, gpu.index), ())
            what = (f"SM activity {gpu.sm_active_pct:g}% ({gpu.sm_activity_from or 'measured'}), {share:g}% of "
                    f"its enforced power limit, utilization "
                    f"{'not reported' if gpu.utilization_pct is None else f'{gpu.utilization_pct:g}%'}")
            marks.append(Mark(host=host.host, index=gpu.index, sm=gpu.sm or "unknown", x_pct=gpu.sm_active_pct,
                              y_pct=share, title=_title(host.host, gpu, what, found, ""), codes=found))
    if not marks:
        return "", 0, 0
    starved = s.starved_sm_activity_pct
    body = [f'<rect class="starved" x="{linear_x(0):.1f}" y="{_y(Y_MAX_PCT):.1f}" '
            f'width="{linear_x(starved) - linear_x(0):.1f}" height="{_y(0) - _y(Y_MAX_PCT):.1f}" fill="#d55e00" '
            f'fill-opacity="0.12" stroke="#d55e00" stroke-dasharray="4 3"><title>BUSY_LOW_POWER where SM activity '
            f"is measured: a busy GPU whose SMs are active under {starved:g}% is starved whatever its power"
            "</title></rect>",
            f'<text x="{linear_x(starved) + 4:.1f}" y="{_y(Y_MAX_PCT) + 26:.1f}">starved if busy: under '
            f"{starved:g}%</text>"]
    body += _axes(linear_x, range(0, 101, 20), "SM activity (%, NVML GPM / DCGM)", None)
    parts, shared = _marks(marks, linear_x, colours)
    return _svg("sm-activity", "SM activity against power share", body + parts), len(marks), shared
