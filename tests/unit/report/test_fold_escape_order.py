"""A long folded host list is escaped first, then wrapped (issue 30, fault matrix #9). Before, the wrap's line
breaks were escaped with the names: a literal ``\\x0a`` inside host names (4,375 of them at 100,000 hosts),
names no grep could find. Now every break is a real one, and a name's own control character stays escaped."""

from __future__ import annotations

from builders import host_report, sweep

from gpudiag.model import HostStatus
from gpudiag.report.table import render_table


def test_a_long_list_of_hosts_not_read_wraps_with_real_line_breaks() -> None:
    names = [f"rack{r:02d}-{kind}{n:03d}" for r in range(40) for kind in ("gpu", "cpu", "io") for n in (1, 5, 9)]
    names.append("evil\x1b[31mhost")
    report = sweep(*(host_report(name, status=HostStatus.TIMEOUT, error="no answer within 30 s") for name in names))
    table = render_table(report, width=80)
    assert "\\x0a" not in table
    assert "evil\\x1b[31mhost" in table and "\x1b" not in table  # the name's own escape: escaped
    lines = table.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert any(line.startswith("rack") and "(361 hosts)" not in line for line in lines)
    assert sum(line.count("rack") for line in lines) >= 40  # every rack is named, one range each at least
