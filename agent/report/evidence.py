"""Short lines of context for a host's findings: its topology and virtualization, its servers' configuration
(from their configuration echoes), and the last line of what the logs measure (decode throughput). Pure text.

Shown under a host's findings (not for hosts without findings: context explains a verdict, it is not one).
"""

from __future__ import annotations

from gpudiag.model import HostReport, NodeContext, link_names

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
    for scan in readings.logs:
        for facts in scan.facts:
            if not facts.values:
                continue
            shown = ", ".join(f"{k}={v}" for k, v in facts.values[:FACTS_SHOWN])
            starts = f", {facts.count} starts in the log" if facts.count > 1 else ""
            lines.append(("server", f"{facts.server or facts.echo} ({scan.path}{starts}): {shown}"))
        for match in scan.matches:
            if match.signature in _MEASURES and match.values:
                values = ", ".join(f"{k}={v}" for k, v in match.values)
                lines.append(("last", f"{match.signature} ({match.count} lines): {values}"))
    return tuple(lines)
