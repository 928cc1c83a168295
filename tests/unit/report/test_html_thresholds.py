"""The HTML page shows the thresholds its run used: the scatter shades the BUSY_LOW_POWER region they define
(``--low-power-pct 40``: under 40%, not the default 60%), and a table lists them beside the defaults."""

from __future__ import annotations

import re

from gpudiag.model import CheckSettings, GpuReading, HostReport, HostStatus, NodeReadings, SweepReport
from gpudiag.report import OutputFormat, render
from gpudiag.report.html_chart import HEIGHT, PAD, Y_MAX_PCT, scatter_svg


def _report(settings: CheckSettings | None) -> SweepReport:
    gpu = GpuReading(index=0, sm="SM90", utilization_pct=100.0, power_w=350.0, enforced_power_limit_w=700.0)
    host = HostReport(host="gpu01", address=None, status=HostStatus.OK, readings=NodeReadings(gpus=(gpu,)))
    return SweepReport(started_at="2026-01-01T00:00:00Z", duration_s=1.0, hosts=(host,), settings=settings)


def _region_top(svg: str) -> float:
    match = re.search(r'<rect class="busy-low-power" x="[\d.]+" y="([\d.]+)"', svg)
    assert match is not None
    return float(match.group(1))


def test_the_scatter_shades_the_runs_own_region() -> None:
    svg = scatter_svg(_report(CheckSettings(low_power_pct=40.0)))
    assert "utilization at least 90% and power under 40% of the enforced limit" in svg
    assert "under 60%" not in svg
    assert _region_top(svg) == round(HEIGHT - PAD - (HEIGHT - 2 * PAD) * 40.0 / Y_MAX_PCT, 1)
    assert _region_top(svg) > _region_top(scatter_svg(_report(CheckSettings())))  # a lower ceiling


def test_the_page_says_the_region_and_lists_the_thresholds() -> None:
    page = render(_report(CheckSettings(low_power_pct=40.0, busy_utilization_pct=80.0)), OutputFormat.HTML)
    assert "Shaded: BUSY_LOW_POWER, utilization at least 80% and power under 40% of the enforced limit." in page
    table = page.split('<table id="settings">')[1].split("</table>")[0]
    assert '<tr class="changed"><td>low_power_pct</td><td>40</td><td>60</td></tr>' in table
    assert '<tr class="changed"><td>busy_utilization_pct</td><td>80</td><td>90</td></tr>' in table
    assert "<tr><td>xid_storm_lines</td><td>20</td><td>20</td></tr>" in table  # a third column never empty
    assert "<tr><td>starved_sm_activity_pct</td><td>20</td><td>20</td></tr>" in table


def test_a_report_that_does_not_say_shades_the_defaults_and_says_so() -> None:
    page = render(_report(None), OutputFormat.HTML)
    assert "power under 60% of the enforced limit (the default thresholds)." in page
    assert "does not say which thresholds its checks used" in page and '<table id="settings">' not in page
