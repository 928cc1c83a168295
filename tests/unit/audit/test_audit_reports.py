"""The scheduled audit's pure parts: the Prometheus text, the HTML page's scatter, the --only-changes text and
the JSON's change fields, the flags' checks and durations, what is notified."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import finding, gpu, host_report, sweep

from gpudiag.audit.changes import compare
from gpudiag.audit.history import History
from gpudiag.audit.scheduled import AuditConfigError, AuditOptions, audit, check, parse_duration, to_send
from gpudiag.model import HostStatus, Severity
from gpudiag.model.changes import ChangeState, OpenFinding, PastRun
from gpudiag.model.request import OutputRequest
from gpudiag.report import OutputFormat, render
from gpudiag.report.changes_report import annotate
from gpudiag.report.changes_text import render_changes
from gpudiag.report.html import render_html, scatter_svg
from gpudiag.report.json_report import to_document
from gpudiag.report.prometheus import escape_label, render_prometheus

T0 = 1_748_779_200.0


def report(**kw: object):  # type: ignore[no-untyped-def]
    return sweep(host_report("gpu01", gpus=[gpu(index=0), gpu(index=1, power_w=90.0, sm="SM120")],
                             findings=[finding(gpu=1)]),
                 host_report("gpu02", status=HostStatus.TIMEOUT,
                             findings=[finding(host="gpu02", gpu=None, code="HOST_UNREACHABLE")]), **kw)


def test_prometheus_text() -> None:
    text = render_prometheus(report())
    lines = text.splitlines()
    assert text.endswith("\n")
    assert "# TYPE gpudiag_gpu_power_watts gauge" in lines
    labels = 'host="gpu01",gpu="1",uuid="GPU-00000000-0000-0000-0000-000000000001",sm="SM120"'
    assert f"gpudiag_gpu_power_watts{{{labels}}} 90.0" in lines
    # the share unrounded (90/700), not the JSON's one-decimal percent divided by 100
    assert f"gpudiag_gpu_power_limit_ratio{{{labels}}} {90.0 / 700.0!r}" in lines
    assert 'gpudiag_finding{host="gpu01",gpu="1",code="BUSY_LOW_POWER",severity="critical"} 1' in lines
    assert 'gpudiag_host_status{host="gpu02",status="timeout"} 1' in lines
    assert "gpudiag_run_exit_code 2" in lines
    names = {line.split("{")[0].split(" ")[0] for line in lines if not line.startswith("#")}
    helped = {line.split(" ")[2] for line in lines if line.startswith("# HELP")}
    assert names <= helped
    assert escape_label('a"b\\c\nd') == 'a\\"b\\\\c\\nd'


def test_html_scatter_has_one_point_per_gpu_and_escapes() -> None:
    odd = sweep(host_report("<b>gpu&1</b>", gpus=[gpu(index=0), gpu(index=1, utilization_pct=None)]))
    svg = scatter_svg(odd)
    assert svg.count('<circle class="gpu"') == 1 and "&lt;b&gt;gpu&amp;1&lt;/b&gt; GPU 0" in svg
    page = render_html(odd)
    assert "<b>gpu" not in page and "1 GPU not plotted" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page
    assert render(odd, OutputFormat.HTML) == page


def test_changes_text_and_json(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.sqlite") as history:
        history.record(sweep(host_report("gpu01", gpus=[gpu(index=0), gpu(index=1)]),
                             host_report("gpu02", gpus=[gpu(index=0)])), now_s=T0)
        now = report(started_at="2025-06-01T12:05:00Z")
        changes = history.record(now, now_s=T0).changes
    text = render_changes(changes)
    assert text.splitlines() == [
        "gpudiag 2025-06-01T12:05:00Z: 2 new, 0 resolved since 2025-06-01T12:00:00Z",
        "NEW       CRITICAL gpu01 GPU 1  BUSY_LOW_POWER  action: none",
        "    GPU 0 reads 100% utilization but draws 13% of its 700 W limit.",
        "NEW       CRITICAL gpu02  HOST_UNREACHABLE  action: none",  # a hand-built finding: no rung
        "    GPU 0 reads 100% utilization but draws 13% of its 700 W limit.",
        "AWAY               gpu02  does not answer (timeout)  action: check_node"]
    doc = annotate(to_document(now), now, changes, 2)
    assert doc["hosts"][0]["findings"][0]["change"] == {"state": "new", "since": "2025-06-01T12:05:00Z", "runs": 1,
                                                        "flapping": False}
    assert doc["changes"]["hosts"] == [{"host": "gpu02", "status": "timeout", "previous_status": "ok",
                                        "came_back": False}]
    assert doc["history"] == {"run": 2} and json.dumps(doc)
    # One list of every change: the new findings too (not only marked on each finding), and the host gone.
    assert [(c["change"], c["host"], c["code"]) for c in doc["changes"]["changes"]] == [
        ("new", "gpu01", "BUSY_LOW_POWER"), ("new", "gpu02", "HOST_UNREACHABLE"), ("host_gone", "gpu02", None)]
    assert [f["state"] for f in doc["changes"]["findings"]] == ["new", "new"]


def test_flags_that_cannot_work_are_one_line() -> None:
    assert parse_duration("12h") == 43200 and parse_duration("90") == 90 and parse_duration("1.5d") == 129600
    for bad in ("", "12x", "-1h", "0"):
        with pytest.raises(AuditConfigError, match=r"^--renotify .*: expected a duration such as 90s"):
            parse_duration(bad)
    cases = [(AuditOptions(notify_urls=("https://x",)), "--notify needs --history PATH"),
             (AuditOptions(history=Path("h"), keep_days=0), "--keep-days 0: expected a number of days above 0"),
             (AuditOptions(prom_file=Path("x.txt")), "--prom-file x.txt: node_exporter reads only *.prom files"),
             (AuditOptions(history=Path("h"), notify_urls=("hooks.example.org",)), "--notify hooks.example.org: "
              "expected a URL"),
             (AuditOptions(history=Path("h"), notify_cmd="'unclosed"), "--notify-cmd: No closing quotation")]
    for options, message in cases:
        with pytest.raises(AuditConfigError) as info:
            check(options, OutputFormat.TABLE)
        assert str(info.value).startswith(message)
    with pytest.raises(AuditConfigError, match="--format html writes a file: give --output FILE"):
        check(AuditOptions(), OutputFormat.HTML)


def test_what_is_notified() -> None:
    fp0 = "gpu01|index:0|BUSY_LOW_POWER"
    past = (PastRun(run_id=1, started_at="2025-06-01T11:55:00Z", host_status={"gpu01": "ok"}, findings=(
        OpenFinding(fingerprint=fp0, code="BUSY_LOW_POWER", severity=Severity.CRITICAL, host="gpu01", gpu=0,
                    gpu_key="index:0", summary="s", since="2025-06-01T11:55:00Z", runs=1),)),)
    now = sweep(host_report("gpu01", gpus=[gpu(index=0), gpu(index=1)], findings=[finding(gpu=0), finding(gpu=1)]))
    changes = compare(now, past)
    assert [c.state for c in changes.findings] == [ChangeState.NEW, ChangeState.ONGOING]
    chosen, again = to_send(changes, {fp0: T0}, 3600, T0 + 1800)
    assert [c.state for c in chosen] == [ChangeState.NEW] and again == frozenset()
    chosen, again = to_send(changes, {fp0: T0}, 3600, T0 + 3600)
    assert [c.state for c in chosen] == [ChangeState.NEW, ChangeState.ONGOING] and again == {fp0}
    assert to_send(changes, {fp0: T0}, None, T0 + 10**6)[0] == chosen[:1]


def test_output_and_quiet_without_history(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    outcome = audit(report(), OutputRequest(format=OutputFormat.JSON, quiet=True), AuditOptions(output=out))
    assert (outcome.stdout, outcome.exit_code) == ("", 2)
    assert json.loads(out.read_text())["schema"] == "gpudiag.sweep/4"
    shown = audit(report(), OutputRequest(format=OutputFormat.JSON), AuditOptions())
    assert json.loads(shown.stdout) == json.loads(out.read_text())


def test_html_with_history_has_a_sparkline_per_flagged_gpu(tmp_path: Path) -> None:
    options = AuditOptions(history=tmp_path / "h.sqlite", output=tmp_path / "r.html")
    for minute, watts in ((0, 650.0), (5, 300.0), (10, 90.0)):
        run = sweep(host_report("gpu01", gpus=[gpu(index=0), gpu(index=1, power_w=watts)],
                                findings=[finding(gpu=1)] if watts < 400 else []),
                    started_at=f"2025-06-01T12:{minute:02d}:00Z")
        outcome = audit(run, OutputRequest(format=OutputFormat.HTML), options, clock=lambda: T0)
    page = (tmp_path / "r.html").read_text()
    assert outcome.stdout.startswith("wrote ") and page.count('<svg class="sparkline"') == 2  # utilization, power
    trends = page.split('<table id="trends">')[1].split("</table>")[0]
    assert "gpu01 GPU 1" in trends and "gpu01 GPU 0" not in trends and "power, % of enforced limit: 12.9 now" in trends
    assert trends.count("<polyline") == 2
