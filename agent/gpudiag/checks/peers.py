"""ODD_GPU_OUT: in a node whose GPUs all run one job, the GPU that behaves unlike its peers. Pure.

The GPUs of one tensor- or data-parallel job move together: they launch the same kernels and meet in the
same collectives. One whose utilization, power or SM clock differs clearly from its peers' median is the
likely straggler (a slower GPU, a throttled one) or the one stuck in a collective the others wait in. Only
judged where the node's GPUs visibly run one job (the same process, Slurm job or container on every GPU):
GPUs running different jobs have no reason to agree.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from gpudiag.model import CheckSettings, Finding, GpuProcess, GpuReading, NodeReadings, Severity

MIN_GPUS = 3  # a median of peers needs at least two peers


def one_job(node: NodeReadings, gpus: tuple[GpuReading, ...]) -> str | None:
    """ "job 81723", "pid 4312", "docker 3f2a9c1b0e4d" when every one of ``gpus`` has a process of it, else None."""
    per_gpu = [node.processes_on(g.index) for g in gpus]
    if not all(per_gpu):
        return None
    keys: tuple[Callable[[GpuProcess], str | None], ...] = (
        lambda p: f"job {p.job_id}" if p.job_id else None,
        lambda p: f"pid {p.pid}",
        lambda p: p.container)
    for key in keys:
        shared = set.intersection(*({k for k in map(key, procs) if k is not None} for procs in per_gpu))
        if shared:
            return sorted(shared)[0]
    return None


def _differences(gpu: GpuReading, peers: list[GpuReading], s: CheckSettings) -> tuple[list[str], dict[str, object]]:
    words: list[str] = []
    evidence: dict[str, object] = {}

    def median(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return statistics.median(present) if len(present) >= MIN_GPUS - 1 else None

    util, util_peers = gpu.utilization_pct, median([p.utilization_pct for p in peers])
    if util is not None and util_peers is not None:
        evidence.update(utilization_pct=util, peers_utilization_pct=util_peers)
        if abs(util - util_peers) >= s.odd_gpu_utilization_points:
            words.append(f"{util:.0f}% busy against their median {util_peers:.0f}%")
    power = gpu.power()
    peer_powers = [p.power() for p in peers]
    watts, watts_peers = (power.watts if power else None), median([p.watts if p else None for p in peer_powers])
    if watts is not None and watts_peers:
        evidence.update(watts=watts, peers_watts=watts_peers)
        if abs(watts - watts_peers) >= s.odd_gpu_power_pct / 100.0 * watts_peers:
            words.append(f"{watts:.0f} W against {watts_peers:.0f} W")
    clock, clock_peers = gpu.sm_clock_mhz, median([p.sm_clock_mhz for p in peers])
    if clock is not None and clock_peers:
        evidence.update(sm_clock_mhz=clock, peers_sm_clock_mhz=clock_peers)
        if abs(clock - clock_peers) >= s.odd_gpu_clock_pct / 100.0 * clock_peers:
            words.append(f"SM clock {clock:.0f} MHz against {clock_peers:.0f} MHz")
    return words, evidence


def odd_gpu_out(host: str, node: NodeReadings, s: CheckSettings) -> tuple[Finding, ...]:
    """ODD_GPU_OUT: a GPU of a one-job node clearly unlike its peers (fewer than half of the GPUs are)."""
    gpus = tuple(g for g in node.gpus if not g.lost)
    if len(gpus) < MIN_GPUS:
        return ()
    job = one_job(node, gpus)
    if job is None:
        return ()
    odd = []
    for gpu in gpus:
        words, evidence = _differences(gpu, [p for p in gpus if p.index != gpu.index], s)
        if words:
            odd.append((gpu, words, evidence))
    if not odd or 2 * len(odd) >= len(gpus):
        return ()  # no one stands out, or there is no majority to stand out from
    return tuple(Finding(
        code="ODD_GPU_OUT", severity=Severity.WARNING, host=host, gpu=gpu.index,
        summary=(f"unlike the other {len(gpus) - 1} GPUs of {job}: {', '.join(words)} - the likely straggler, "
                 "or the one stuck in a collective the others wait in; look at its clocks, its Xids and its "
                 "rank's log"),
        evidence={"job": job, "peers": len(gpus) - 1, **evidence,
                  "odd_gpu_utilization_points": s.odd_gpu_utilization_points,
                  "odd_gpu_power_pct": s.odd_gpu_power_pct, "odd_gpu_clock_pct": s.odd_gpu_clock_pct})
        for gpu, words, evidence in odd)
