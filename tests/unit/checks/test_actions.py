"""The action ladder and the one table from finding code to action (gpudiag.checks.actions)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from gpudiag.checks import evaluate
from gpudiag.checks.actions import ACTIONS, action_of, recovery_action, with_action
from gpudiag.checks.settings import CheckSettings
from gpudiag.logs.xid import BUCKET_ACTIONS, XIDS, describe
from gpudiag.model import Action, Finding, HostReport, HostStatus, Severity, highest

REPO = Path(__file__).resolve().parents[3]
CHECKS = REPO / "agent" / "gpudiag" / "checks"


def emitted_codes() -> set[str]:
    """Every finding code a check can emit, read from the checks' source: each ``code="X"`` keyword, and each
    literal passed where a function of the checks takes its ``code`` parameter (``cannot_judge("X", ...)``,
    ``_slowdown("X", ...)``). Codes are bare strings, so the source is where they are enumerated."""
    trees = [ast.parse(path.read_text(), str(path)) for path in sorted(CHECKS.glob("*.py"))]
    code_at: dict[str, int] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                names = [a.arg for a in node.args.posonlyargs + node.args.args]
                if "code" in names:
                    code_at[node.name] = names.index("code")
    codes: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            for keyword in node.keywords:
                if keyword.arg == "code" and isinstance(keyword.value, ast.Constant):
                    codes.add(str(keyword.value.value))
            name = node.func.id if isinstance(node.func, ast.Name) else None
            if name in code_at and len(node.args) > code_at[name]:
                arg = node.args[code_at[name]]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    codes.add(arg.value)
    return codes


def test_the_source_scan_finds_the_codes_of_every_kind_of_check() -> None:
    codes = emitted_codes()
    # a keyword (node, gpu, peers, logs), cannot_judge's and _slowdown's positional codes
    assert {"DRIVER_ERROR", "ECC_UNCORRECTED", "ODD_GPU_OUT", "XID", "LOG_SIGNATURE", "THERMAL_SLOWDOWN",
            "HW_SLOWDOWN", "BUSY_LOW_POWER", "HOST_CANCELLED"} <= codes
    assert all(re.fullmatch(r"[A-Z][A-Z0-9_]+", code) for code in codes), codes


def test_every_code_a_check_can_emit_has_an_action() -> None:
    missing = sorted(emitted_codes() - set(ACTIONS))
    assert missing == [], f"add these codes to gpudiag.checks.actions.ACTIONS: {missing}"


def test_the_documented_actions_are_the_tables() -> None:
    """docs/findings.md's ladder table lists every code of the table with the action it gets."""
    text = (REPO / "docs" / "findings.md").read_text()
    section = text[text.index("## The action ladder"):]
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| ([^|]+?) \|", section, re.MULTILINE))
    assert set(rows) == set(ACTIONS)
    for code, rule in ACTIONS.items():
        if isinstance(rule, Action):
            assert rows[code] == f"`{rule.label}`", code


# ------------------------------------------------------------------------------------------ the ladder


def test_the_ladder_in_order() -> None:
    assert [a.label for a in sorted(Action, key=lambda a: a.rank)] == [
        "none", "watch", "restart_workload", "reset_gpu", "reboot_node", "drain_and_inspect", "replace_gpu"]
    assert highest([Action.WATCH, Action.REPLACE_GPU, Action.RESET_GPU]) is Action.REPLACE_GPU
    assert highest([]) is Action.NONE
    assert Action.RESET_GPU.raised() is Action.REBOOT_NODE and Action.REPLACE_GPU.raised() is Action.REPLACE_GPU
    assert Action.from_label("reboot_node") is Action.REBOOT_NODE
    with pytest.raises(ValueError, match="expected one of none, watch"):
        Action.from_label("reboot")


def test_the_hosts_action_is_the_highest_of_its_findings() -> None:
    def f(code: str, action: Action) -> Finding:
        return Finding(code=code, severity=Severity.WARNING, host="h", gpu=0, summary="s", action=action)

    host = HostReport(host="h", address=None, status=HostStatus.OK,
                      findings=(f("A", Action.WATCH), f("B", Action.REBOOT_NODE), f("C", Action.RESET_GPU)))
    assert host.action is Action.REBOOT_NODE
    assert HostReport(host="h", address=None, status=HostStatus.OK).action is Action.NONE


# ------------------------------------------------------------------------------------------ the rules


def xid_finding(xid: int) -> Finding:
    return Finding(code="XID", severity=describe(xid).severity, host="h", gpu=1, summary="s",
                   evidence={"xid": xid, "count": 1})


@pytest.mark.parametrize(("xid", "action"), [
    (13, Action.RESTART_WORKLOAD), (31, Action.RESTART_WORKLOAD), (43, Action.WATCH), (45, Action.WATCH),
    (48, Action.RESET_GPU), (63, Action.WATCH), (64, Action.RESET_GPU), (74, Action.DRAIN_AND_INSPECT),
    (79, Action.REBOOT_NODE), (94, Action.RESTART_WORKLOAD), (95, Action.RESET_GPU), (119, Action.RESET_GPU),
    (154, Action.DRAIN_AND_INSPECT), (999, Action.WATCH)])
def test_an_xids_action_comes_from_the_catalog_by_its_number(xid: int, action: Action) -> None:
    assert with_action(xid_finding(xid)) == Finding(
        code="XID", severity=describe(xid).severity, host="h", gpu=1, summary="s",
        evidence={"xid": xid, "count": 1}, action=action)


def test_every_xid_entry_has_a_catalog_bucket_the_ladder_knows() -> None:
    for info in XIDS.values():
        assert info.bucket in BUCKET_ACTIONS or (info.bucket == "" and info.xid == 61), info
        if info.bucket:
            assert info.action is BUCKET_ACTIONS[info.bucket]


def test_an_xid_storm_is_the_xids_action_raised_one_step() -> None:
    storm = Finding(code="XID_STORM", severity=Severity.CRITICAL, host="h", gpu=1, summary="s",
                    evidence={"xid": 13, "count": 400})
    assert action_of(storm) is Action.RESET_GPU  # 13 alone: restart the workload; 400 of them: reset


@pytest.mark.parametrize(("value", "action"), [
    ("gpu_reset", Action.RESET_GPU), ("GPU Reset", Action.RESET_GPU), ("Node Reboot", Action.REBOOT_NODE),
    ("drain_p2p", Action.DRAIN_AND_INSPECT), ("Drain and Reset", Action.DRAIN_AND_INSPECT), (1, Action.RESET_GPU),
    (2, Action.REBOOT_NODE), (4, Action.DRAIN_AND_INSPECT), ("none", Action.NONE),
    ("something new", Action.DRAIN_AND_INSPECT)])
def test_the_drivers_recovery_action_maps_onto_the_ladder(value: object, action: Action) -> None:
    assert recovery_action(value) is action
    finding = Finding(code="RECOVERY_ACTION", severity=Severity.CRITICAL, host="h", gpu=3, summary="s",
                      evidence={"gpu_recovery_action": value})
    assert action_of(finding) is action


@pytest.mark.parametrize(("code", "severity", "evidence", "action"), [
    ("ROW_REMAP_PENDING", Severity.WARNING, {}, Action.RESET_GPU),
    ("ROW_REMAP_FAILED", Severity.CRITICAL, {}, Action.REPLACE_GPU),
    ("THERMAL_SLOWDOWN", Severity.WARNING, {}, Action.WATCH),
    ("THERMAL_SLOWDOWN", Severity.CRITICAL, {}, Action.DRAIN_AND_INSPECT),
    ("LOG_SIGNATURE", Severity.CRITICAL, {}, Action.RESTART_WORKLOAD),
    ("DRIVER_DRIFT", Severity.WARNING, {"differs": ("driver_version",)}, Action.WATCH),
    ("DRIVER_DRIFT", Severity.WARNING, {"differs": ("driver_version",), "operator_action": "drain_and_inspect"},
     Action.DRAIN_AND_INSPECT),
    ("HOST_UNREACHABLE", Severity.CRITICAL, {}, Action.NONE),
    # a reading that could not be read is no verdict: at most watch, never a reset, a reboot or a drain
    ("RECOVERY_ACTION", Severity.UNKNOWN, {"gpu_recovery_action": "[Unknown Error]"}, Action.WATCH),
    ("ROW_REMAP_FAILED", Severity.UNKNOWN, {}, Action.WATCH),
    ("PERSISTENCE_OFF", Severity.UNKNOWN, {}, Action.NONE)])
def test_the_rules_by_code(code: str, severity: Severity, evidence: dict[str, object], action: Action) -> None:
    assert action_of(Finding(code=code, severity=severity, host="h", gpu=0, summary="s", evidence=evidence)) is action


def test_a_code_without_an_entry_says_so() -> None:
    with pytest.raises(LookupError, match="NEW_CODE has no action"):
        action_of(Finding(code="NEW_CODE", severity=Severity.WARNING, host="h", gpu=None, summary="s"))


def test_evaluate_sets_every_findings_action() -> None:
    (finding,) = evaluate("h", HostStatus.TIMEOUT, "no answer in 3 s", None, CheckSettings())
    assert (finding.code, finding.action) == ("HOST_UNREACHABLE", Action.NONE)


def test_the_recovery_words_are_the_readings_own() -> None:
    # The names of gpu_recovery_action's values are declared once, in the node's readings table; the ladder's
    # actions and the findings' sentences cover exactly those.
    from gpudiag.checks.actions import RECOVERY_ACTIONS
    from gpudiag.checks.health import RECOVERY_WORDS
    from gpudiag_node.readings import ENUMS

    names = set(ENUMS["gpu_recovery_action"])
    assert set(RECOVERY_ACTIONS) == names and set(RECOVERY_WORDS) | {"none"} == names
