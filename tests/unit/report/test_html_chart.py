"""The HTML page tells the truth at a glance (issue 19, item 7): one mark per GPU, flagged GPUs drawn apart from
the rest, no mark hidden under another, busy GPUs spread out rather than piled on the right edge, SM activity
charted where it was measured, the findings and the changes folded by GPU, and a reason for every host that
was not read."""

from __future__ import annotations

import re

import pytest

from gpudiag.model import (
    CheckSettings,
    Finding,
    GpuReading,
    HostReport,
    HostStatus,
    NodeReadings,
    Severity,
    SweepReport,
    UnreachableReason,
)
from gpudiag.model.changes import ChangeSet, ChangeState, FindingChange, OpenFinding
from gpudiag.report.html import render_html
from gpudiag.report.html_chart import (
    _y,
    knee_x,
    scatter_svg,
    sm_activity_svg,
    utilization_knee,
    utilization_point,
)


def _gpu(index: int, util: float = 100.0, power_w: float = 350.0, **kw: object) -> GpuReading:
    return GpuReading(index=index, sm="SM90", utilization_pct=util, power_w=power_w, enforced_power_limit_w=700.0,
                      **kw)  # type: ignore[arg-type]


def _busy_low(host: str, gpu: int) -> Finding:
    return Finding(code="BUSY_LOW_POWER", severity=Severity.WARNING, host=host, gpu=gpu,
                   summary=f"reads 100% busy but draws 350 W (gpu {gpu})")


def _report(*hosts: HostReport, settings: CheckSettings | None = None) -> SweepReport:
    return SweepReport(started_at="2026-01-01T00:00:00Z", duration_s=1.0, hosts=hosts,
                       settings=settings or CheckSettings())


def _node(name: str, gpus: tuple[GpuReading, ...], findings: tuple[Finding, ...] = ()) -> HostReport:
    return HostReport(host=name, address=None, status=HostStatus.OK, readings=NodeReadings(gpus=gpus),
                      findings=findings)


def _centres(svg: str) -> list[tuple[float, float]]:
    """Each mark's centre: a circle's cx, cy; a diamond's (``M cx top L right cy ...``)."""
    circles = re.findall(r'<circle class="gpu"[^>]* cx="([\d.]+)" cy="([\d.]+)"', svg)
    diamonds = re.findall(r'<path class="gpu flagged"[^>]* d="M([\d.]+) [\d.]+L[\d.]+ ([\d.]+)L', svg)
    return [(float(x), float(y)) for x, y in circles + diamonds]


def test_eight_alike_gpus_are_eight_marks_at_their_reading_with_a_count() -> None:
    """Issue 30 #7: every mark at its reading. Before, marks were nudged apart: 35 of the demo's 40 moved,
    idle GPUs at 0% drawn at 0-21%, one above 100% of its power limit."""
    gpus = tuple(_gpu(i) for i in range(8))  # every GPU reads alike
    host = _node("gpu01", gpus, tuple(_busy_low("gpu01", i) for i in (2, 5)))
    report = _report(host)
    svg = scatter_svg(report)
    assert svg.count('class="gpu') == 8
    assert svg.count('<path class="gpu flagged"') == 2 and svg.count('<circle class="gpu"') == 6
    assert re.findall(r'data-gpu="(\d)" data-sm="SM90" fill="[^"]+" data-codes="BUSY_LOW_POWER"', svg) == ["2", "5"]
    x = knee_x(utilization_knee(CheckSettings()))
    util, share = utilization_point(gpus[0])  # type: ignore[misc]
    assert set(_centres(svg)) == {(round(x(util), 1), round(_y(share), 1))}  # all eight at the one reading
    assert svg.count('<text class="stack"') == 1 and ">×8<title>8 GPUs here cover one another: gpu01 GPU 0, " in svg
    assert "flagged: BUSY_LOW_POWER</title>" in svg
    assert "8 GPUs share a place with another" in render_html(report)


@pytest.mark.parametrize(("util", "watts"), [(0.0, 70.0), (0.0, 0.0), (100.0, 700.0), (37.5, 350.0)])
def test_a_mark_is_drawn_exactly_at_its_reading(util: float, watts: float) -> None:
    gpus = tuple(_gpu(i, util=util + i * 0.01, power_w=watts) for i in range(8))
    svg = scatter_svg(_report(_node("gpu01", gpus)))
    x = knee_x(utilization_knee(CheckSettings()))
    expected = sorted((round(x(utilization_point(g)[0]), 1), round(_y(utilization_point(g)[1]), 1))  # type: ignore[index]
                      for g in gpus)
    assert sorted(_centres(svg)) == expected
    assert all(_y(100.0) <= cy for _, cy in _centres(svg)) or watts > 700.0  # never above 100% unless it read so


def test_busy_gpus_spread_out_above_the_knee() -> None:
    settings = CheckSettings()
    assert utilization_knee(settings) == 80.0 and utilization_knee(CheckSettings(busy_utilization_pct=50)) == 40.0
    x = knee_x(utilization_knee(settings))
    assert x(100) - x(97) > 40  # 3 points of utilization: was 16 px on a linear axis
    assert x(0) < x(40) < x(80) < x(90) < x(100)
    svg = scatter_svg(_report(_node("gpu01", (_gpu(0, util=97.0), _gpu(1, util=100.0)))))
    assert "scale widens above 80%" in svg


def test_an_unflagged_gpu_inside_the_region_says_why() -> None:
    host = _node("gpu01", (_gpu(0, memory_utilization_pct=99.0),))
    svg = scatter_svg(_report(host))
    assert "in the region, not flagged: memory 99% busy (bandwidth-bound)" in svg
    assert "1 GPU in it not flagged" in render_html(_report(host))


def test_sm_activity_is_charted_only_where_it_was_measured() -> None:
    plain = _report(_node("gpu01", (_gpu(0),)))
    assert sm_activity_svg(plain) == ("", 0, 0) and 'id="sm-activity"' not in render_html(plain)
    measured = _report(_node("gpu01", (_gpu(0, sm_active_pct=4.0, sm_activity_from="nvml gpm"),
                                       _gpu(1, sm_active_pct=92.0, sm_activity_from="nvml gpm"), _gpu(2)),
                             (_busy_low("gpu01", 0),)), settings=CheckSettings(starved_sm_activity_pct=30.0))
    svg, plotted, _ = sm_activity_svg(measured)
    assert plotted == 2 and svg.count('class="gpu') == 2 and svg.count('class="gpu flagged"') == 1
    assert "SM activity 4% (nvml gpm), 50% of its enforced power limit" in svg
    assert "starved if busy: under 30%" in svg
    page = render_html(measured)
    assert 'id="sm-activity"' in page and "SM activity measured on 2 GPUs" in page


def test_the_findings_table_comes_first_and_folds_gpus() -> None:
    host = _node("gpu01", tuple(_gpu(i) for i in range(8)), tuple(_busy_low("gpu01", i) for i in range(8)))
    page = render_html(_report(host))
    assert page.index('<table id="findings">') < page.index('id="scatter"')
    table = page.split('<table id="findings">')[1].split("</table>")[0]
    assert table.count("<tr>") == 2  # the head and one folded row
    assert '<td class="gpus">0-7 (8)</td>' in table and table.count("<li>") == 8
    assert "GPU 0: reads 100% busy but draws 350 W (gpu 0)</summary>" in table


def _open(gpu: int | None, code: str = "BUSY_LOW_POWER", host: str = "gpu01") -> OpenFinding:
    return OpenFinding(fingerprint=f"{host}|{code}|{gpu}", code=code, severity=Severity.WARNING, host=host, gpu=gpu,
                       gpu_key=str(gpu), summary="s", since="2026-01-01T00:00:00Z", runs=2)


def test_the_changes_table_folds_gpus_into_one_row() -> None:
    changes = ChangeSet(started_at="2026-01-01T00:05:00Z", previous_started_at="2026-01-01T00:00:00Z",
                        findings=(*(FindingChange(state=ChangeState.ONGOING, finding=_open(i)) for i in range(8)),
                                  FindingChange(state=ChangeState.NEW, finding=_open(None, "XID", "gpu02"))))
    page = render_html(_report(_node("gpu01", (_gpu(0),))), changes)
    table = page.split('<table id="changes">')[1].split("</table>")[0]
    assert "<th>GPUs</th>" in table and table.count("<tr>") == 3
    rows = table.split("<tr>")[2:]
    assert rows[0].startswith("<td>new</td>") and "XID" in rows[0]
    assert '<td class="gpus">0-7 (8)</td><td class="nowrap">BUSY_LOW_POWER</td>' in rows[1]


def test_every_host_not_read_says_why() -> None:
    hosts = (HostReport(host="gpu01", address="10.0.0.1", status=HostStatus.UNREACHABLE,
                        error="connection refused by 10.0.0.1:22", unreachable_reason=UnreachableReason.REFUSED),
             HostReport(host="gpu02", address=None, status=HostStatus.TIMEOUT, error="no answer within 30 s"),
             HostReport(host="gpu03", address=None, status=HostStatus.CANCELLED),
             HostReport(host="gpu04", address=None, status=HostStatus.AUTH_FAILED, scheduler_state="drained",
                        scheduler_reason="bad gpu"),
             _node("gpu05", (_gpu(0),)))
    page = render_html(_report(*hosts))
    table = page.split('<table id="not-read">')[1].split("</table>")[0]
    assert table.count("<tr>") == 5 and "gpu05" not in table
    assert "refused: connection refused by 10.0.0.1:22" in table and "no answer within 30 s" in table
    assert "the sweep was stopped before it answered" in table
    assert "no reason recorded; scheduler: drained (bad gpu)" in table
    assert "<td>refused: connection refused by 10.0.0.1:22</td></tr>" in page.split('<table id="hosts">')[1]


def test_a_host_read_in_part_says_what_is_missing() -> None:
    lost = Finding(code="GPU_LOST", severity=Severity.CRITICAL, host="gpu01", gpu=3, summary="GPU 3 is lost")
    host = HostReport(host="gpu01", address=None, status=HostStatus.PARTIAL, readings=NodeReadings(gpus=(_gpu(0),)),
                      findings=(lost, _busy_low("gpu01", 0)))
    table = render_html(_report(host)).split('<table id="not-read">')[1].split("</table>")[0]
    assert "<td>partial</td>" in table and "GPU_LOST (GPU 3): GPU 3 is lost" in table and "BUSY" not in table


def test_the_legend_draws_the_marks_as_the_chart_does() -> None:
    page = render_html(_report(_node("gpu01", (_gpu(0),))))
    legend = page.split('<p class="legend">')[1].split("</p>")[0]
    circle = re.search(r'<circle class="gpu"[^>]* fill-opacity="([\d.]+)" stroke="([^"]+)"', page)
    assert circle is not None
    assert f'fill-opacity="{circle.group(1)}" stroke="{circle.group(2)}"/></svg> not flagged' in legend
