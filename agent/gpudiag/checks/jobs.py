"""The job view: every GPU of a sweep grouped by the job it runs, across hosts, and what a job says that no
single host can. Pure.

A job's GPUs are found from what the nodes and the scheduler tell:

* the processes on each GPU: their Slurm job (cgroup or ``SLURM_JOB_ID``), else their container or pod;
* the scheduler: the GPUs Slurm gave each running job (:class:`~gpudiag.model.JobAllocation`), and a
  ``--slurm-job`` selection (its hosts' group ``job N``), which also place a host that did not answer;
* the job's own NCCL RAS answer (:class:`~gpudiag.model.nccl_ras.NcclRasStatus`), read on any of its nodes: its
  missing, dead and lagging ranks, with their host and GPU, joined across the nodes that answered.

Each GPU of a job gets a state (:data:`~gpudiag.model.GPU_STATES`) from the findings its host already has
(BUSY_LOW_POWER is "waiting": the one rule for a starved GPU), then per job:

* ``JOB_WAITS_ON``: most of the job's GPUs wait (busy at low power: spinning in a collective) and some do not
  (computing, idle, throttled, lost, on a host that did not answer), or RAS names missing or lagging ranks:
  those are the likely cause, named in one finding on the first one's host, with the job's median beside
  their figures; the waiting GPUs' BUSY_LOW_POWER findings point to it (``waits_on``).
* ``JOB_STRAGGLER``: every GPU of the job computes and one (or a few) is clearly slower than the job's
  median: SM clock, power, SM activity or utilization below it by the ODD_GPU_OUT margins.
* ``GPU_ALLOCATED_IDLE``: a GPU the scheduler gave the job, with no process and 0% busy all window
  (:mod:`gpudiag.checks.allocated`, judged per host before this step): the job's line says how many.

A job on several hosts is judged here, so a node's own ODD_GPU_OUT on that job's GPUs gives way to the job's
verdict (it saw only part of the job). A job whose GPUs agree is quiet.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterable, Mapping, Sequence

from gpudiag.checks.actions import with_action
from gpudiag.checks.settings import CheckSettings
from gpudiag.model import (
    Finding,
    GpuReading,
    HostReport,
    JobAllocation,
    JobGpu,
    JobView,
    Severity,
    SweepReport,
    worst,
)
from gpudiag.model.nccl_ras import RasRank
from gpudiag.sources.hostlist import fold

JOB_GROUP = "job "  # a --slurm-job selection's group: "job 81723"
THROTTLE_CODES = ("THERMAL_SLOWDOWN", "HW_SLOWDOWN")
MIN_STRAGGLER_GPUS = 3  # a median of peers needs at least two peers
MOST_NAMED = 6  # culprits named in a sentence (all are in the evidence)


@dataclasses.dataclass(slots=True)
class _Job:
    """A job being gathered: its GPUs by (host, gpu), its user, what the scheduler and RAS said."""

    key: str
    users: dict[str, None] = dataclasses.field(default_factory=dict)
    gpus: dict[tuple[str, int | None], None] = dataclasses.field(default_factory=dict)
    allocated: int = 0
    started_at: str | None = None
    ras: list[tuple[str, RasRank]] = dataclasses.field(default_factory=list)  # (the host that asked, rank)


def _job_of_process(job_id: str | None, container: str | None) -> str | None:
    return f"job {job_id}" if job_id else container


def _gather(report: SweepReport, groups: Mapping[str, Sequence[str]],
            allocations: Sequence[JobAllocation]) -> dict[str, _Job]:
    jobs: dict[str, _Job] = {}

    def job(key: str) -> _Job:
        return jobs.setdefault(key, _Job(key=key))

    by_name = {h.host: h for h in report.hosts}
    for host in report.hosts:
        node = host.readings
        if node is None:
            continue
        pid_job: dict[int, str] = {}
        for p in node.processes:
            key = _job_of_process(p.job_id, p.container)
            if key is None:
                continue
            pid_job[p.pid] = key
            j = job(key)
            j.gpus[(host.host, p.gpu)] = None
            if p.user:
                j.users[p.user] = None
        ras = node.nccl_ras
        if ras is not None and ras.answered:
            key = _ras_job(ras.asked_from, pid_job)
            if key is not None:
                j = job(key)
                j.ras.extend((host.host, r) for r in (*ras.missing_ranks, *ras.lagging_ranks))
                for rank in (*ras.missing_ranks, *ras.lagging_ranks):
                    where = _host_named(report, rank.host)
                    if where is not None and not _answered(by_name[where]):
                        j.gpus[(where, None)] = None
    for a in allocations:
        if a.node not in by_name:
            continue
        j = job(f"job {a.job_id}")
        if a.user:
            j.users[a.user] = None
        j.started_at = j.started_at or a.started_at
        j.allocated += len(a.gpus)
        if _answered(by_name[a.node]):
            for index in a.gpus:
                j.gpus[(a.node, index)] = None
        else:
            j.gpus[(a.node, None)] = None
    for host in report.hosts:  # a --slurm-job selection: a host of the job that did not answer is still the job's
        for group in groups.get(host.host, ()):
            if group.startswith(JOB_GROUP) and not _answered(host) and group in jobs:
                jobs[group].gpus[(host.host, None)] = None
    return jobs


def _ras_job(asked_from: str | None, pid_job: Mapping[int, str]) -> str | None:
    """The job whose RAS port answered: the process whose NCCL_RAS_ADDR was asked, else the node's one job."""
    if asked_from and " of pid " in asked_from:
        pid = asked_from.rsplit(" of pid ", 1)[1].split()[0]
        if pid.isdigit() and int(pid) in pid_job:
            return pid_job[int(pid)]
    keys = set(pid_job.values())
    return keys.pop() if len(keys) == 1 else None


def _host_named(report: SweepReport, address: str | None) -> str | None:
    """The swept host RAS names by its address (or name), or None."""
    if not address:
        return None
    for h in report.hosts:
        if address in (h.host, h.address) or (h.readings is not None and h.readings.hostname == address):
            return h.host
    return None


def _answered(host: HostReport) -> bool:
    return host.status.answered and host.readings is not None


def _gpu(host: HostReport, index: int) -> GpuReading | None:
    return next((g for g in host.gpus if g.index == index), None)


def _state(host: HostReport, gpu: GpuReading | None, s: CheckSettings) -> str:
    if gpu is None:
        return "unanswered" if not _answered(host) else "lost"
    if gpu.lost:
        return "lost"
    codes = {f.code for f in host.findings if f.gpu == gpu.index}
    if codes & set(THROTTLE_CODES):
        return "throttled"
    if "BUSY_LOW_POWER" in codes:
        return "waiting"
    busiest = max((x.utilization_pct for x in gpu.samples if x.utilization_pct is not None),
                  default=gpu.utilization_pct)
    if busiest is not None and busiest < s.job_idle_utilization_pct:
        return "idle"
    util = gpu.utilization_pct
    return "computing" if util is not None and util >= s.busy_utilization_pct else "partly busy"


def _job_gpu(host: HostReport, index: int | None, s: CheckSettings) -> JobGpu:
    gpu = _gpu(host, index) if index is not None else None
    if index is None or gpu is None:
        return JobGpu(host=host.host, gpu=index if _answered(host) else None, state=_state(host, gpu, s))
    power = gpu.power()
    return JobGpu(host=host.host, gpu=index, state=_state(host, gpu, s), utilization_pct=gpu.utilization_pct,
                  power_pct_of_limit=power.pct_of_limit if power is not None else None,
                  sm_active_pct=gpu.sm_active_pct, sm_clock_mhz=gpu.sm_clock_mhz)


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 1) if present else None


def _figures(g: JobGpu) -> str:
    """ "3% busy, 21% of its power limit" (what is known), or its state."""
    parts = []
    if g.utilization_pct is not None:
        parts.append(f"{g.utilization_pct:.0f}% busy")
    if g.power_pct_of_limit is not None:
        parts.append(f"{g.power_pct_of_limit:.0f}% power")
    if g.sm_active_pct is not None:
        parts.append(f"SM {g.sm_active_pct:.0f}% active")
    return ", ".join(parts)


def _named(culprits: Sequence[tuple[JobGpu, str]]) -> str:
    shown = "; ".join(f"{g.place} ({why})" for g, why in culprits[:MOST_NAMED])
    more = f"; +{len(culprits) - MOST_NAMED} more" if len(culprits) > MOST_NAMED else ""
    return shown + more


_WHY = {"computing": "computing", "partly busy": "partly busy", "idle": "idle", "throttled": "throttled",
        "lost": "lost to the driver", "unanswered": "its host did not answer"}


def _waits_on(view: JobView, rows: Sequence[JobGpu], ras: Sequence[tuple[str, RasRank]],
              report: SweepReport) -> tuple[list[tuple[JobGpu, str]], int]:
    """The GPUs a job's waiting GPUs likely wait on, each with why, and how many wait."""
    waiting = sum(1 for g in rows if g.state == "waiting")
    culprits: dict[str, tuple[JobGpu, str]] = {}
    for asked, rank in ras:  # the job's own word first
        where = _host_named(report, rank.host) or rank.host or "an unknown host"
        row = next((g for g in rows if g.host == where and (g.gpu == rank.gpu or g.gpu is None)), None)
        row = row or JobGpu(host=where, gpu=rank.gpu, state="unanswered" if rank.state != "lagging" else "computing")
        why = f"NCCL RAS on {asked}: rank {rank.rank} {rank.state}" + (f", {rank.detail}" if rank.detail else "")
        culprits.setdefault(row.place, (row, why))
    if 2 * waiting > len(rows) and waiting < len(rows):
        for g in rows:
            if g.state != "waiting":
                figures = _figures(g)
                culprits.setdefault(g.place, (g, _WHY[g.state] + (f": {figures}" if figures else "")))
    return list(culprits.values()), waiting


def _stragglers(rows: Sequence[JobGpu], s: CheckSettings) -> list[tuple[JobGpu, str]]:
    """The computing GPUs clearly slower than the job's median, when every GPU computes."""
    if len(rows) < MIN_STRAGGLER_GPUS or any(g.state != "computing" for g in rows):
        return []
    margins = (("utilization_pct", "busy", lambda m: s.odd_gpu_utilization_points, "%"),
               ("power_pct_of_limit", "power", lambda m: s.odd_gpu_power_pct / 100.0 * m, "% of limit"),
               ("sm_active_pct", "SM active", lambda m: s.odd_gpu_sm_activity_pct / 100.0 * m, "%"),
               ("sm_clock_mhz", "SM clock", lambda m: s.odd_gpu_clock_pct / 100.0 * m, " MHz"))
    slow: list[tuple[JobGpu, str]] = []
    for g in rows:
        words = []
        for field, name, margin, unit in margins:
            value = getattr(g, field)
            median = _median(getattr(p, field) for p in rows if p is not g)
            if value is not None and median and median - value >= margin(median):
                words.append(f"{name} {value:.0f}{unit} against the job's {median:.0f}{unit}")
        if words:
            slow.append((g, ", ".join(words)))
    return slow if 2 * len(slow) < len(rows) else []


def _finding(code: str, view: JobView, culprits: Sequence[tuple[JobGpu, str]], summary: str,
             extra: Mapping[str, object]) -> Finding:
    first = culprits[0][0]
    return with_action(Finding(
        code=code, severity=Severity.WARNING, host=first.host,
        gpu=first.gpu if len({g.place for g, _ in culprits}) == 1 else None, summary=summary,
        evidence={"job": view.job, "user": view.user, "job_hosts": fold(view.hosts), "job_gpus": view.gpu_count,
                  "job_utilization_pct": view.utilization_pct, "job_power_pct_of_limit": view.power_pct_of_limit,
                  "culprits": tuple(f"{g.place}: {why}" for g, why in culprits), **extra}))


def _judge(view: JobView, ras: Sequence[tuple[str, RasRank]], report: SweepReport,
           s: CheckSettings) -> tuple[JobView, Finding | None]:
    rows = view.gpus
    median = (f"the job's median {view.utilization_pct:.0f}% busy at {view.power_pct_of_limit:.0f}% power"
              if view.utilization_pct is not None and view.power_pct_of_limit is not None else "")
    culprits, waiting = _waits_on(view, rows, ras, report)
    if culprits:
        places = fold(g.place for g, _ in culprits) if len(culprits) > 1 else culprits[0][0].place
        summary = (f"{view.job}: {waiting} of its {len(rows)} GPUs wait (busy at low power) and the likely cause is "
                   f"{_named(culprits)}{'; ' + median if median else ''} - look at that rank: its log, its "
                   "clocks, its Xids, its host")
        if not waiting:
            summary = (f"{view.job}: its ranks report {_named(culprits)}{'; ' + median if median else ''} - look "
                       "at that rank: its log, its clocks, its Xids, its host")
        found = _finding("JOB_WAITS_ON", view, culprits, summary, {"waiting_gpus": waiting})
        return dataclasses.replace(view, verdict=f"waits on {places}", code="JOB_WAITS_ON",
                                   severity=Severity.WARNING), found
    slow = _stragglers(rows, s)
    if slow:
        places = ", ".join(g.place for g, _ in slow)
        summary = (f"{view.job}: every GPU computes, and {_named(slow)} - the straggler the others wait for at "
                   "each step; look at its clocks, power, cooling and host")
        found = _finding("JOB_STRAGGLER", view, slow, summary,
                         {"odd_gpu_utilization_points": s.odd_gpu_utilization_points,
                          "odd_gpu_power_pct": s.odd_gpu_power_pct, "odd_gpu_clock_pct": s.odd_gpu_clock_pct,
                          "odd_gpu_sm_activity_pct": s.odd_gpu_sm_activity_pct})
        return dataclasses.replace(view, verdict=f"straggler {places}", code="JOB_STRAGGLER",
                                   severity=Severity.WARNING), found
    if rows and waiting == len(rows):
        return dataclasses.replace(view, verdict="every GPU waits (busy at low power)", code="BUSY_LOW_POWER",
                                   severity=Severity.WARNING), None
    return view, None


def _point_to(finding: Finding, waits_on: Finding, job: str) -> Finding:
    """A waiting GPU's BUSY_LOW_POWER, pointed at the job's JOB_WAITS_ON."""
    culprits = waits_on.evidence.get("culprits", ())
    places = ", ".join(str(c).split(": ", 1)[0] for c in culprits) if isinstance(culprits, tuple) else ""
    return dataclasses.replace(
        finding, summary=f"{finding.summary}; {job}'s other ranks wait on {places} (JOB_WAITS_ON)",
        evidence={**finding.evidence, "job": job, "waits_on": places})


def _drops_odd(finding: Finding, multi_host: Mapping[str, JobView]) -> bool:
    return finding.code == "ODD_GPU_OUT" and str(finding.evidence.get("job")) in multi_host


def with_job_view(report: SweepReport, groups: Mapping[str, Sequence[str]], allocations: Sequence[JobAllocation],
                  settings: CheckSettings) -> SweepReport:
    """``report`` with its jobs (:attr:`SweepReport.jobs`) and the job findings on their hosts."""
    gathered = _gather(report, groups, allocations)
    by_name = {h.host: h for h in report.hosts}
    views: list[JobView] = []
    added: dict[str, list[Finding]] = {}
    pointed: dict[tuple[str, int | None], tuple[Finding, str]] = {}
    for key, j in gathered.items():
        rows = tuple(_job_gpu(by_name[h], i, settings) for h, i in j.gpus)
        hosts = tuple(dict.fromkeys(g.host for g in rows))
        users = tuple(j.users)
        view = JobView(job=key, user=", ".join(users) if users else None, hosts=hosts, gpus=rows,
                       utilization_pct=_median(g.utilization_pct for g in rows),
                       power_pct_of_limit=_median(g.power_pct_of_limit for g in rows),
                       allocated_gpus=j.allocated or None, started_at=j.started_at)
        found = None
        if len(rows) >= 2 or j.ras:
            view, found = _judge(view, j.ras, report, settings)
        if found is not None:
            added.setdefault(found.host, []).append(found)
            if found.code == "JOB_WAITS_ON":
                for g in rows:
                    if g.state == "waiting":
                        pointed[(g.host, g.gpu)] = (found, key)
        idle = [f for f in report.findings
                if f.code == "GPU_ALLOCATED_IDLE" and f"job {f.evidence.get('job_id')}" == key]
        if idle and view.code is None:
            view = dataclasses.replace(view, verdict=f"{len(idle)} GPU{'s' if len(idle) != 1 else ''} allocated "
                                       "and idle", code="GPU_ALLOCATED_IDLE", severity=worst(f.severity for f in idle))
        views.append(view)
    multi_host = {v.job: v for v in views if len(v.hosts) > 1}

    def mended(host: HostReport) -> HostReport:
        findings = []
        for f in host.findings:
            if _drops_odd(f, multi_host):
                continue
            target = pointed.get((host.host, f.gpu))
            findings.append(_point_to(f, *target) if f.code == "BUSY_LOW_POWER" and target else f)
        return dataclasses.replace(host, findings=(*findings, *added.get(host.host, ())))

    swept = tuple(mended(h) for h in report.hosts)
    views.sort(key=lambda v: (-v.severity.rank, v.job))
    return dataclasses.replace(report, hosts=swept, jobs=tuple(views))
