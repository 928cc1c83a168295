"""Which action each finding asks for: the one table from finding code to its rung of the action ladder
(:class:`gpudiag.model.Action`). Pure.

A check builds its findings without an action; :func:`with_action` (called by ``checks.evaluate`` for every
finding) sets it from :data:`ACTIONS`. Most codes have one action; a few take it from the finding:

* ``XID`` - NVIDIA's Xid catalog, by the Xid's number (:mod:`gpudiag.logs.xid`: its immediate-action bucket);
* ``XID_STORM`` - the same Xid many times in one window: the catalog's action raised one step, as any
  repeat of one need is (a storm is the repeat inside one kernel log);
* ``RECOVERY_ACTION`` - the driver's own recovery action (GPU reset, node reboot, drain P2P...);
* ``THERMAL_SLOWDOWN``, ``HW_SLOWDOWN``, ``LOG_SIGNATURE`` - by severity;
* ``DRIVER_DRIFT`` - a version that differs with no symptom is maintenance (watch), unless the operator's
  expectation (``--expect-action``) raises it.

tests/unit/checks/test_actions.py checks that every code a check can emit has an entry here, and that
docs/findings.md lists the same actions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from gpudiag.logs.xid import describe
from gpudiag.model import Action, Finding, Severity
from gpudiag_node.readings import enum_from_words, enum_name

Rule = Action | Callable[[Finding], Action]


def _xid(finding: Finding) -> Action:
    xid = finding.evidence.get("xid")
    return describe(xid).action if isinstance(xid, int) else Action.WATCH


def _xid_storm(finding: Finding) -> Action:
    return _xid(finding).raised()


# The driver's recovery action (nvmlDeviceGpuRecoveryAction_t), by the names the readings table gives its
# values (nvidia-smi's words lowercased, "_" for spaces: "GPU Reset" is gpu_reset).
RECOVERY_ACTIONS: Mapping[str, Action] = {
    "none": Action.NONE,
    "gpu_reset": Action.RESET_GPU,
    "bus_reset": Action.RESET_GPU,
    "node_reboot": Action.REBOOT_NODE,
    "system_reboot": Action.REBOOT_NODE,
    "drain_p2p": Action.DRAIN_AND_INSPECT,
    "drain_and_reset": Action.DRAIN_AND_INSPECT,
    "recover_imex_domain": Action.DRAIN_AND_INSPECT,
}


def recovery_action(value: object) -> Action:
    """The ladder's action for the driver's recovery action (``"GPU Reset"``, ``gpu_reset`` or NVML's number,
    read as the reading's own table reads them: ``gpudiag_node.readings.ENUMS``); a value it does not know is
    the most the driver can ask for: drain and inspect."""
    if isinstance(value, int) and not isinstance(value, bool):
        key = enum_name("gpu_recovery_action", value)
    else:
        key = enum_from_words(str(value)) or ""
    return RECOVERY_ACTIONS.get(key, Action.DRAIN_AND_INSPECT)


def _recovery(finding: Finding) -> Action:
    evidence = finding.evidence
    return recovery_action(evidence.get("gpu_recovery_action", evidence.get("recovery_action")))


def _by_severity(warning: Action, critical: Action) -> Callable[[Finding], Action]:
    def rule(finding: Finding) -> Action:
        return critical if finding.severity is Severity.CRITICAL else warning
    return rule


def _drift(finding: Finding) -> Action:
    operator = finding.evidence.get("operator_action")  # --expect-action: the operator's rung for their expectation
    return Action.from_label(operator) if isinstance(operator, str) else Action.WATCH


# The one table. none: nothing is known to be wrong with the GPUs (gpudiag could not read them, or it is
# information); watch: look again, or look at the workload; the rest as the ladder says.
ACTIONS: Mapping[str, Rule] = {
    # the workload's behaviour: nothing to do to the GPU
    "BUSY_LOW_POWER": Action.WATCH,
    "HOST_BOUND": Action.WATCH,
    "ODD_GPU_OUT": Action.WATCH,
    "POWER_LIMIT_REDUCED": Action.WATCH,
    "MIXED_ARCHITECTURES": Action.WATCH,
    # a job that holds a GPU and does not use it: its owner ends or fixes it; the GPU itself is fine
    "GPU_HELD_IDLE": Action.WATCH,
    "GPU_ALLOCATED_IDLE": Action.WATCH,  # the scheduler gave it to a job that runs nothing on it
    # a process out of sight (another namespace) or a dead one's context: look at what holds it first
    "GPU_MEMORY_UNACCOUNTED": Action.WATCH,
    # the hardware around the GPU: someone has to look (reseat, airflow, power)
    "PCIE_LINK_DEGRADED": Action.DRAIN_AND_INSPECT,
    "THERMAL_SLOWDOWN": _by_severity(Action.WATCH, Action.DRAIN_AND_INSPECT),
    "HW_SLOWDOWN": _by_severity(Action.WATCH, Action.DRAIN_AND_INSPECT),
    # memory: a reset applies pending remaps and retirements; a failed remap is a failing GPU
    "ECC_UNCORRECTED": Action.RESET_GPU,
    "ROW_REMAP_PENDING": Action.RESET_GPU,
    "ROW_REMAP_FAILED": Action.REPLACE_GPU,
    "RETIRED_PAGES_PENDING": Action.RESET_GPU,
    "ECC_DISABLED": Action.RESET_GPU,  # enable it (nvidia-smi -e 1); a reset applies it
    "ECC_MODE_PENDING": Action.RESET_GPU,  # a reset applies the pending mode
    # the driver's own verdict
    "RECOVERY_ACTION": _recovery,
    # the GPU or driver gone
    "GPU_LOST": Action.REBOOT_NODE,
    "DRIVER_ERROR": Action.REBOOT_NODE,
    "NO_GPUS": Action.REBOOT_NODE,
    "NVIDIA_SMI_HUNG": Action.REBOOT_NODE,
    # NVLink and the fabric
    "NVLINK_DOWN": Action.RESET_GPU,  # a reset retrains the link; a link that stays down: the Xid 74 workflow
    "NVLINK_ERRORS": Action.WATCH,
    "FABRIC_NOT_READY": Action.REBOOT_NODE,  # the fabric manager and the GPUs' fabric state start with the node
    "PERSISTENCE_OFF": Action.NONE,
    # the fleet
    "DRIVER_DRIFT": _drift,
    # a node that did not answer: someone looks at it (console, BMC), above any reset, so that the alert on
    # gpudiag_host_action >= 3 fires on a dead node
    "HOST_UNREACHABLE": Action.CHECK_NODE,
    # a job across its nodes: look at the rank the others wait on, or the slow one (its own findings, if any,
    # carry what the GPU needs); a GPU given to a job that does not use it: its owner releases it
    "JOB_WAITS_ON": Action.WATCH,
    "JOB_STRAGGLER": Action.WATCH,
    # what gpudiag could not read: nothing is known to be wrong with the GPUs
    "NVIDIA_SMI_MISSING": Action.NONE,
    "PROBE_INCOMPLETE": Action.NONE,
    "HOST_CANCELLED": Action.NONE,
    "LOG_UNREADABLE": Action.NONE,
    # logs
    "LOG_SIGNATURE": _by_severity(Action.WATCH, Action.RESTART_WORKLOAD),
    "LOG_EXPECTED_ABSENT": Action.WATCH,
    "XID": _xid,
    "XID_STORM": _xid_storm,
    # the active test (--active): a GPU that cannot keep up under load, or fails under it
    "SLOW_COMPUTE": Action.DRAIN_AND_INSPECT,
    "SLOW_MEMORY": Action.DRAIN_AND_INSPECT,
    "SLOW_PCIE": Action.DRAIN_AND_INSPECT,
    "ACTIVE_TEST_TIMEOUT": Action.RESET_GPU,
    "ACTIVE_TEST_FAILED": Action.RESET_GPU,
    "ACTIVE_TEST_ERRORS": Action.DRAIN_AND_INSPECT,
    "CUDA_INIT_FAILED": Action.REBOOT_NODE,
    "ACTIVE_TEST_NOT_RUN": Action.NONE,
}


class UnknownCodeError(ValueError):
    """A finding code gpudiag does not have; the message is one line."""


def finding_codes(words: Sequence[str], *, flag: str) -> tuple[str, ...]:
    """``["power_limit_reduced,XID"]`` -> ``("POWER_LIMIT_REDUCED", "XID")``: codes named on the command line or
    in a config file (repeatable, or comma-separated; any case), each one gpudiag has (:data:`ACTIONS` holds
    every code a check emits); one that it does not have raises :class:`UnknownCodeError`."""
    codes = tuple(dict.fromkeys(w.strip().upper() for word in words for w in word.split(",") if w.strip()))
    for code in codes:
        if code not in ACTIONS:
            raise UnknownCodeError(f"{flag} {code}: no such finding code (the codes: docs/findings.md)")
    return codes


def action_of(finding: Finding) -> Action:
    """The action :data:`ACTIONS` gives ``finding``; LookupError for a code the table lacks (a test keeps
    every code a check can emit in the table)."""
    try:
        rule = ACTIONS[finding.code]
    except KeyError:
        raise LookupError(f"finding code {finding.code} has no action in gpudiag.checks.actions.ACTIONS") from None
    action = rule if isinstance(rule, Action) else rule(finding)
    if finding.severity is Severity.UNKNOWN and action.rank > Action.WATCH.rank:
        # a reading that could not be read is no verdict: look again before resetting, rebooting or draining
        # on its strength (a failed read of the recovery action would otherwise read as drain_and_inspect)
        return Action.WATCH
    return action


def with_action(finding: Finding) -> Finding:
    """``finding`` with its action from the table."""
    import dataclasses

    return dataclasses.replace(finding, action=action_of(finding))
