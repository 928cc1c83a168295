"""GPU memory and who holds it: ``GPU_HELD_IDLE`` (a process holds more than a bare context's memory on a GPU that
did nothing for the whole window: the most expensive waste on a shared cluster) and ``GPU_MEMORY_UNACCOUNTED``
(memory in use that no listed process holds: a process the collector's user cannot see, or a dead process's
leftover context). Pure functions ``(host, gpu, settings, facts) -> findings``, registered in
:data:`gpudiag.checks.gpu.GPU_CHECKS`."""

from __future__ import annotations

from gpudiag.checks.context import NO_FACTS, NodeFacts
from gpudiag.checks.named import choice_evidence
from gpudiag.model import CheckSettings, Finding, GpuProcess, GpuReading, Severity
from gpudiag.model.culprit import choose_holding


def _gib(mib: float) -> str:
    return f"{mib / 1024:.1f} GiB"


def idle_all_window(gpu: GpuReading, procs: tuple[GpuProcess, ...]) -> bool:
    """0% utilization in every sample of the window (the median where no sample was kept), and no process
    with an SM share above zero."""
    values = [x.utilization_pct for x in gpu.samples if x.utilization_pct is not None]
    if not values:
        values = [gpu.utilization_pct] if gpu.utilization_pct is not None else []
    return bool(values) and max(values) <= 0.0 and not any((p.sm_utilization_pct or 0.0) > 0.0 for p in procs)


def owner_words(p: GpuProcess) -> str:
    """ "user alice, Slurm job 81723, docker 3f2a9c1b0e4d" (the parts known), or "owner not readable"."""
    parts = ([f"user {p.user}"] if p.user else []) + ([f"Slurm job {p.job_id}"] if p.job_id else []) + \
        ([p.container] if p.container else [])
    return ", ".join(parts) or "owner not readable"


def holder_identity(p: GpuProcess) -> str:
    """What keeps a held-idle streak one streak across runs: the Slurm job, else the container, else the pid
    (a new job on the same GPU starts a new streak)."""
    return f"job {p.job_id}" if p.job_id else (p.container or f"pid {p.pid}")


def gpu_held_idle(host: str, gpu: GpuReading, s: CheckSettings, facts: NodeFacts = NO_FACTS) -> tuple[Finding, ...]:
    """GPU_HELD_IDLE: 0% busy for the whole window while one process holds at least ``held_idle_memory_mib`` of
    the GPU's memory (more than a bare CUDA context: a monitoring tool's or an idle interpreter's context is not
    a holder): allocated and unused, from one run. Names the holder, its user, its Slurm job or container, and
    how much it holds; with ``--history`` the audit adds for how many runs and hours it has been so, and past
    ``held_idle_critical_hours`` makes it critical (:mod:`gpudiag.audit.streaks`). Not on a GPU with no process
    (idle and free), nor on a busy one."""
    procs = facts.processes_on(gpu.index)
    total = gpu.memory_total_mib
    if gpu.lost or not procs or not total or not idle_all_window(gpu, procs):
        return ()
    choice = choose_holding(procs)
    if choice is None or choice.process is None or choice.process.used_memory_mib is None:
        return ()
    p = choice.process
    held = p.used_memory_mib or 0.0
    if held < s.held_idle_memory_mib:
        return ()
    share = round(100.0 * held / total, 1)
    samples = len(gpu.samples)
    window = facts.node.window_s if facts.node is not None else None
    over = f"in all {samples} samples" if samples else "over the window"
    over += f" over {window:.1f} s" if window else ""
    power = gpu.power()
    draws = f", drawing {power.watts:.0f} W" if power is not None else ""
    others = f" ({choice.why})" if len(procs) > 1 else ""
    summary = (f"held and idle: 0% busy {over} while {p.label}{others} holds {_gib(held)} of its {_gib(total)} "
               f"({share:.0f}%){draws}; {owner_words(p)}: the GPU is allocated and does nothing - ask its owner to "
               "release it or end the job")
    evidence: dict[str, object] = {
        **choice_evidence(choice), "holder": holder_identity(p), "used_memory_mib": held,
        "memory_total_mib": total, "held_pct": share, "gpu_memory_used_mib": gpu.memory_used_mib,
        "utilization_pct": gpu.utilization_pct, "samples": samples, "window_s": window,
        "watts": power.watts if power is not None else None, "held_idle_memory_mib": s.held_idle_memory_mib}
    return (Finding(code="GPU_HELD_IDLE", severity=Severity.WARNING, host=host, gpu=gpu.index, summary=summary,
                    evidence=evidence),)


def gpu_memory_unaccounted(host: str, gpu: GpuReading, s: CheckSettings,
                           facts: NodeFacts = NO_FACTS) -> tuple[Finding, ...]:
    """GPU_MEMORY_UNACCOUNTED: the GPU's used memory exceeds what its listed processes hold by at least
    ``unaccounted_memory_mib``: a process in another PID namespace or container the collector's user cannot
    see, or a context a dead process left behind. Only where the processes were listed for this GPU (never
    guessed from a failed listing), every listed process's memory is known, and the listing found some process
    on the node: a listing that finds none anywhere (a collector whose user or namespace sees no GPU process)
    would flag every GPU of every node at once, which says something about the sweep, not about a GPU."""
    node = facts.node
    used = gpu.memory_used_mib
    if gpu.lost or used is None or node is None or node.processes_from is None \
            or gpu.index in node.processes_unlisted or not node.processes:
        return ()
    procs = facts.processes_on(gpu.index)
    if any(p.used_memory_mib is None for p in procs):
        return ()
    listed = sum(p.used_memory_mib or 0.0 for p in procs)
    unaccounted = round(used - listed, 1)
    if unaccounted < s.unaccounted_memory_mib:
        return ()
    who = f"the {len(procs)} listed process{'es' if len(procs) != 1 else ''} hold {_gib(listed)}" if procs \
        else f"{node.processes_from} lists no process on it, though it lists some on other GPUs"
    user = f" (as user {node.processes_user})" if node.processes_user else ""
    summary = (f"{_gib(unaccounted)} of its {_gib(used)} used memory is held by no listed process ({who}): a "
               f"process in another PID namespace or container this sweep's user{user} cannot see, or a context "
               "left behind by a dead process - look with nvidia-smi as root on the host (or in the job's "
               "container), and reset the GPU once nothing uses it")
    return (Finding(code="GPU_MEMORY_UNACCOUNTED", severity=Severity.WARNING, host=host, gpu=gpu.index,
                    summary=summary,
                    evidence={"memory_used_mib": used, "listed_processes_memory_mib": listed,
                              "unaccounted_memory_mib": unaccounted, "listed_processes": len(procs),
                              "processes_from": node.processes_from, "processes_user": node.processes_user,
                              "unaccounted_memory_threshold_mib": s.unaccounted_memory_mib}),)
