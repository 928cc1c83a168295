"""Checks: pure functions from readings to findings. The registry is an explicit tuple, no discovery."""

from __future__ import annotations

from agent.checks.gpu import GPU_CHECKS
from agent.checks.node import NODE_CHECKS, host_unreachable
from agent.checks.settings import CheckSettings, SettingsError, with_overrides
from agent.model import Finding, HostStatus, NodeReadings

__all__ = ["CheckSettings", "SettingsError", "evaluate", "with_overrides"]


def evaluate(host: str, status: HostStatus, error: str | None, node: NodeReadings | None,
             settings: CheckSettings) -> tuple[Finding, ...]:
    """Every finding for one host, node-level first, then per GPU in index order."""
    findings = list(host_unreachable(host, status, error))
    if node is not None:
        for node_check in NODE_CHECKS:
            findings.extend(node_check(host, node, settings))
        for gpu in node.gpus:
            for gpu_check in GPU_CHECKS:
                findings.extend(gpu_check(host, gpu, settings))
    return tuple(findings)
