"""Notifications that do not repeat, sent to a real HTTP server on loopback: a finding still open is sent again
only after --renotify (an injected clock moves time); a failed notification is a line on stderr and in the
run's record, the run is kept, and the finding is sent on the next run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpudiag.audit.history import History
from gpudiag.audit.notify import apprise_available
from gpudiag.audit.scheduled import AuditOptions, audit, parse_duration
from gpudiag.model import Finding, GpuReading, HostReport, HostStatus, NodeReadings, Severity, SweepReport
from gpudiag.model.request import OutputRequest
from gpudiag.report import OutputFormat
from webhook import Webhook, running_webhook

pytestmark = pytest.mark.integration
T0 = 1_748_779_200.0
QUIET = OutputRequest(format=OutputFormat.TABLE, quiet=True)  # cron's --quiet


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    with running_webhook() as hook:
        yield hook


def run(minute: int, faulty: bool) -> SweepReport:
    findings = (Finding(code="ECC_UNCORRECTED", severity=Severity.CRITICAL, host="gpu01", gpu=0,
                        summary="2 uncorrected ECC errors"),) if faulty else ()
    host = HostReport(host="gpu01", address=None, status=HostStatus.OK, findings=findings,
                      readings=NodeReadings(gpus=(GpuReading(index=0, uuid="GPU-ab12"),)))
    return SweepReport(started_at=f"2025-06-01T{12 + minute // 60:02d}:{minute % 60:02d}:00Z", duration_s=1.0,
                       hosts=(host,))


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def test_renotify_after_the_window_with_an_injected_clock(tmp_path: Path, webhook: Webhook) -> None:
    options = AuditOptions(history=tmp_path / "h.sqlite", notify_urls=(webhook.url,),
                           renotify_s=parse_duration("12h"))
    clock = Clock()
    sent = []
    for hours, faulty in ((0, True), (1, True), (11, True), (12, True), (13, True), (24.5, True), (25, False)):
        clock.now = T0 + hours * 3600
        before = len(webhook.bodies)
        outcome = audit(run(int(hours * 2), faulty), QUIET, options, clock=clock)
        assert outcome.stderr == ()
        sent.append([(f["state"], f["renotify"]) for body in webhook.bodies[before:] for f in body["findings"]])
    assert sent == [[("new", False)], [], [], [("ongoing", True)], [], [("ongoing", True)], [("resolved", False)]]
    assert webhook.headers[0]["Content-Type"] == "application/json"


def test_a_failed_notification_is_reported_recorded_and_retried(tmp_path: Path, webhook: Webhook) -> None:
    options = AuditOptions(history=tmp_path / "h.sqlite", notify_urls=(webhook.url,))
    webhook.status = 503
    failed = audit(run(0, True), QUIET, options, clock=Clock())
    assert failed.exit_code == 2 and failed.run_id == 1
    assert failed.stderr == ("notification to http://127.0.0.1:" + webhook.url.split(":")[2].split("/")[0]
                             + " failed: HTTP 503 Service Unavailable",)
    with History.open(options.history) as history:  # type: ignore[arg-type]
        (recorded,) = history.runs()
    assert recorded["notify_errors"] == list(failed.stderr) and recorded["open_findings"] == 1

    webhook.status = 200
    retried = audit(run(1, True), QUIET, options, clock=Clock())
    assert retried.stderr == () and retried.run_id == 2
    assert [[(f["state"], f["code"]) for f in b["findings"]] for b in webhook.bodies] == [
        [("ongoing", "ECC_UNCORRECTED")]]  # never sent before, so sent now
    assert audit(run(2, True), QUIET, options, clock=Clock()).stderr == ()
    assert len(webhook.bodies) == 1  # and not again


def test_notify_cmd_failure_is_one_line(tmp_path: Path) -> None:
    options = AuditOptions(history=tmp_path / "h.sqlite", notify_cmd="false")
    outcome = audit(run(0, True), QUIET, options, clock=Clock())
    assert outcome.stderr == ("notification to --notify-cmd false failed: exited 1",) and outcome.exit_code == 2


def test_apprise_delivers_other_schemes(tmp_path: Path, webhook: Webhook) -> None:
    if not apprise_available():
        pytest.skip("Apprise not installed: pip install 'gpudiag[notify]'")
    url = "json://" + webhook.url.removeprefix("http://").split("?")[0]  # Apprise's JSON POST service
    options = AuditOptions(history=tmp_path / "h.sqlite", notify_urls=(url,))
    outcome = audit(run(0, True), QUIET, options, clock=Clock())
    assert outcome.stderr == ()
    (body,) = webhook.bodies
    assert body["title"] == "gpudiag: 1 new, 0 resolved, 0 still open"
    sent = json.loads(body["message"])
    assert [(f["state"], f["code"]) for f in sent["findings"]] == [("new", "ECC_UNCORRECTED")]


def test_only_changes_json_is_the_webhook_body_with_every_change_in_one_list(tmp_path: Path,
                                                                             webhook: Webhook) -> None:
    """--only-changes --format json prints the very document the webhook receives; its ``changes`` list holds
    every change: the new finding, then (the host gone) the carried one and host_gone, then host_back and the
    resolved one."""
    options = AuditOptions(history=tmp_path / "h.sqlite", notify_urls=(webhook.url,), only_changes=True)
    as_json = OutputRequest(format=OutputFormat.JSON)
    gone = SweepReport(started_at="2025-06-01T12:05:00Z", duration_s=1.0, hosts=(HostReport(
        host="gpu01", address=None, status=HostStatus.UNREACHABLE, error="connection refused"),))
    seen = []
    for report in (run(0, True), gone, run(10, False)):
        outcome = audit(report, as_json, options, clock=Clock())
        assert outcome.stderr == ()
        assert json.loads(outcome.stdout) == webhook.bodies[-1]
        seen.append(sorted((c["change"], c["code"] or "") for c in webhook.bodies[-1]["changes"]))
    assert len(webhook.bodies) == 3
    assert seen[0] == [("new", "ECC_UNCORRECTED")]
    assert seen[1] == [("carried", "ECC_UNCORRECTED"), ("host_gone", "")]
    assert seen[2] == [("host_back", ""), ("resolved", "ECC_UNCORRECTED")]


def test_the_webhook_carries_each_findings_action_and_the_hosts_and_a_repeat_raised(tmp_path: Path,
                                                                                     webhook: Webhook) -> None:
    """The body a real HTTP server receives: each finding's action and each named host's action; the third
    time this week the GPU needs a reset (as `gpudiag sweep --history` raises it before the audit step), the
    body says reboot_node; a resolved finding's host reads none. (The new/resolved pairs flap by then: the
    rule of --flap-changes, so the sixth day's resolution is not sent.)"""
    from gpudiag.audit.repeats import escalate_with_history
    from gpudiag.model import Action
    from gpudiag.model.changes import epoch_of

    options = AuditOptions(history=tmp_path / "h.sqlite", notify_urls=(webhook.url,))
    days = ((1, True), (2, False), (3, True), (4, False), (5, True))
    for day, faulty in days:
        report = run(0, faulty)
        report = SweepReport(started_at=f"2025-06-0{day}T12:00:00Z", duration_s=1.0, hosts=tuple(
            HostReport(host=h.host, address=None, status=h.status, readings=h.readings,
                       findings=tuple(Finding(code=f.code, severity=f.severity, host=f.host, gpu=f.gpu,
                                              summary=f.summary, action=Action.RESET_GPU) for f in h.findings))
            for h in report.hosts))
        now = epoch_of(report.started_at)
        report = escalate_with_history(report, options.history, now_s=now)  # type: ignore[arg-type]
        assert audit(report, QUIET, options, clock=lambda now=now: now).stderr == ()
    bodies = webhook.bodies
    assert [(b["host_actions"], [(f["state"], f["action"]) for f in b["findings"]]) for b in bodies] == [
        ({"gpu01": "reset_gpu"}, [("new", "reset_gpu")]),
        ({"gpu01": "none"}, [("resolved", "reset_gpu")]),
        ({"gpu01": "reset_gpu"}, [("new", "reset_gpu")]),
        ({"gpu01": "none"}, [("resolved", "reset_gpu")]),
        ({"gpu01": "reboot_node"}, [("new", "reboot_node")])]
    assert bodies[4]["findings"][0]["summary"] == (
        "2 uncorrected ECC errors; needed a reset 3 times this week, so reboot_node")
