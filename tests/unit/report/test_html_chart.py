"""The HTML page tells the truth at a glance (issue 19, item 7): one mark per GPU, flagged GPUs drawn apart from
the rest, no mark hidden under another, busy GPUs spread out rather than piled on the right edge, SM activity
charted where it was measured, the findings and the changes folded by GPU, and a reason for every host that
was not read."""

from __future__ import annotations

import itertools
import math
import re

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
from gpudiag.report.html_chart import RADIUS, dodge, knee_x, scatter_svg, sm_activity_svg, utilization_knee


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


def test_eight_alike_gpus_are_eight_visible_marks_and_the_flagged_ones_are_diamonds() -> None:
    gpus = tuple(_gpu(i) for i in range(8))  # every GPU reads alike: one dot before
    host = _node("gpu01", gpus, tuple(_busy_low("gpu01", i) for i in (2, 5)))
    svg = scatter_svg(_report(host))
    assert svg.count('class="gpu') == 8
    assert svg.count('<path class="gpu flagged"') == 2 and svg.count('<circle class="gpu"') == 6
    assert re.findall(r'data-gpu="(\d)" data-sm="SM90" fill="[^"]+" data-codes="BUSY_LOW_POWER"', svg) == ["2", "5"]
    centres = _centres(svg)
    assert len(centres) == 8
    assert all(math.dist(a, b) >= 2 * RADIUS for a, b in itertools.combinations(centres, 2))
    assert "flagged: BUSY_LOW_POWER</title>" in svg


def test_dodge_leaves_free_points_alone_and_parts_the_rest() -> None:
    spots = dodge([(100.0, 100.0), (300.0, 100.0), (100.0, 100.0), (100.0, 100.0)], 0, 600, 0, 400)
    assert spots[0] == (100.0, 100.0) and spots[1] == (300.0, 100.0)
    assert all(math.dist(a, b) >= 2 * RADIUS + 1 - 1e-6 for a, b in itertools.combinations(spots, 2))
    assert all(math.dist(s, (100.0, 100.0)) <= 2 * (2 * RADIUS + 1) for s in spots[2:])  # near, not flung away
    edge = dodge([(600.0, 400.0)] * 3, 0, 600, 0, 400)  # a corner: the moved ones stay in the box
    assert all(0 <= x <= 600 and 0 <= y <= 400 for x, y in edge)
    walled = dodge([(300.0, 101.0)] * 6 + [(300.0, 99.0)] * 6, 0, 600, 0, 400, walls_y=(100.0,), walls_x=(310.0,))
    assert all(y > 100 and x < 310 for x, y in walled[:6]) and all(y < 100 and x < 310 for x, y in walled[6:])


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


def test_a_flagged_gpu_is_nudged_sideways_not_out_of_the_region() -> None:
    s = CheckSettings()
    gpus = tuple(_gpu(i, power_w=700.0 * (s.low_power_pct - 1) / 100) for i in range(8))  # just inside
    svg = scatter_svg(_report(_node("gpu01", gpus, tuple(_busy_low("gpu01", i) for i in range(8)))))
    top = float(re.search(r'<rect class="busy-low-power" x="[\d.]+" y="([\d.]+)"', svg).group(1))  # type: ignore[union-attr]
    assert all(y >= top for _, y in _centres(svg))
