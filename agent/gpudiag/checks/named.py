"""A process as a finding names it: who, what, which job, how it was chosen and why that one
(:class:`~gpudiag.model.culprit.ProcessChoice`), as evidence and as the words the sentence ends with. Pure."""

from __future__ import annotations

from gpudiag.model import GpuProcess
from gpudiag.model.culprit import PID, ChosenBy, ProcessChoice, said
from gpudiag.model.nccl_ras import NcclRasStatus

COMMAND_CHARS = 160  # of a process's command line in a finding's evidence


def process_evidence(p: GpuProcess) -> dict[str, object]:
    """A GPU process as a finding's evidence: who, what, which job, and what /proc would not say."""
    command = " ".join(p.command)
    evidence: dict[str, object] = {
        PID: p.pid, "process": p.label, "user": p.user,
        "command": command[:COMMAND_CHARS] + ("..." if len(command) > COMMAND_CHARS or p.command_cut else ""),
        "job_id": p.job_id, "container": p.container, "process_cpu_pct": p.cpu_pct,
        "process_sm_utilization_pct": p.sm_utilization_pct, "process_memory_mib": p.used_memory_mib}
    evidence.update({f"{name}_unreadable": why for name, why in p.unreadable})
    return evidence


def choice_evidence(choice: ProcessChoice) -> dict[str, object]:
    """The chosen process's evidence with ``process_chosen_by`` and ``process_chosen_why``; an ambiguous choice
    lists every candidate in ``processes`` (and names no pid)."""
    how = said(choice)
    if choice.process is not None:
        return {**process_evidence(choice.process), **how}
    return {**how, "processes": "; ".join(_candidate(p) for p in choice.candidates),
            "process_count": len(choice.candidates)}


def _candidate(p: GpuProcess) -> str:
    parts = [p.label] + ([p.user] if p.user else []) + \
        ([f"{p.used_memory_mib / 1024:.1f} GiB"] if p.used_memory_mib is not None else [])
    return ", ".join(parts)


def choice_words(choice: ProcessChoice) -> str:
    """ "on it: pid 4312 sglang (job 81723), chosen as the only process on the GPU", or for an ambiguous choice
    "the culprit cannot be told apart: 2 processes ... (pid 11 a.py, root, 60.0 GiB; pid 12 ...)"."""
    if choice.chosen_by is ChosenBy.AMBIGUOUS:
        return (f"the culprit cannot be told apart: {choice.why} ("
                + "; ".join(_candidate(p) for p in choice.candidates) + ")")
    assert choice.process is not None
    return f"on it: {choice.process.label}, chosen as {choice.why}"


def ras_evidence(ras: NcclRasStatus) -> dict[str, object]:
    """What NCCL's RAS said, as evidence: the job's ranks and nodes, the missing and lagging ranks."""
    return {"nccl_version": ras.nccl_version, "nccl_ras_ranks": ras.ranks,
            "nccl_ras_ranks_answering": ras.ranks_answering, "nccl_ras_node_count": ras.node_count,
            "nccl_ras_nodes": ", ".join(ras.nodes) or None,
            "nccl_ras_missing_ranks": ", ".join(str(r.rank) for r in ras.missing_ranks) or None,
            "nccl_ras_lagging_ranks": ", ".join(str(r.rank) for r in ras.lagging_ranks) or None,
            "nccl_ras_port": ras.port}
