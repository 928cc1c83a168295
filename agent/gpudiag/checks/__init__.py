"""Checks: pure functions from readings to findings. The registry is an explicit tuple, no discovery."""

from __future__ import annotations

from gpudiag.checks.actions import with_action
from gpudiag.checks.context import NodeFacts
from gpudiag.checks.gpu import GPU_CHECKS
from gpudiag.checks.logs import log_findings
from gpudiag.checks.node import NODE_CHECKS, host_unreachable
from gpudiag.checks.peers import odd_gpu_out
from gpudiag.checks.settings import CheckSettings, SettingsError, with_overrides
from gpudiag.logs.plan import LogPlan
from gpudiag.model import Finding, HostStatus, NodeReadings, UnreachableReason

__all__ = ["CheckSettings", "SettingsError", "evaluate", "with_overrides"]


def evaluate(host: str, status: HostStatus, error: str | None, node: NodeReadings | None,
             settings: CheckSettings, logs: LogPlan | None = None, *,
             unreachable_reason: UnreachableReason | None = None) -> tuple[Finding, ...]:
    """Every finding for one host, node-level first, then per GPU in index order, then the log evidence
    (``logs``: the host's log plan, which says what each signature means). GPU checks see the node around
    the GPU (topology, VM, the server's configuration) through one :class:`NodeFacts`. Each finding gets its
    action from the one table (:data:`gpudiag.checks.actions.ACTIONS`)."""
    findings = list(host_unreachable(host, status, error, unreachable_reason))
    if node is not None:
        for node_check in NODE_CHECKS:
            findings.extend(node_check(host, node, settings))
        facts = NodeFacts.of(node)
        findings.extend(f for gpu in node.gpus for gpu_check in GPU_CHECKS
                        for f in gpu_check(host, gpu, settings, facts))
        findings.extend(odd_gpu_out(host, node, settings))
        findings.extend(log_findings(host, node, logs, settings))
    return tuple(with_action(f) for f in findings)
