"""Short lines of context for a host's findings: its topology and virtualization, its servers' configuration
(from their configuration echoes), and the last line of what the logs measure (decode throughput). Pure text.

Shown under a host's findings (not for hosts without findings: context explains a verdict, it is not one).
"""

from __future__ import annotations

from gpudiag.model import Finding, GpuProcess, HostReport, NodeContext, NodeReadings, link_names
from gpudiag.model.culprit import ProcessChoice, choose_working, named_in

FACTS_SHOWN = 12  # at most this many facts per server line
_MEASURES = ("sglang_decode_batch",)  # info signatures whose last values are worth a line


def context_line(context: NodeContext | None, gpus: int) -> str | None:
    """ "8 GPUs over PCIe only (PIX/NODE/SYS, no NVLink); a KVM virtual machine (systemd-detect-virt)"."""
    if context is None:
        return None
    parts = []
    if context.links:
        names = link_names(context.links)
        shown = {"pcie": f"over PCIe only ({names}, no NVLink)", "nvlink": f"over NVLink ({names})",
                 "mixed": f"over NVLink and PCIe ({names})"}.get(context.interconnect or "", f"linked {names}")
        parts.append(f"{gpus} GPUs {shown}")
    elif context.topology_error:
        parts.append(f"topology not read ({context.topology_error})")
    elif gpus == 1:
        parts.append("1 GPU (no GPU pairs)")
    if context.vm_description:
        parts.append(context.vm_description)
    elif context.is_vm is False:
        parts.append("not a VM" + (f" (container: {context.container})" if context.container not in
                                    (None, "none", "") else ""))
    return "; ".join(parts) or None


def evidence_lines(host: HostReport) -> tuple[tuple[str, str], ...]:
    """(label, text) lines: context, each server's facts, the last measure lines."""
    readings = host.readings
    if readings is None or not host.findings:
        return ()
    lines: list[tuple[str, str]] = []
    context = context_line(readings.context, len(readings.gpus))
    if context:
        lines.append(("context", context))
    lines.extend(process_lines(readings, host.findings))
    for scan in readings.logs:
        for facts in scan.facts:
            if not facts.values:
                continue
            shown = ", ".join(f"{k}={v}" for k, v in facts.values[:FACTS_SHOWN])
            starts = f", {facts.count} starts in the log" if facts.count > 1 else ""
            lines.append(("server", f"{facts.server or facts.echo} ({scan.path}{starts}): {shown}"))
        if scan.found_from:
            lines.append(("log", f"{scan.resolved or scan.path}: found as the {scan.found_from}, not configured"))
        for match in scan.matches:
            if match.signature in _MEASURES and match.values:
                values = ", ".join(f"{k}={v}" for k, v in match.values)
                lines.append(("last", f"{match.signature} ({match.count} lines): {values}"))
    return tuple(lines)


def process_text(p: GpuProcess, others: int = 0) -> str:
    """ "pid 4312 sglang (job 81723), alice, 98% CPU, 118.0 GiB, docker 3f2a9c1b0e4d (+2 more)"."""
    parts = [p.label]
    if p.user:
        parts.append(p.user)
    if p.cpu_pct is not None:
        parts.append(f"{p.cpu_pct:.0f}% CPU")
    if p.sm_utilization_pct is not None:
        parts.append(f"{p.sm_utilization_pct:.0f}% SM")
    if p.used_memory_mib is not None:
        parts.append(f"{p.used_memory_mib / 1024:.1f} GiB")
    if p.container:
        parts.append(p.container)
    if p.unreadable:
        parts.append("; ".join(f"{field}: {why}" for field, why in p.unreadable[:2]))
    return ", ".join(parts) + (f" (+{others} more)" if others else "")


def shown_process(readings: NodeReadings, gpu: int, findings: tuple[Finding, ...] = ()) -> ProcessChoice | None:
    """The process a GPU's row names, by the findings' rule: the one its first finding names (the pid in the
    evidence, with how it was chosen: the pegging process of HOST_BOUND, the holder of GPU_HELD_IDLE), else
    the one whose kernels occupy it (:func:`choose_working`: the SM share, the only one, or ambiguous)."""
    procs = readings.processes_on(gpu)
    named = (named_in(f.evidence, procs) for f in findings if f.gpu == gpu)
    return next((choice for choice in named if choice is not None), None) or choose_working(procs)


def process_lines(readings: NodeReadings, findings: tuple[Finding, ...] = ()) -> tuple[tuple[str, str], ...]:
    """("gpu 0", the process GPU 0's row names) for each GPU that has processes; GPUs that name the same one
    process (a job over several GPUs) share a line; an ambiguous GPU lists its processes."""
    by_text: dict[str, list[int]] = {}
    for gpu in readings.gpus:
        choice = shown_process(readings, gpu.index, findings)
        if choice is None:
            continue
        if choice.process is not None:
            text = process_text(choice.process, len(readings.processes_on(gpu.index)) - 1)
        else:
            text = "cannot tell which runs the kernels: " + "; ".join(process_text(p) for p in choice.candidates)
        by_text.setdefault(text, []).append(gpu.index)
    return tuple((f"gpu {_ranges(gpus)}", text) for text, gpus in by_text.items())


def _ranges(indexes: list[int]) -> str:
    """[0, 1, 2, 3, 5] → "0-3,5"."""
    runs: list[list[int]] = []
    for i in sorted(indexes):
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ",".join(map(str, r)) for r in runs)
