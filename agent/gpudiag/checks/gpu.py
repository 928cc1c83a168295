"""Per-GPU checks: pure functions ``(host, gpu, settings, facts) -> tuple[Finding, ...]``.

``facts`` is what a check may need from the rest of the node (topology, VM, the server's configuration:
:class:`~gpudiag.checks.context.NodeFacts`). Each finding carries a stable code, one sentence for the operator
and the numbers behind it. A reading the GPU cannot give (``None``) makes a check not applicable, never a
false alarm; a reading whose read *failed* (``GpuReading.failed_readings``) makes it say UNKNOWN.
"""

from __future__ import annotations

from collections.abc import Callable

from gpudiag.checks.context import NO_FACTS, NodeFacts
from gpudiag.checks.holding import gpu_held_idle, gpu_memory_unaccounted
from gpudiag.checks.named import choice_evidence, choice_words, ras_evidence
from gpudiag.checks.starved import sm_activity_text, sm_work
from gpudiag.model import CheckSettings, Finding, GpuProcess, GpuReading, Severity, reasons_mask
from gpudiag.model.culprit import choose_pegging

# Clock-event reasons that explain low power by themselves; each has its own finding.
THERMAL_REASONS = ("hw_thermal_slowdown", "sw_thermal_slowdown")
HW_REASONS = ("hw_slowdown", "hw_power_brake_slowdown")


def _pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 1)


def cannot_judge(code: str, host: str, gpu: GpuReading, what: str, *readings: str) -> tuple[Finding, ...]:
    """An UNKNOWN ``code`` finding when a reading the check needs failed to read (not when the GPU cannot
    report it: that is not applicable); () when none of ``readings`` failed."""
    failed = gpu.failed(*readings)
    if not failed:
        return ()
    why = "; ".join(f"{name}: {reason}" for name, reason in failed)
    return (Finding(code=code, severity=Severity.UNKNOWN, host=host, gpu=gpu.index,
                    summary=f"cannot tell {what}: a reading it needs failed ({why})",
                    evidence={"failed_readings": ",".join(name for name, _ in failed), "why": why}),)


def _activity_evidence(gpu: GpuReading) -> dict[str, object]:
    if gpu.sm_active_pct is None:
        return {"sm_activity": sm_activity_text(gpu)}
    return {"sm_activity": sm_activity_text(gpu), "sm_active_pct": gpu.sm_active_pct,
            "sm_occupancy_pct": gpu.sm_occupancy_pct, "tensor_active_pct": gpu.tensor_active_pct,
            "dram_active_pct": gpu.dram_active_pct, "sm_activity_from": gpu.sm_activity_from}


def busy_low_power(host: str, gpu: GpuReading, s: CheckSettings, facts: NodeFacts = NO_FACTS) -> tuple[Finding, ...]:
    """BUSY_LOW_POWER: reads busy (``busy_utilization_pct``) while its SMs do little (:func:`sm_work`): measured
    (SM activity from NVML GPM or DCGM under ``starved_sm_activity_pct``) where the GPU gives it, else inferred
    from a small share of its enforced power limit.

    utilization.gpu is the share of time *any* kernel was resident, not how many SMs worked, so a GPU
    stuck on tiny launches, latency chains or communication reads 100% at a fraction of its power. A direct
    measurement decides where it exists: high SM activity at low power is real work (a bandwidth-bound
    kernel), low SM activity is starved whatever the power says. Without it, not flagged when high memory
    utilization explains the low power (a bandwidth-bound kernel). Never when a slowdown reason explains
    it (thermal, hardware slowdown, power brake: reported by their own checks). The power is the GPU's one
    power figure (:meth:`GpuReading.power`); the node's topology and VM, and the GPU's main process, say
    why and who, when known. Below ``busy_utilization_pct`` the same starved GPU is HOST_BOUND's where a
    pegged host thread feeds it (never both on one GPU).
    """
    if gpu.lost:
        return ()
    measured = gpu.sm_active_pct
    unknown = cannot_judge("BUSY_LOW_POWER", host, gpu, "whether it is busy at low power", "utilization_pct",
                           *(() if measured is not None else
                             ("enforced_power_limit_w", *(() if gpu.power() else ("power_w", "power_instant_w")))))
    if unknown:
        return unknown
    util, power = gpu.utilization_pct, gpu.power()
    if util is None or util < s.busy_utilization_pct:
        return ()
    share = power.pct_of_limit if power is not None else None
    mem = gpu.memory_utilization_pct
    work = sm_work(gpu, s)
    if work is None or not work.starved:
        return ()  # the SMs are measured working, or the power cannot say or is not low, or bandwidth-bound
    if any(r in gpu.clock_event_reasons for r in THERMAL_REASONS + HW_REASONS):
        return ()
    clock = ""
    if gpu.sm_clock_mhz is not None and gpu.max_sm_clock_mhz:
        clock = f", SM clock {gpu.sm_clock_mhz:.0f} of {gpu.max_sm_clock_mhz:.0f} MHz"
    mem_text = f", memory {mem:.0f}% busy" if mem is not None else ", memory utilization not reported"
    if power is not None and share is not None and power.enforced_limit_w is not None:
        draws = f"draws {power.watts:.0f} W of its {power.enforced_limit_w:.0f} W enforced limit ({share:.0f}%)"
    else:
        draws = "its power is not reported"
    activity = f"; {sm_activity_text(gpu)}" if measured is not None else ""
    summary = (f"reads {util:.0f}% busy but {draws}{mem_text}{clock}{activity}: a kernel is always resident but "
               "few SMs do work - launch-bound, latency-bound, or waiting on communication")
    evidence: dict[str, object] = {
        "utilization_pct": util,
        "memory_utilization_pct": mem,
        "watts": power.watts if power else None,
        "enforced_power_limit_w": power.enforced_limit_w if power else None,
        "pct_of_limit": share,
        "power_source": power.source.value if power else None,  # PowerSource, as the JSON's power.source
        "sm_clock_mhz": gpu.sm_clock_mhz,
        "max_sm_clock_mhz": gpu.max_sm_clock_mhz,
        "samples": len(gpu.samples),
        "busy_utilization_pct": s.busy_utilization_pct,
        "low_power_pct": s.low_power_pct,
        "bandwidth_memory_utilization_pct": s.bandwidth_memory_utilization_pct,
        "starved_sm_activity_pct": s.starved_sm_activity_pct,
        **_activity_evidence(gpu),
    }
    choice = facts.working_process(gpu.index)
    if choice is not None:
        summary += f"; {choice_words(choice)}"
        evidence.update(choice_evidence(choice))
    ras = facts.node.nccl_ras if facts.node is not None else None
    if ras is not None and ras.sentence is not None:  # the job's own word on its ranks (a hung collective)
        summary += f"; {ras.sentence}"
        evidence.update(ras_evidence(ras))
    why, context_evidence = facts.starved_because(gpu.index)
    if why is not None:
        summary += f"; {why}"
        evidence.update(context_evidence)
    return (Finding(code="BUSY_LOW_POWER", severity=Severity.WARNING, host=host, gpu=gpu.index,
                    summary=summary, evidence=evidence),)


def kernels_launched(gpu: GpuReading, p: GpuProcess, procs: tuple[GpuProcess, ...],
                     s: CheckSettings) -> str | None:
    """How the window shows that ``p`` launched kernels on ``gpu``, in words; None when it does not. Where NVML
    gives per-process SM shares, ``p``'s own decides (a CPU-bound process beside another's kernels did not
    launch them); else any sample at least ``host_bound_min_utilization_pct`` busy, or SM activity (GPM, DCGM)
    above zero. Decided from the window, not its median: eager decode read 4% (3 samples) to 7% busy."""
    if any(q.sm_utilization_pct is not None for q in procs):
        share = p.sm_utilization_pct or 0.0
        return f"its kernels held the SMs {share:.0f}% of the window (NVML per-process utilization)" \
            if share > 0.0 else None
    busiest = max((x.utilization_pct for x in gpu.samples if x.utilization_pct is not None),
                  default=gpu.utilization_pct)
    if busiest is not None and busiest >= s.host_bound_min_utilization_pct:
        return f"kernels ran in the window (its busiest sample read {busiest:.0f}% busy)"
    if gpu.sm_active_pct is not None and gpu.sm_active_pct > 0.0:
        return f"kernels ran in the window ({sm_activity_text(gpu)})"
    return None


def host_bound(host: str, gpu: GpuReading, s: CheckSettings, facts: NodeFacts = NO_FACTS) -> tuple[Finding, ...]:
    """HOST_BOUND: a process on the GPU keeps a CPU core pegged while the GPU's SMs do little, yet that process
    launched kernels in the window: the GPU waits on its own launch thread (eager-mode decode, an eager MoE
    dispatch, Python overhead, a tokenizer). "Do little" is :func:`sm_work`'s, the same as BUSY_LOW_POWER's:
    measured SM activity where it is read, else the power share; busy % decides only where neither is read
    (at most ``host_bound_max_utilization_pct``). So the case study's MoE dispatch (46-53% busy, SM activity
    7-8%) gets one verdict whichever side of 50% a window reads. A GPU at or above ``busy_utilization_pct`` is
    BUSY_LOW_POWER's (a kernel always resident: the GPU does not wait for launches), never both. Not on a GPU
    that ran no kernel (a server's idle loop may poll at 100% CPU), nor on one whose SMs work (a synchronizing
    thread spins while its kernels run). The same workload gets the same verdict at 3, 5 or 10 samples: a
    quiet median does not hide the kernels the window saw."""
    util = gpu.utilization_pct
    if gpu.lost or util is None or util >= s.busy_utilization_pct:
        return ()
    work = sm_work(gpu, s)
    if (work is not None and not work.starved) or (work is None and util > s.host_bound_max_utilization_pct):
        return ()
    procs = facts.processes_on(gpu.index)
    choice = choose_pegging(procs, s.host_bound_cpu_pct)
    if choice is None or choice.process is None:
        return ()
    p = choice.process
    launched = kernels_launched(gpu, p, procs, s)
    if launched is None:
        return ()
    power = gpu.power()
    watts = f" at {power.watts:.0f} W" + (f" ({power.pct_of_limit:.0f}% of its limit)" if power.pct_of_limit else "") \
        if power else ""
    others = f" (the busiest CPU of the GPU's {len(procs)} processes)" if len(procs) > 1 else ""
    summary = (f"{p.label}{others} uses {p.cpu_pct:.0f}% of a CPU core while the GPU is only {util:.0f}% busy"
               f"{watts}; {launched}"
               f"{'; ' + sm_activity_text(gpu) if gpu.sm_active_pct is not None else ''}: the GPU waits on the "
               "process's host thread (eager launches, Python overhead, tokenization) - capture CUDA graphs, use "
               "a compiled or batched path, or keep more requests in flight")
    evidence: dict[str, object] = {
        "utilization_pct": util, "watts": power.watts if power else None,
        "pct_of_limit": power.pct_of_limit if power else None, "kernels_launched": launched,
        **choice_evidence(choice), **_activity_evidence(gpu),
        "starved_by": work.basis if work is not None else "utilization",
        "samples": len(gpu.samples),
        "host_bound_cpu_pct": s.host_bound_cpu_pct,
        "starved_sm_activity_pct": s.starved_sm_activity_pct,
        "low_power_pct": s.low_power_pct,
        "busy_utilization_pct": s.busy_utilization_pct,
        "host_bound_max_utilization_pct": s.host_bound_max_utilization_pct,
        "host_bound_min_utilization_pct": s.host_bound_min_utilization_pct}
    return (Finding(code="HOST_BOUND", severity=Severity.WARNING, host=host, gpu=gpu.index, summary=summary,
                    evidence=evidence),)


def power_limit_reduced(host: str, gpu: GpuReading, s: CheckSettings,
                        facts: NodeFacts = NO_FACTS) -> tuple[Finding, ...]:
    """POWER_LIMIT_REDUCED: the enforced limit is below the board's default limit."""
    unknown = cannot_judge("POWER_LIMIT_REDUCED", host, gpu, "whether its power limit was reduced",
                           "enforced_power_limit_w", "default_power_limit_w")
    if unknown:
        return unknown
    enforced, default = gpu.enforced_power_limit_w, gpu.default_power_limit_w
    if enforced is None or default is None or enforced >= default - s.power_limit_tolerance_w:
        return ()
    summary = (f"enforced power limit is {enforced:.0f} W, below its default {default:.0f} W "
               f"({_pct(enforced, default):.0f}%): someone or something capped it (nvidia-smi -pl, a power "
               "policy, a chassis limit)")
    return (Finding(code="POWER_LIMIT_REDUCED", severity=Severity.WARNING, host=host, gpu=gpu.index,
                    summary=summary, evidence={"enforced_power_limit_w": enforced, "default_power_limit_w": default,
                                               "pct_of_default": _pct(enforced, default),
                                               "power_limit_tolerance_w": s.power_limit_tolerance_w}),)


def pcie_link_degraded(host: str, gpu: GpuReading, s: CheckSettings,
                       facts: NodeFacts = NO_FACTS) -> tuple[Finding, ...]:
    """PCIE_LINK_DEGRADED: link generation or width below its maximum while the GPU is busy."""
    if gpu.utilization_pct is None or gpu.utilization_pct < s.pcie_busy_utilization_pct:
        return ()  # idle GPUs lower their link generation on purpose
    if not gpu.pcie_below_max:
        return cannot_judge("PCIE_LINK_DEGRADED", host, gpu, "whether its PCIe link runs below its maximum",
                            "pcie_gen", "pcie_gen_max", "pcie_width", "pcie_width_max")
    summary = (f"PCIe link runs at gen {gpu.pcie_gen} x{gpu.pcie_width} of a possible gen {gpu.pcie_gen_max} "
               f"x{gpu.pcie_width_max} while {gpu.utilization_pct:.0f}% busy: check seating, riser, BIOS "
               "link settings")
    return (Finding(code="PCIE_LINK_DEGRADED", severity=Severity.WARNING, host=host, gpu=gpu.index,
                    summary=summary,
                    evidence={"pcie_gen": gpu.pcie_gen, "pcie_gen_max": gpu.pcie_gen_max,
                              "pcie_width": gpu.pcie_width, "pcie_width_max": gpu.pcie_width_max,
                              "utilization_pct": gpu.utilization_pct,
                              "pcie_busy_utilization_pct": s.pcie_busy_utilization_pct}),)


GpuCheck = Callable[[str, GpuReading, CheckSettings, NodeFacts], tuple[Finding, ...]]


def _slowdown(code: str, what: str, reasons: tuple[str, ...], advice: str) -> GpuCheck:
    mask = reasons_mask(reasons)

    def check(host: str, gpu: GpuReading, s: CheckSettings, facts: NodeFacts = NO_FACTS) -> tuple[Finding, ...]:
        known = [x for x in gpu.samples if x.clock_event_reasons_mask is not None]
        hits = [x for x in known if (x.clock_event_reasons_mask or 0) & mask]
        if not hits:
            return cannot_judge(code, host, gpu, f"whether its clocks were slowed ({code})", "clock_event_reasons_mask")
        fraction = round(len(hits) / len(known), 2)
        drop = None
        if gpu.sm_clock_mhz is not None and gpu.max_sm_clock_mhz:
            drop = _pct(gpu.max_sm_clock_mhz - gpu.sm_clock_mhz, gpu.max_sm_clock_mhz)
        critical = fraction >= s.slowdown_critical_fraction and drop is not None \
            and drop >= s.slowdown_critical_clock_drop_pct
        active = [r for r in reasons if r in gpu.clock_event_reasons]
        clock = f", SM clock {drop:.0f}% below its maximum" if drop is not None else ""
        summary = (f"{what} ({', '.join(active)}) in {len(hits)} of {len(known)} samples{clock}: {advice}")
        return (Finding(code=code, severity=Severity.CRITICAL if critical else Severity.WARNING, host=host,
                        gpu=gpu.index, summary=summary,
                        evidence={"samples_active": len(hits), "samples": len(known), "fraction": fraction,
                                  "sm_clock_mhz": gpu.sm_clock_mhz, "max_sm_clock_mhz": gpu.max_sm_clock_mhz,
                                  "clock_drop_pct": drop, "temperature_c": gpu.temperature_c,
                                  "reasons": ",".join(active),
                                  "slowdown_critical_fraction": s.slowdown_critical_fraction,
                                  "slowdown_critical_clock_drop_pct": s.slowdown_critical_clock_drop_pct}),)

    check.__name__ = code.lower()
    check.__doc__ = f"{code}: {what}; critical when sustained and the SM clock drops far."
    return check


thermal_slowdown = _slowdown("THERMAL_SLOWDOWN", "clocks held down by temperature", THERMAL_REASONS,
                             "check airflow, fans, inlet temperature and the cooling loop")
hw_slowdown = _slowdown("HW_SLOWDOWN", "clocks held down by a hardware slowdown", HW_REASONS,
                        "the board or the power supply pulled the brake - check PSU, power cables and "
                        "the baseboard's events")


def ecc_uncorrected(host: str, gpu: GpuReading, s: CheckSettings,
                    facts: NodeFacts = NO_FACTS) -> tuple[Finding, ...]:
    """ECC_UNCORRECTED: uncorrectable ECC errors since the driver loaded."""
    if not gpu.ecc_uncorrected:
        return cannot_judge("ECC_UNCORRECTED", host, gpu, "whether it had uncorrectable ECC errors",
                            "ecc_uncorrected")
    return (Finding(code="ECC_UNCORRECTED", severity=Severity.CRITICAL, host=host, gpu=gpu.index,
                    summary=f"{gpu.ecc_uncorrected} uncorrectable ECC error(s) since the driver loaded: "
                            "drain the node, check row remapping, reset or replace the GPU",
                    evidence={"ecc_uncorrected": gpu.ecc_uncorrected}),)


def gpu_lost(host: str, gpu: GpuReading, s: CheckSettings, facts: NodeFacts = NO_FACTS) -> tuple[Finding, ...]:
    """GPU_LOST: the driver answers for other GPUs but not for this one."""
    if not gpu.lost:
        return ()
    return (Finding(code="GPU_LOST", severity=Severity.CRITICAL, host=host, gpu=gpu.index,
                    summary=f"GPU at {gpu.pci_bus_id or 'unknown bus id'} is lost (the driver cannot reach it): "
                            "look for Xid 79 in the kernel log; it needs a reset or a reboot",
                    evidence={"pci_bus_id": gpu.pci_bus_id}),)


GPU_CHECKS = (busy_low_power, host_bound, gpu_held_idle, gpu_memory_unaccounted, power_limit_reduced,
              pcie_link_degraded, thermal_slowdown, hw_slowdown, ecc_uncorrected, gpu_lost)
