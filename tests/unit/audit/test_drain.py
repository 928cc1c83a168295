"""Drain and undrain planned from a sweep's findings and the nodes' Slurm states (pure), and applied with a fake
runner."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from gpudiag.audit.drain import Action, ActionKind, apply, drain_reason, plan_drain, plan_undrain
from gpudiag.checks.actions import ACTIONS, with_action
from gpudiag.model import Action as Ladder
from gpudiag.model import Finding, HostReport, HostStatus, Severity, SweepReport
from gpudiag.model.choices import DrainLevel
from gpudiag.sources.slurm import CommandResult, SlurmNode


def finding(host: str, code: str, severity: Severity, gpu: int | None = None, **evidence: object) -> Finding:
    """A finding with the action the one table gives its code (as checks.evaluate sets it)."""
    made = Finding(code=code, severity=severity, host=host, gpu=gpu, summary=code, evidence=evidence)
    return with_action(made) if code in ACTIONS else made


def report(*hosts: HostReport) -> SweepReport:
    return SweepReport(started_at="2026-12-01T00:00:00Z", duration_s=1.0, hosts=hosts)


def host(name: str, *findings: Finding, status: HostStatus = HostStatus.OK) -> HostReport:
    return HostReport(host=name, address=None, status=status, findings=findings)


def node(name: str, state: str = "idle", reason: str | None = None) -> SlurmNode:
    return SlurmNode(name=name, address=None, state=state, reason=reason, partitions=("gpu",))


def nodes(*items: SlurmNode) -> dict[str, SlurmNode]:
    return {n.name: n for n in items}


ECC = finding("gpu02", "ECC_UNCORRECTED", Severity.CRITICAL, 3)
XID = finding("gpu02", "XID", Severity.CRITICAL, 1, xid=79)
WARN = finding("gpu03", "PCIE_LINK_DEGRADED", Severity.WARNING, 0)
UNKNOWN = finding("gpu04", "PROBE_INCOMPLETE", Severity.UNKNOWN)


def test_drain_reason() -> None:
    assert drain_reason([ECC, XID, ECC]) == "gpudiag: reboot_node: ECC_UNCORRECTED gpu 3, XID 79 gpu 1"
    assert drain_reason([finding("g", "DRIVER_ERROR", Severity.CRITICAL)]) == "gpudiag: reboot_node: DRIVER_ERROR"
    assert drain_reason([finding("g", "ROW_REMAP_PENDING", Severity.WARNING, 3)]) == (
        "gpudiag: reset_gpu: ROW_REMAP_PENDING gpu 3")
    long = drain_reason(finding("g", f"CODE_{i:03d}", Severity.CRITICAL, i) for i in range(40))
    assert len(long) <= 200 and long.endswith(", ...")


def test_plan_drain_on_critical() -> None:
    swept = report(host("gpu01"), host("gpu02", XID, ECC), host("gpu03", WARN), host("gpu04", UNKNOWN),
                   host("gpu05", finding("gpu05", "HOST_UNREACHABLE", Severity.CRITICAL), status=HostStatus.TIMEOUT),
                   host("gpu06", ECC), host("gpu07", ECC), host("login", ECC))
    states = nodes(node("gpu01"), node("gpu02"), node("gpu03"), node("gpu04"), node("gpu05"),
                   node("gpu06", "drained", "rma: fan"), node("gpu07", "draining", "gpudiag: XID 79 gpu 1"))
    assert plan_drain(swept, states, DrainLevel.CRITICAL) == (
        Action(node="gpu02", kind=ActionKind.DRAIN, why="2 critical-level finding(s)",
               reason="gpudiag: reboot_node: XID 79 gpu 1, ECC_UNCORRECTED gpu 3",
               argv=("scontrol", "update", "NodeName=gpu02", "State=DRAIN",
                     "Reason=gpudiag: reboot_node: XID 79 gpu 1, ECC_UNCORRECTED gpu 3")),
        Action(node="gpu05", kind=ActionKind.LEAVE, why="did not answer (timeout); gpudiag drains only on findings"),
        Action(node="gpu06", kind=ActionKind.LEAVE, why="already drained by someone else: rma: fan"),
        Action(node="gpu07", kind=ActionKind.LEAVE, why="already drained: gpudiag: XID 79 gpu 1"),
    )


@pytest.mark.parametrize(("level", "drained"), [(DrainLevel.CRITICAL, []), (DrainLevel.WARNING, ["gpu03"])])
def test_warning_level_drains_warnings_and_never_unknown(level: DrainLevel, drained: list[str]) -> None:
    swept = report(host("gpu03", WARN), host("gpu04", UNKNOWN))
    actions = plan_drain(swept, nodes(node("gpu03"), node("gpu04")), level)
    assert [a.node for a in actions if a.kind is ActionKind.DRAIN] == drained


def test_the_action_thresholds_are_the_ladders_words() -> None:
    assert [level.value for level in DrainLevel if level.action is not None] == [
        a.label for a in Ladder if a is not Ladder.NONE]
    assert all(DrainLevel(a.label).action is a for a in Ladder if a is not Ladder.NONE)


def test_drain_on_an_action_drains_hosts_whose_action_is_at_least_it() -> None:
    """--drain-on reset_gpu: the node that needs a reset (a pending remap, a warning) is drained, the one whose
    worst is a critical finding that asks only to watch is not; the reason leads with the node's action."""
    remap = finding("gpu01", "ROW_REMAP_PENDING", Severity.WARNING, 3)
    app_fault = finding("gpu02", "XID", Severity.WARNING, 0, xid=13)  # restart_workload
    hot = finding("gpu03", "THERMAL_SLOWDOWN", Severity.WARNING, 1)  # watch
    swept = report(host("gpu01", remap, hot), host("gpu02", app_fault), host("gpu03", hot))
    states = nodes(node("gpu01"), node("gpu02"), node("gpu03"))
    assert plan_drain(swept, states, DrainLevel.RESET_GPU) == (
        Action(node="gpu01", kind=ActionKind.DRAIN, why="action reset_gpu, at least reset_gpu",
               reason="gpudiag: reset_gpu: ROW_REMAP_PENDING gpu 3",
               argv=("scontrol", "update", "NodeName=gpu01", "State=DRAIN",
                     "Reason=gpudiag: reset_gpu: ROW_REMAP_PENDING gpu 3")),)
    assert [a.node for a in plan_drain(swept, states, DrainLevel.RESTART_WORKLOAD)] == ["gpu01", "gpu02"]
    assert [a.node for a in plan_drain(swept, states, DrainLevel.WATCH)] == ["gpu01", "gpu02", "gpu03"]
    assert plan_drain(swept, states, DrainLevel.REPLACE_GPU) == ()
    # a node drained for a reset resumes when its action is below the threshold again
    drained = nodes(node("gpu01", "drained", "gpudiag: reset_gpu: ROW_REMAP_PENDING gpu 3"))
    assert [a.kind for a in plan_undrain(report(host("gpu01", hot)), drained, DrainLevel.RESET_GPU)] == [
        ActionKind.RESUME]


def test_plan_undrain() -> None:
    states = nodes(node("gpu01", "drained", "gpudiag: XID 79 gpu 3"), node("gpu02", "drained", "gpudiag: ECC"),
                   node("gpu03", "drained", "rma: fan"), node("gpu04", "drained", "gpudiag: DRIVER_ERROR"),
                   node("gpu05", "idle"), node("gpu06", "drained", "gpudiag: x"),
                   node("gpu07", "drained", "gpudiag: PCIE_LINK_DEGRADED gpu 0"))
    swept = report(host("gpu01"), host("gpu02", ECC), host("gpu04", status=HostStatus.UNREACHABLE),
                   host("gpu07", finding("gpu07", "PCIE_LINK_DEGRADED", Severity.WARNING, 0)))
    assert plan_undrain(swept, states, DrainLevel.CRITICAL) == (
        Action(node="gpu01", kind=ActionKind.RESUME, why="cleared (was gpudiag: XID 79 gpu 3)",
               argv=("scontrol", "update", "NodeName=gpu01", "State=RESUME")),
        Action(node="gpu02", kind=ActionKind.LEAVE, why="not cleared: reset_gpu: ECC_UNCORRECTED gpu 3"),
        Action(node="gpu03", kind=ActionKind.LEAVE, why="drained by someone else: rma: fan"),
        Action(node="gpu04", kind=ActionKind.LEAVE, why="did not answer (unreachable): cannot tell that it cleared"),
        Action(node="gpu06", kind=ActionKind.LEAVE, why="not swept"),
        Action(node="gpu07", kind=ActionKind.RESUME, why="cleared (was gpudiag: PCIE_LINK_DEGRADED gpu 0)",
               argv=("scontrol", "update", "NodeName=gpu07", "State=RESUME")),
    )
    assert [a.kind for a in plan_undrain(swept, states, DrainLevel.WARNING)][-1] is ActionKind.LEAVE


def test_apply_runs_argv_and_keeps_failures_as_data() -> None:
    ran: list[tuple[str, ...]] = []

    def run(argv: Sequence[str]) -> CommandResult:
        ran.append(tuple(argv))
        if "NodeName=gpu09" in argv:
            said = "slurm_update error: Invalid node name specified\n"
            return CommandResult(returncode=1, stdout="", stderr=said)
        return CommandResult(returncode=0, stdout="", stderr="")

    planned = (Action(node="gpu01", kind=ActionKind.RESUME, why="cleared", argv=("scontrol", "update",
                                                                                   "NodeName=gpu01", "State=RESUME")),
               Action(node="gpu03", kind=ActionKind.LEAVE, why="drained by someone else: rma"),
               Action(node="gpu09", kind=ActionKind.DRAIN, why="1 finding", reason="gpudiag: X",
                      argv=("scontrol", "update", "NodeName=gpu09", "State=DRAIN", "Reason=gpudiag: X")))
    done = apply(planned, run)
    assert ran == [planned[0].argv, planned[2].argv]
    assert [(a.done, a.error) for a in done] == [(True, None), (None, None),
                                                 (False, "slurm_update error: Invalid node name specified")]
    assert [a.line for a in done] == [
        "done: resume gpu01 (cleared)", "leave  gpu03: drained by someone else: rma",
        "FAILED: drain gpu09 (1 finding): slurm_update error: Invalid node name specified"]
    assert planned[0].line == "would resume gpu01 (cleared)"
