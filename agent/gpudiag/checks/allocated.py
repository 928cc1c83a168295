"""GPU_ALLOCATED_IDLE: a GPU the scheduler gave a running job, with no process on it and 0% busy through the
window: allocated, unused, and nobody else can have it. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from gpudiag.checks.holding import idle_all_window
from gpudiag.model import CheckSettings, Finding, JobAllocation, Severity, SweepReport


def gpu_allocated_idle(report: SweepReport, allocations: Sequence[JobAllocation],
                       settings: CheckSettings) -> dict[str, tuple[Finding, ...]]:
    """host -> its GPU_ALLOCATED_IDLE findings: each allocated GPU of an answering host that no process uses and
    that read 0% busy in every sample."""
    by_name = {h.host: h for h in report.hosts}
    out: dict[str, list[Finding]] = {}
    for a in allocations:
        host = by_name.get(a.node)
        if host is None or not host.status.answered or host.readings is None:
            continue
        for index in a.gpus:
            gpu = next((g for g in host.gpus if g.index == index), None)
            if gpu is None or gpu.lost:
                continue
            procs = host.readings.processes_on(index)
            if procs or not idle_all_window(gpu, procs):
                continue
            since = f" since {a.started_at}" if a.started_at else ""
            who = f" of user {a.user}" if a.user else ""
            out.setdefault(host.host, []).append(Finding(
                code="GPU_ALLOCATED_IDLE", severity=Severity.WARNING, host=host.host, gpu=index,
                summary=(f"allocated to Slurm job {a.job_id}{who}{since}, yet no process runs on it and it read 0% "
                         "busy all window: ask the job's owner to use it or give it back"),
                evidence={"job": f"job {a.job_id}", "job_id": a.job_id, "user": a.user, "started_at": a.started_at,
                          "allocated_gpus": ",".join(map(str, a.gpus))}))
    return {host: tuple(found) for host, found in out.items()}
