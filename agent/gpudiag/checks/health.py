"""Per-GPU health checks over issue 20's readings: memory health, the driver's recovery action, ECC mode,
NVLink counters, the fabric, persistence mode. Pure functions ``(host, gpu, settings, facts) ->
tuple[Finding, ...]`` like :mod:`gpudiag.checks.gpu`.

A reading the GPU or driver does not report (None) is not applicable: no finding; one whose read failed
(``failed_readings``) makes the check say UNKNOWN, as :func:`gpudiag.checks.gpu.cannot_judge` does. The values come from
NVIDIA's memory error management guide (row remapping pending / failure, the recovery action flag:
https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/) and nvml.h.
"""

from __future__ import annotations

from collections.abc import Callable

from gpudiag.checks.context import NO_FACTS, NodeFacts
from gpudiag.checks.gpu import cannot_judge
from gpudiag.model import CheckSettings, Finding, GpuReading, Severity


def _memory_evidence(gpu: GpuReading) -> dict[str, object]:
    return {"remapped_rows_correctable": gpu.remapped_rows_correctable,
            "remapped_rows_uncorrectable": gpu.remapped_rows_uncorrectable,
            "remapped_rows_pending": gpu.remapped_rows_pending, "remapped_rows_failure": gpu.remapped_rows_failure,
            "ecc_uncorrected": gpu.ecc_uncorrected, "ecc_uncorrected_aggregate": gpu.ecc_uncorrected_aggregate}


def _rows(gpu: GpuReading) -> str:
    parts = [f"{n} for {what} errors" for n, what in ((gpu.remapped_rows_uncorrectable, "uncorrectable"),
                                                      (gpu.remapped_rows_correctable, "correctable")) if n is not None]
    return f"rows remapped so far: {', '.join(parts)}" if parts else "remapped row counts not reported"


def _flagged(code: str, severity: Severity, host: str, gpu: GpuReading, flag: str, what: str,
             summary: Callable[[], str], evidence: Callable[[], dict[str, object]]) -> tuple[Finding, ...]:
    """The memory checks' one shape: ``code`` when the GPU raises the reading ``flag``; UNKNOWN when it failed
    to read (:func:`cannot_judge` with ``what``); else nothing. The text is made only for a finding."""
    if not getattr(gpu, flag) or gpu.lost:
        return cannot_judge(code, host, gpu, what, flag)
    return (Finding(code=code, severity=severity, host=host, gpu=gpu.index, summary=summary(), evidence=evidence()),)


def row_remap_pending(host: str, gpu: GpuReading, s: CheckSettings, facts: NodeFacts = NO_FACTS) -> tuple[Finding, ...]:
    """ROW_REMAP_PENDING: a memory row waits to be remapped, which happens at the next GPU reset. Work that
    runs may go on (NVIDIA), but the bad row stays in use until then."""
    return _flagged("ROW_REMAP_PENDING", Severity.WARNING, host, gpu, "remapped_rows_pending",
                    "whether a row remap is pending",
                    lambda: f"a memory row remap is pending ({_rows(gpu)}): it takes effect at the next GPU reset - "
                            "drain the GPU's work and reset it (nvidia-smi -r) or reboot",
                    lambda: _memory_evidence(gpu))


def row_remap_failed(host: str, gpu: GpuReading, s: CheckSettings, facts: NodeFacts = NO_FACTS) -> tuple[Finding, ...]:
    """ROW_REMAP_FAILED: a row remap failed in the GPU's lifetime (no spare row left in a bank): NVIDIA's
    RMA criterion for row remapping."""
    return _flagged("ROW_REMAP_FAILED", Severity.CRITICAL, host, gpu, "remapped_rows_failure",
                    "whether a row remap failed",
                    lambda: f"a memory row remap failed ({_rows(gpu)}): the GPU has no spare row left for a bad "
                            "one - drain it and replace the GPU (NVIDIA's RMA policy for row remapping)",
                    lambda: _memory_evidence(gpu))


def _retired(gpu: GpuReading) -> str:
    return ", ".join(f"{n} for {what}" for n, what in ((gpu.retired_pages_dbe, "double-bit errors"),
                                                       (gpu.retired_pages_sbe, "single-bit errors"))
                     if n is not None) or "retired page counts not reported"


def retired_pages_pending(host: str, gpu: GpuReading, s: CheckSettings,
                          facts: NodeFacts = NO_FACTS) -> tuple[Finding, ...]:
    """RETIRED_PAGES_PENDING: a memory page waits to be retired (GPUs before Ampere), at the next reset or
    driver reload."""
    return _flagged("RETIRED_PAGES_PENDING", Severity.WARNING, host, gpu, "retired_pages_pending",
                    "whether a page retirement is pending",
                    lambda: f"a memory page retirement is pending (retired so far: {_retired(gpu)}): it takes "
                            "effect at the next GPU reset or driver reload - drain the GPU and reset it",
                    lambda: {"retired_pages_sbe": gpu.retired_pages_sbe, "retired_pages_dbe": gpu.retired_pages_dbe,
                             "retired_pages_pending": gpu.retired_pages_pending,
                             "ecc_uncorrected_aggregate": gpu.ecc_uncorrected_aggregate})


def _on_off(enabled: bool) -> str:
    return "enabled" if enabled else "disabled"


def ecc_mode(host: str, gpu: GpuReading, s: CheckSettings, facts: NodeFacts = NO_FACTS) -> tuple[Finding, ...]:
    """ECC_DISABLED: ECC is off on a GPU that has it (a GPU without ECC reports no mode: not applicable);
    ECC_MODE_PENDING: the mode changes at the next reset (someone ran nvidia-smi -e)."""
    current, pending = gpu.ecc_mode_enabled, gpu.ecc_mode_pending_enabled
    if current is None or gpu.lost:
        return cannot_judge("ECC_DISABLED", host, gpu, "whether ECC is enabled", "ecc_mode_enabled")
    evidence = {"ecc_mode_enabled": current, "ecc_mode_pending_enabled": pending}
    found = []
    if current is False:
        found.append(Finding(code="ECC_DISABLED", severity=Severity.WARNING, host=host, gpu=gpu.index,
                             summary="ECC is disabled on a GPU that supports it: memory errors go undetected and "
                                     "uncorrected - enable it (nvidia-smi -e 1) and reset the GPU"
                                     + (" (already pending)" if pending else ""),
                             evidence=evidence))
    if pending is not None and pending != current:
        found.append(Finding(code="ECC_MODE_PENDING", severity=Severity.WARNING, host=host, gpu=gpu.index,
                             summary=f"ECC is {_on_off(current)} now and becomes {_on_off(pending)} at the next GPU "
                                     "reset: the GPU runs in a mode its operator did not intend until then - reset "
                                     "it, or undo the change",
                             evidence=evidence))
    return tuple(found)


# What each recovery action asks for, in the operator's words (nvmlDeviceGpuRecoveryAction_t).
RECOVERY_WORDS = {
    "gpu_reset": "a GPU reset: stop its processes and reset it (nvidia-smi -r)",
    "node_reboot": "a node reboot: the fault may have left the OS inconsistent",
    "drain_p2p": "draining peer-to-peer traffic: stop the processes that use P2P, then read the action again",
    "drain_and_reset": "draining peer-to-peer traffic, then a GPU reset",
    "recover_imex_domain": "recovering the IMEX domain",
    "bus_reset": "a reset of the GPU's PCIe bus",
    "system_reboot": "a system reboot",
}


def recovery_action(host: str, gpu: GpuReading, s: CheckSettings, facts: NodeFacts = NO_FACTS) -> tuple[Finding, ...]:
    """RECOVERY_ACTION: the driver itself asks for a recovery (gpu_recovery_action, set after an
    uncorrectable error): the GPU cannot be trusted with new work until it is done."""
    action = gpu.gpu_recovery_action
    if action in (None, "none") or gpu.lost:
        return cannot_judge("RECOVERY_ACTION", host, gpu, "whether the driver asks for a recovery",
                            "gpu_recovery_action")
    words = RECOVERY_WORDS.get(action, f"a recovery this tool does not know ({action})")
    return (Finding(code="RECOVERY_ACTION", severity=Severity.CRITICAL if action in RECOVERY_WORDS else
                    Severity.WARNING, host=host, gpu=gpu.index,
                    summary=f"the driver asks for {words} (gpu_recovery_action {action}); drain the GPU's work first",
                    evidence={"gpu_recovery_action": action, **_memory_evidence(gpu)}),)


def nvlink_errors(host: str, gpu: GpuReading, s: CheckSettings, facts: NodeFacts = NO_FACTS) -> tuple[Finding, ...]:
    """NVLINK_ERRORS: NVLink error counters rose within the window (not merely "some since boot"): a link
    that is degrading now - CRC errors and replays slow every collective, recoveries stall the link."""
    rising = [(link, link.rises()) for link in gpu.nvlinks if link.rises()]
    if not rising or gpu.lost:
        return ()
    window = gpu.nvlink_window_s
    total = {name: sum(dict(r).get(name, 0) for _, r in rising) for name in ("crc", "replay", "recovery")}
    rate = {name: round(n / window, 2) if window else None for name, n in total.items()}
    parts = []
    for name in ("crc", "replay", "recovery"):
        if total[name]:
            per_s = f" ({rate[name]:g}/s)" if rate[name] is not None else ""
            parts.append(f"{total[name]} {name}{per_s}")
    links = ",".join(str(link.link) for link, _ in rising)
    span = f" over {window:.1f} s" if window else ""
    summary = (f"NVLink errors rose within the window on link{'s' if len(rising) > 1 else ''} {links}: "
               f"{', '.join(parts)}{span} - the link is degrading now; check the Xid 74 lines in the kernel log, "
               "reseat or replace the NVLink/NVSwitch path")
    return (Finding(code="NVLINK_ERRORS", severity=Severity.WARNING, host=host, gpu=gpu.index, summary=summary,
                    evidence={"links": links, "window_s": window,
                              **{f"{n}_errors_rise": total[n] for n in total},
                              **{f"{n}_errors_per_s": rate[n] for n in rate}}),)


def fabric_not_ready(host: str, gpu: GpuReading, s: CheckSettings, facts: NodeFacts = NO_FACTS) -> tuple[Finding, ...]:
    """FABRIC_NOT_READY: on an NVSwitch system the GPU's fabric registration did not complete, completed with
    an error, or the fabric reports it unhealthy (limited capacity: a warning). Until the registration
    completes, CUDA on that GPU fails to start ("system not yet initialized")."""
    state, status, health = gpu.fabric_state, gpu.fabric_status, gpu.fabric_health
    if gpu.lost or state in (None, "not_supported"):
        return ()
    evidence = {"fabric_state": state, "fabric_status": status, "fabric_health": health}
    if state != "completed":
        why, severity = f"its fabric registration is {state.replace('_', ' ')}", Severity.CRITICAL
    elif status is not None and status.lower() != "success":
        why, severity = f"its fabric registration completed with an error ({status})", Severity.CRITICAL
    elif health == "unhealthy":
        why, severity = "the fabric reports it unhealthy", Severity.CRITICAL
    elif health == "limited_capacity":
        why, severity = "the fabric reports it at limited capacity", Severity.WARNING
    else:
        return ()
    return (Finding(code="FABRIC_NOT_READY", severity=severity, host=host, gpu=gpu.index,
                    summary=f"the GPU is not ready on the NVLink fabric: {why} - CUDA work fails or runs degraded; "
                            "check nv-fabricmanager (systemctl status nvidia-fabricmanager) and its log",
                    evidence=evidence),)


def persistence_off(host: str, gpu: GpuReading, s: CheckSettings, facts: NodeFacts = NO_FACTS) -> tuple[Finding, ...]:
    """PERSISTENCE_OFF (info): persistence mode is off, so the driver tears the GPU down when its last client
    exits and each new one pays the initialisation (seconds on a large node); NVIDIA recommends the
    persistence daemon on compute nodes."""
    if gpu.persistence_mode_enabled is not False or gpu.lost:
        return ()
    return (Finding(code="PERSISTENCE_OFF", severity=Severity.OK, host=host, gpu=gpu.index,
                    summary="persistence mode is off: each new CUDA client pays the GPU's initialisation - run "
                            "nvidia-persistenced",
                    evidence={"persistence_mode_enabled": False}),)


HEALTH_CHECKS = (row_remap_failed, row_remap_pending, retired_pages_pending, recovery_action, ecc_mode,
                 nvlink_errors, fabric_not_ready, persistence_off)
