"""GPU_ALLOCATED_IDLE on hand-built readings: a GPU Slurm gave a running job, with no process on it and 0% busy
in every sample (gpudiag.checks.allocated)."""

from __future__ import annotations

from typing import Any

import pytest
from builders import gpu, host_report, node, sample, sweep

from gpudiag.checks.allocated import gpu_allocated_idle, with_allocated_idle
from gpudiag.model import Action, Finding, GpuProcess, HostStatus, JobAllocation, Severity
from gpudiag.report import ReportView, render

STARTED = "2026-12-03T09:12:40"
JOB = JobAllocation(job_id="81723", node="gpu01", gpus=(0, 1), user="alice", started_at=STARTED, partition="h200",
                    name="pretrain")


def idle(index: int, **overrides: Any) -> Any:
    """An H100 at 0% in each of 5 samples, 70 W, nothing in memory."""
    values: dict[str, Any] = {"index": index, "utilization_pct": 0.0, "power_w": 70.0, "memory_used_mib": 0.0,
                              "samples": [sample(utilization_pct=0.0, power_w=70.0) for _ in range(5)]}
    values.update(overrides)
    return gpu(**values)


def host(name: str = "gpu01", gpus: Any = None, **readings: Any) -> Any:
    gpus = list(gpus) if gpus is not None else [idle(i) for i in range(4)]
    values: dict[str, Any] = {"processes_from": "nvml"}
    values.update(readings)
    return host_report(name, readings=node(gpus, hostname=name, **values))


def expected(index: int, *, job: JobAllocation = JOB, others: str = " (the job has GPUs 0-1 here)") -> Finding:
    return Finding(
        code="GPU_ALLOCATED_IDLE", severity=Severity.WARNING, host=job.node, gpu=index, action=Action.WATCH,
        summary=(f"allocated and idle: given to Slurm job {job.job_id} ({job.name}) of user {job.user}, running "
                 f"since {job.started_at}{others}, yet no process on it and 0% busy in all 5 samples over 4.0 s, "
                 "drawing 70 W - ask the job's owner to use it or give it back (a smaller request, or end the "
                 "job)"),
        evidence={"job_id": job.job_id, "user": job.user, "job_name": job.name, "partition": job.partition,
                  "started_at": job.started_at, "job_gpus_here": list(job.gpus), "holder": f"job {job.job_id}",
                  "processes": 0, "utilization_pct": 0.0, "memory_used_mib": 0.0, "samples": 5, "window_s": 4.0,
                  "watts": 70.0, "source": "slurm"})


def test_each_allocated_idle_gpu_named_with_job_user_and_since_when() -> None:
    report = sweep(host())
    assert gpu_allocated_idle(report, [JOB]) == {"gpu01": (expected(0), expected(1))}  # GPUs 2 and 3: no job


def test_with_allocated_idle_adds_them_after_the_hosts_own() -> None:
    report = sweep(host(), host("gpu02"))
    out = with_allocated_idle(report, [JOB])
    assert out.hosts[0].findings == (expected(0), expected(1)) and out.hosts[1] == report.hosts[1]
    assert with_allocated_idle(report, []) is report


@pytest.mark.parametrize(("why", "gpus", "readings"), [
    ("a process holds GPU 0 (GPU_HELD_IDLE's, not this one's)", None,
     {"processes": (GpuProcess(gpu=0, pid=4242, used_memory_mib=20_000.0, user="alice", job_id="81723"),)}),
    ("GPU 0 was 3% busy in one sample", [idle(0, samples=[sample(utilization_pct=u, power_w=70.0)
                                                          for u in (0.0, 0.0, 3.0, 0.0, 0.0)]), idle(1)], {}),
    ("GPU 0 is lost", [idle(0, lost=True), idle(1)], {}),
    ("GPU 0's process listing failed", None, {"processes_unlisted": (0,)}),
])
def test_gpu_0_is_not_allocated_idle(why: str, gpus: Any, readings: dict[str, Any]) -> None:
    report = sweep(host(gpus=gpus, **readings))
    assert gpu_allocated_idle(report, [JOB]) == {"gpu01": (expected(1),)}, why


def test_nothing_where_nothing_can_be_said() -> None:
    assert gpu_allocated_idle(sweep(host(processes_from=None)), [JOB]) == {}  # no process listing at all
    unreachable = host_report("gpu01", status=HostStatus.UNREACHABLE)
    assert gpu_allocated_idle(sweep(unreachable), [JOB]) == {}  # did not answer: its GPUs are not known
    busy = host(gpus=[gpu(index=i) for i in range(4)])
    assert gpu_allocated_idle(sweep(busy), [JOB]) == {}  # the job computes
    beyond = JobAllocation(job_id="9", node="gpu01", gpus=(7,))  # a GPU the node did not report
    assert gpu_allocated_idle(sweep(host()), [beyond]) == {}
    assert gpu_allocated_idle(sweep(host()), [JobAllocation(job_id="9", node="gpu09", gpus=(0,))]) == {}


def test_a_gpu_given_twice_is_said_once_and_an_unknown_user_is_said_so() -> None:
    lone = JobAllocation(job_id="5", node="gpu01", gpus=(2,))
    again = JobAllocation(job_id="6", node="gpu01", gpus=(2,))  # Slurm shares a GPU only with a shared GRES
    (found,) = gpu_allocated_idle(sweep(host()), [lone, again])["gpu01"]
    assert found.gpu == 2 and found.evidence["job_id"] == "5"
    assert found.summary.startswith("allocated and idle: given to Slurm job 5 (user not known), yet no process")
    assert (found.evidence["user"], found.evidence["started_at"]) == (None, None)


def test_several_jobs_on_one_host_in_gpu_order() -> None:
    other = JobAllocation(job_id="81800", node="gpu01", gpus=(3,), user="bob", started_at=STARTED,
                          partition="h200", name="eval")
    found = gpu_allocated_idle(sweep(host()), [other, JOB])["gpu01"]
    assert [(f.gpu, f.evidence["job_id"]) for f in found] == [(0, "81723"), (1, "81723"), (3, "81800")]
    assert found[2] == expected(3, job=other, others="")


def test_the_findings_read_at_80_columns() -> None:
    report = with_allocated_idle(sweep(host()), [JOB])
    table = render(report, "table", ReportView(width=80))
    assert max(len(line) for line in table.splitlines()) <= 80, table
    text = " ".join(table.split())
    assert "GPU_ALLOCATED_IDLE" in text and "given to Slurm job 81723 (pretrain) of user alice" in text
