"""Per-node checks: what nvidia-smi said about itself, the mix of GPUs, and whether the host answered."""

from __future__ import annotations

from gpudiag.checks.active import active_test
from gpudiag.checks.fabric import FABRIC_CHECKS
from gpudiag.model import CheckSettings, Finding, HostStatus, NodeReadings, Severity, SmiStatus, UnreachableReason


def nvidia_smi_health(host: str, node: NodeReadings, s: CheckSettings) -> tuple[Finding, ...]:
    """NVIDIA_SMI_MISSING, DRIVER_ERROR, NO_GPUS, NVIDIA_SMI_HUNG: nvidia-smi's own failures, as findings."""
    message = node.smi_message or ""
    evidence = {"exit_code": node.smi_exit_code, "message": message}
    if node.hung_calls:
        return _hung(host, node)
    if node.smi_status is SmiStatus.MISSING:
        return (Finding(code="NVIDIA_SMI_MISSING", severity=Severity.UNKNOWN, host=host, gpu=None,
                        summary="nvidia-smi is not installed here, so the GPUs cannot be read: install the "
                                "NVIDIA driver utilities or remove the host from the GPU inventory",
                        evidence=evidence),)
    if node.smi_status is SmiStatus.DRIVER_ERROR:
        return (Finding(code="DRIVER_ERROR", severity=Severity.CRITICAL, host=host, gpu=None,
                        summary="nvidia-smi cannot talk to the NVIDIA driver (exit 9): the kernel module is "
                                "not loaded or does not match the user-space driver - check dmesg, reboot "
                                "or reinstall the driver",
                        evidence=evidence),)
    if node.smi_status is SmiStatus.NO_DEVICES:
        return (Finding(code="NO_GPUS", severity=Severity.CRITICAL, host=host, gpu=None,
                        summary="the driver is loaded but sees no GPU (exit 6, \"No devices were found\"): "
                                "GPUs fell off the bus or are not bound to the nvidia driver - check lspci "
                                "and dmesg",
                        evidence=evidence),)
    if node.smi_status is SmiStatus.FAILED:
        return (Finding(code="DRIVER_ERROR", severity=Severity.CRITICAL, host=host, gpu=None,
                        summary=f"nvidia-smi failed (exit {node.smi_exit_code}) without reading any GPU: "
                                f"{message or 'no message'}",
                        evidence=evidence),)
    return ()


def _hung(host: str, node: NodeReadings) -> tuple[Finding, ...]:
    """NVIDIA_SMI_HUNG (critical): a call on the node did not answer within its bound and was killed. The host
    answered (SSH, the collector): it is the driver that is stuck, usually behind an Xid or a GPU off the bus."""
    first = node.hung_calls[0]
    others = [c.call for c in node.hung_calls[1:]]
    read = "no GPU could be read" if not node.gpus else "the GPUs were read before it hung"
    return (Finding(code="NVIDIA_SMI_HUNG", severity=Severity.CRITICAL, host=host, gpu=None,
                    summary=f"{first.sentence} ({read}"
                            + (f"; also hung: {', '.join(others)}" if others else "")
                            + "): the driver is wedged - look for Xid errors in dmesg; the GPUs usually need a "
                              "reset or the node a reboot",
                    evidence={"call": first.call, "after_s": first.after_s, "hung_calls": len(node.hung_calls),
                              "gpus_read": len(node.gpus)}),)


def mixed_architectures(host: str, node: NodeReadings, s: CheckSettings) -> tuple[Finding, ...]:
    """MIXED_ARCHITECTURES: GPUs of different compute-capability families in one node."""
    families = sorted({g.arch for g in node.gpus if g.arch})
    if len(families) < 2:
        return ()
    by_family = {f: sorted(g.index for g in node.gpus if g.arch == f) for f in families}
    sms = sorted({g.sm for g in node.gpus if g.sm})
    return (Finding(code="MIXED_ARCHITECTURES", severity=Severity.WARNING, host=host, gpu=None,
                    summary=f"one node holds GPUs of different families ({', '.join(families)}): kernels "
                            "built or tuned for one (e.g. SM100) do not run or run slowly on the other "
                            "(e.g. SM120), and tensor-parallel groups run at the slowest GPU's pace",
                    evidence={"families": ", ".join(families), "sm": ", ".join(sms),
                              **{f"gpus_{f}": ",".join(map(str, ix)) for f, ix in by_family.items()}}),)


def probe_incomplete(host: str, node: NodeReadings, s: CheckSettings) -> tuple[Finding, ...]:
    """PROBE_INCOMPLETE (unknown): readings that should be there are missing; never a silent pass."""
    reasons = list(node.problems)
    if node.output_truncated:
        reasons.insert(0, "the node's output passed the size bound and was cut")
    if not reasons:
        return ()
    return (Finding(code="PROBE_INCOMPLETE", severity=Severity.UNKNOWN, host=host, gpu=None,
                    summary="the collection did not complete, so some readings are missing: "
                            + "; ".join(reasons)[:300],
                    evidence={"problems": len(reasons), "output_truncated": node.output_truncated}),)


def host_unreachable(host: str, status: HostStatus, error: str | None,
                     reason: UnreachableReason | None = None) -> tuple[Finding, ...]:
    """HOST_UNREACHABLE: the host did not answer (any status but ok/partial); ``reason``: why an unreachable
    one was not reached (refused, timeout, dns, network), in the evidence when known."""
    if status.answered:
        return ()
    if status is HostStatus.CANCELLED:
        return host_cancelled(host, error)
    evidence: dict[str, object] = {"status": status.value}
    if reason is not None:
        evidence["unreachable_reason"] = reason.value
    return (Finding(code="HOST_UNREACHABLE", severity=Severity.CRITICAL, host=host, gpu=None,
                    summary=f"{status.value}: {error or 'no answer'}", evidence=evidence),)


def host_cancelled(host: str, error: str | None) -> tuple[Finding, ...]:
    """HOST_CANCELLED (unknown): the sweep was stopped before the host answered. Not HOST_UNREACHABLE
    (critical): nothing says the host is at fault, and a drain must not follow an operator's Ctrl-C; but not
    silence either, since a host with no reading is not a host that passed."""
    return (Finding(code="HOST_CANCELLED", severity=Severity.UNKNOWN, host=host, gpu=None,
                    summary=f"not checked: {error or 'the sweep was stopped before this host answered'}",
                    evidence={"status": HostStatus.CANCELLED.value}),)


NODE_CHECKS = (nvidia_smi_health, mixed_architectures, probe_incomplete, *FABRIC_CHECKS, active_test)
