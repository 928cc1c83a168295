"""The action ladder's rules, as docs/findings.md ("The ladder's rules") states them (issue 30 #5). Before, a
dead node's action was ``none`` everywhere (Prometheus rung 0: ``gpudiag_host_action >= 3`` never fired on
it), and the summary said "5 ok" beside a host with a critical ECC error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from builders import gpu, host_report, sweep

from gpudiag.checks import evaluate
from gpudiag.checks.actions import action_of
from gpudiag.checks.settings import CheckSettings
from gpudiag.model import Action, Finding, HostReport, HostStatus, Severity
from gpudiag.report.prometheus import families
from gpudiag.report.table import render_summary_line, render_table

REPO = Path(__file__).resolve().parents[3]
ALERT = 3  # the documented alert: gpudiag_host_action >= 3


def finding(code: str, severity: Severity = Severity.CRITICAL, **evidence: object) -> Finding:
    return Finding(code=code, severity=severity, host="h", gpu=0, summary="s", evidence=evidence)


def test_rule_1_the_rungs_in_order_of_work() -> None:
    assert [a.rank for a in Action] == list(range(len(Action)))
    text = (REPO / "docs" / "findings.md").read_text()
    documented = re.findall(r"^\| (\d) \| `([a-z_]+)` \|", text, re.MULTILINE)
    assert documented == [(str(a.rank), a.label) for a in Action]


@pytest.mark.parametrize("code", ["ECC_UNCORRECTED", "ROW_REMAP_PENDING", "GPU_LOST", "ROW_REMAP_FAILED",
                                  "NVLINK_DOWN", "DRIVER_ERROR"])
def test_rule_2_what_harms_data_or_jobs_alerts(code: str) -> None:
    assert action_of(finding(code)).rank >= ALERT


@pytest.mark.parametrize("status", [s for s in HostStatus if not s.answered and s is not HostStatus.CANCELLED])
def test_rule_3_a_host_that_did_not_answer_alerts(status: HostStatus) -> None:
    (dead,) = evaluate("gpu07", status, "no answer", None, CheckSettings())
    assert dead.action is Action.CHECK_NODE and dead.action.rank >= ALERT
    assert dead.action.rank > Action.RESET_GPU.rank  # a dead node is not less urgent than an ECC reset
    host = HostReport(host="gpu07", address=None, status=status, findings=(dead,))
    (action,) = [f for f in families(sweep(host)) if f.name == "gpudiag_host_action"]
    assert action.samples == (((("host", "gpu07"), ("action", "check_node")), Action.CHECK_NODE.rank),)


def test_rule_3_a_cancelled_host_and_a_repeat_skip_the_rung() -> None:
    (cancelled,) = evaluate("gpu07", HostStatus.CANCELLED, None, None, CheckSettings())
    assert cancelled.action is Action.NONE
    assert Action.RESET_GPU.raised() is Action.REBOOT_NODE  # a GPU's need never becomes "check the node"


@pytest.mark.parametrize("fact", [
    finding("PERSISTENCE_OFF", Severity.WARNING), finding("NVIDIA_SMI_MISSING", Severity.UNKNOWN),
    finding("PROBE_INCOMPLETE", Severity.UNKNOWN), finding("MIXED_ARCHITECTURES", Severity.WARNING),
    finding("POWER_LIMIT_REDUCED", Severity.WARNING),
    finding("DRIVER_DRIFT", Severity.WARNING, differs=("gpu_model",)),
    finding("DRIVER_DRIFT", Severity.WARNING, differs=("driver_version",), clear_majority=True),
    finding("DRIVER_DRIFT", Severity.WARNING, differs=("driver_version", "vbios_version"), clear_majority=True),
    finding("DRIVER_DRIFT", Severity.WARNING, differs=("driver",), clear_majority=False)])
def test_rule_4_a_fact_with_no_symptom_is_below_any_reset(fact: Finding) -> None:
    assert action_of(fact).rank < Action.RESTART_WORKLOAD.rank


def test_rule_4_the_operator_may_raise_a_host_off_the_expectation() -> None:
    off = finding("DRIVER_DRIFT", Severity.WARNING, differs=("driver_version",),
                  operator_action=Action.DRAIN_AND_INSPECT.label)
    assert action_of(off) is Action.DRAIN_AND_INSPECT


@pytest.mark.parametrize("code", ["RECOVERY_ACTION", "ECC_UNCORRECTED", "GPU_LOST", "PCIE_LINK_DEGRADED"])
def test_rule_5_a_reading_not_read_asks_for_no_more_than_watch(code: str) -> None:
    assert action_of(finding(code, Severity.UNKNOWN)).rank <= Action.WATCH.rank


def test_rule_6_no_ok_beside_a_critical_host() -> None:
    from builders import finding as gpu_finding

    report = sweep(host_report("gpu01", gpus=[gpu(index=0)], findings=[gpu_finding(
                       gpu=0, code="ECC_UNCORRECTED", severity=Severity.CRITICAL, action=Action.RESET_GPU)]),
                   host_report("gpu02"), host_report("gpu03", status=HostStatus.TIMEOUT))
    line = render_summary_line(report)
    assert "2 answered, 1 timeout" in line and " ok" not in line
    hosts_row = next(row for row in render_table(report, width=100).splitlines() if row.strip().startswith("hosts"))
    assert hosts_row.split() == ["hosts", "3:", "2", "answered,", "1", "timeout"]
