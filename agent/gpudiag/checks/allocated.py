"""GPU_ALLOCATED_IDLE: a GPU the scheduler gave a running job, with no process on it and 0% busy through the
window: allocated, unused, and out of everyone else's reach (guilbaults/slurm-job-exporter#65 calls a GPU
allocated with no process "the single most wasteful pattern": no per-process tool sees it). Pure.

The GPUs each job was given come from Slurm (:mod:`gpudiag.sources.slurm_jobs`, read once before the sweep
into ``SweepOptions.allocations``); the readings from the sweep. A GPU counts only where its host answered, the
GPU was read and not lost, the node's process listing covered it (a listing that failed says nothing about
"no process") and every sample read 0% (:func:`gpudiag.checks.holding.idle_all_window`). A GPU that a process
holds while idle is ``GPU_HELD_IDLE``'s, not this check's: together they answer "which GPUs that someone has do
nothing, whose, since when". With ``--history`` the audit adds for how many runs and hours
(:mod:`gpudiag.audit.streaks`; the streak is the job's on that GPU: evidence ``holder`` is ``job <id>``).

A fleet-step check: it needs the whole report and the scheduler's allocations, so the fleet step calls
:func:`gpu_allocated_idle` once, and :func:`with_allocated_idle` adds its findings to a report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from gpudiag.checks.actions import with_action
from gpudiag.checks.holding import idle_all_window
from gpudiag.model import CheckSettings, Finding, GpuReading, HostReport, JobAllocation, Severity, SweepReport


def _indexes(gpus: Iterable[int]) -> str:
    """(0, 1, 2, 5) → "0-2,5": Slurm's own way to write a GPU index list."""
    ordered = sorted(set(gpus))
    runs: list[tuple[int, int]] = []
    for index in ordered:
        if runs and index == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], index)
        else:
            runs.append((index, index))
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def _job_words(allocation: JobAllocation) -> str:
    """ "Slurm job 81723 (pretrain) of user alice, running since 2026-12-03T09:12:40" (the parts known)."""
    words = f"Slurm job {allocation.job_id}" + (f" ({allocation.name})" if allocation.name else "")
    words += f" of user {allocation.user}" if allocation.user else " (user not known)"
    return words + (f", running since {allocation.started_at}" if allocation.started_at else "")


def _finding(host: HostReport, gpu: GpuReading, allocation: JobAllocation) -> Finding:
    readings = host.readings
    window = readings.window_s if readings is not None else None
    samples = len(gpu.samples)
    over = f"in all {samples} samples" if samples else "over the window"
    over += f" over {window:.1f} s" if window else ""
    power = gpu.power()
    draws = f", drawing {power.watts:.0f} W" if power is not None else ""
    others = f" (the job has GPUs {_indexes(allocation.gpus)} here)" if len(allocation.gpus) > 1 else ""
    summary = (f"allocated and idle: given to {_job_words(allocation)}{others}, yet no process on it and 0% busy "
               f"{over}{draws} - ask the job's owner to use it or give it back (a smaller request, or end the job)")
    evidence: dict[str, object] = {
        "job_id": allocation.job_id, "user": allocation.user, "job_name": allocation.name,
        "partition": allocation.partition, "started_at": allocation.started_at,
        "job_gpus_here": list(allocation.gpus), "holder": f"job {allocation.job_id}", "processes": 0,
        "utilization_pct": gpu.utilization_pct, "memory_used_mib": gpu.memory_used_mib, "samples": samples,
        "window_s": window, "watts": power.watts if power is not None else None, "source": "slurm"}
    return with_action(Finding(code="GPU_ALLOCATED_IDLE", severity=Severity.WARNING, host=host.host,
                               gpu=gpu.index, summary=summary, evidence=evidence))


def _listed(host: HostReport, gpu: int) -> bool:
    """Whether the node's process listing covered ``gpu``, so that "no process" is a reading, not a gap."""
    readings = host.readings
    return readings is not None and readings.processes_from is not None and gpu not in readings.processes_unlisted


def gpu_allocated_idle(report: SweepReport, allocations: Iterable[JobAllocation],
                       settings: CheckSettings | None = None) -> dict[str, tuple[Finding, ...]]:
    """host -> its GPU_ALLOCATED_IDLE findings, in GPU order: each GPU that a running job was given on a host
    that answered, with no process on it and 0% busy in every sample. A host with none is not in the result.

    ``settings`` is the sweep's (the same call as the other fleet checks; no threshold applies: 0% is 0%)."""
    del settings
    by_host: dict[str, list[JobAllocation]] = {}
    for allocation in allocations:
        by_host.setdefault(allocation.node, []).append(allocation)
    out: dict[str, tuple[Finding, ...]] = {}
    for host in report.hosts:
        given = by_host.get(host.host)
        if not given or not host.status.answered or host.readings is None:
            continue
        gpus = {gpu.index: gpu for gpu in host.gpus}
        found: dict[int, Finding] = {}
        for allocation in given:
            for index in allocation.gpus:
                gpu = gpus.get(index)
                if gpu is None or gpu.lost or index in found or not _listed(host, index):
                    continue
                procs = host.readings.processes_on(index)
                if not procs and idle_all_window(gpu, procs):
                    found[index] = _finding(host, gpu, allocation)
        if found:
            out[host.host] = tuple(found[i] for i in sorted(found))
    return out


def with_allocated_idle(report: SweepReport, allocations: Iterable[JobAllocation],
                        settings: CheckSettings | None = None) -> SweepReport:
    """``report`` with each host's GPU_ALLOCATED_IDLE findings after its own."""
    found = gpu_allocated_idle(report, allocations, settings)
    if not found:
        return report
    return dataclasses.replace(report, hosts=tuple(
        dataclasses.replace(h, findings=(*h.findings, *found[h.host])) if h.host in found else h
        for h in report.hosts))
