"""The job view (gpudiag.checks.jobs): GPUs grouped by their job across hosts, and what a job says that no host can.

Each host's findings come from the real checks (``evaluate``), as in a sweep; then the fleet step. Scenarios of
issue 28: a hung job (most GPUs spin at low power, one computes), one idle rank, one throttled GPU, a host that
did not answer, two jobs sharing hosts, a straggler, the job's NCCL RAS answer joined, and a healthy job that
stays quiet.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from builders import gpu, node, sample

from gpudiag.checks import evaluate
from gpudiag.checks.allocated import with_allocated_idle
from gpudiag.checks.fleet import with_fleet_findings
from gpudiag.model import (
    CheckSettings,
    GpuProcess,
    GpuReading,
    HostReport,
    HostStatus,
    JobAllocation,
    NodeReadings,
    SweepReport,
    reasons_mask,
)
from gpudiag.model.nccl_ras import NcclRasStatus, RasRank

SETTINGS = CheckSettings()
SPIN = {"utilization_pct": 100.0, "power_w": 140.0, "memory_utilization_pct": 2.0}  # 20% of 700 W: waiting
WORK = {"utilization_pct": 100.0, "power_w": 660.0, "memory_utilization_pct": 45.0}  # computing


def g(index: int, shape: dict[str, Any], **more: Any) -> GpuReading:
    values = {**shape, **more}
    mask = reasons_mask(values.get("clock_event_reasons", ()))
    samples = [sample(t_s=0.5 * t, utilization_pct=values["utilization_pct"], power_w=values["power_w"],
                      memory_utilization_pct=values["memory_utilization_pct"],
                      sm_clock_mhz=values.get("sm_clock_mhz", 1980.0),
                      clock_event_reasons_mask=mask) for t in range(5)]
    return gpu(index=index, name="NVIDIA H200", samples=samples, memory_used_mib=20_600.0, **values)


def host(name: str, gpus: list[GpuReading], jobs: dict[int, str], *, ras: NcclRasStatus | None = None,
         address: str | None = None, user: str = "alice") -> HostReport:
    """A host that answered, with ``jobs``: GPU index -> Slurm job id of the one process on it (pid 1000 + i)."""
    procs = tuple(GpuProcess(gpu=i, pid=1000 + i, used_memory_mib=20_000.0, user=user, job_id=job,
                             job_id_from="environ", cpu_pct=100.0, command=("python3", "train.py"))
                  for i, job in sorted(jobs.items()))
    readings: NodeReadings = node(gpus, hostname=name, processes=procs, processes_from="nvidia-smi",
                                  nccl_ras=ras)
    return HostReport(host=name, address=address, status=HostStatus.OK, readings=readings,
                      findings=evaluate(name, HostStatus.OK, None, readings, SETTINGS))


def down(name: str, address: str | None = None) -> HostReport:
    error = "no answer within 30 s"
    return HostReport(host=name, address=address, status=HostStatus.TIMEOUT, error=error,
                      findings=evaluate(name, HostStatus.TIMEOUT, error, None, SETTINGS))


def judged(*hosts: HostReport, groups: dict[str, tuple[str, ...]] | None = None,
           allocations: tuple[JobAllocation, ...] = ()) -> SweepReport:
    report = SweepReport(started_at="2026-12-03T12:00:00+00:00", duration_s=3.0, hosts=hosts, settings=SETTINGS)
    report = with_allocated_idle(report, allocations, SETTINGS)  # per host, before the fleet step (as the runner)
    return with_fleet_findings(report, groups or {}, allocations=allocations, settings=SETTINGS)


def codes(report: SweepReport, code: str) -> list[tuple[str, int | None]]:
    return [(f.host, f.gpu) for f in report.findings if f.code == code]


def two(job: str, a: dict[str, Any], b: dict[str, Any]) -> list[GpuReading]:
    return [g(0, a), g(1, b)]


def test_a_hung_job_names_the_gpu_that_computes_while_the_others_spin() -> None:
    report = judged(host("n1", [g(0, SPIN), g(1, SPIN)], {0: "81723", 1: "81723"}),
                    host("n2", [g(0, SPIN), g(1, SPIN)], {0: "81723", 1: "81723"}),
                    host("n3", [g(0, SPIN), g(1, WORK)], {0: "81723", 1: "81723"}))
    (waits,) = [f for f in report.findings if f.code == "JOB_WAITS_ON"]
    assert (waits.host, waits.gpu) == ("n3", 1)
    assert waits.summary.startswith("job 81723: 5 of its 6 GPUs wait (busy at low power) and the likely cause is "
                                    "n3 GPU 1 (computing: 100% busy, 94% power); the job's median 100% busy at "
                                    "20% power")
    assert waits.evidence["culprits"] == ("n3 GPU 1: computing: 100% busy, 94% power",)
    assert waits.evidence["job_hosts"] == "n[1-3]" and waits.evidence["waiting_gpus"] == 5
    spinning = [f for f in report.findings if f.code == "BUSY_LOW_POWER"]
    assert len(spinning) == 5 and all(f.evidence["waits_on"] == "n3 GPU 1" for f in spinning)
    assert spinning[0].summary.endswith("; job 81723's other ranks wait on n3 GPU 1 (JOB_WAITS_ON)")
    (job,) = report.jobs
    assert (job.job, job.user, job.hosts, job.gpu_count, job.verdict) == (
        "job 81723", "alice", ("n1", "n2", "n3"), 6, "waits on n3 GPU 1")
    assert (job.utilization_pct, job.power_pct_of_limit) == (100.0, 20.0)


def test_an_idle_rank_and_a_throttled_gpu_are_named_with_why() -> None:
    idle = {"utilization_pct": 0.0, "power_w": 90.0, "memory_utilization_pct": 0.0}
    hot = {**WORK, "power_w": 300.0, "sm_clock_mhz": 1100.0, "clock_event_reasons": ("hw_thermal_slowdown",)}
    report = judged(host("n1", [g(0, SPIN), g(1, SPIN)], {0: "7", 1: "7"}),
                    host("n2", [g(0, SPIN), g(1, idle)], {0: "7", 1: "7"}),
                    host("n3", [g(0, SPIN), g(1, SPIN)], {0: "8", 1: "8"}),
                    host("n4", [g(0, SPIN), g(1, SPIN)], {0: "8", 1: "8"}),
                    host("n5", [g(0, SPIN), g(1, hot)], {0: "8", 1: "8"}))
    by_job = {f.evidence["job"]: f for f in report.findings if f.code == "JOB_WAITS_ON"}
    assert by_job["job 7"].evidence["culprits"] == ("n2 GPU 1: idle: 0% busy, 13% power",)
    assert (by_job["job 8"].host, by_job["job 8"].gpu) == ("n5", 1)
    assert by_job["job 8"].evidence["culprits"][0].startswith("n5 GPU 1: throttled")


def test_a_host_of_the_job_that_did_not_answer_is_the_cause() -> None:
    groups = dict.fromkeys(("n1", "n2", "n3"), ("job 81723",))
    report = judged(host("n1", [g(0, SPIN), g(1, SPIN)], {0: "81723", 1: "81723"}),
                    host("n2", [g(0, SPIN), g(1, SPIN)], {0: "81723", 1: "81723"}), down("n3"), groups=groups)
    (waits,) = [f for f in report.findings if f.code == "JOB_WAITS_ON"]
    assert (waits.host, waits.gpu) == ("n3", None)
    assert waits.evidence["culprits"] == ("n3: its host did not answer",)
    (job,) = report.jobs
    assert job.verdict == "waits on n3" and [x.state for x in job.gpus][-1] == "unanswered"


def test_two_jobs_sharing_hosts_are_judged_apart_and_the_healthy_one_is_quiet() -> None:
    report = judged(host("n1", [g(0, SPIN), g(1, WORK)], {0: "1", 1: "2"}),
                    host("n2", [g(0, SPIN), g(1, WORK)], {0: "1", 1: "2"}),
                    host("n3", [g(0, WORK), g(1, WORK)], {0: "1", 1: "2"}))
    assert codes(report, "JOB_WAITS_ON") == [("n3", 0)]
    assert {j.job: j.verdict for j in report.jobs} == {"job 1": "waits on n3 GPU 0", "job 2": "ok"}


def test_a_healthy_job_across_hosts_is_quiet() -> None:
    report = judged(*(host(f"n{i}", [g(0, WORK), g(1, WORK)], {0: "5", 1: "5"}) for i in range(1, 5)))
    assert [f.code for f in report.findings] == []
    (job,) = report.jobs
    assert (job.verdict, job.code, job.gpu_count) == ("ok", None, 8)


def test_the_straggler_of_a_computing_job_is_named_below_the_jobs_median() -> None:
    slow = {**WORK, "power_w": 450.0, "sm_clock_mhz": 1500.0}
    report = judged(*(host(f"n{i}", [g(0, WORK), g(1, WORK)], {0: "5", 1: "5"}) for i in range(1, 4)),
                    host("n4", [g(0, WORK), g(1, slow)], {0: "5", 1: "5"}))
    (straggler,) = [f for f in report.findings if f.code == "JOB_STRAGGLER"]
    assert (straggler.host, straggler.gpu) == ("n4", 1)
    assert straggler.evidence["culprits"] == (
        "n4 GPU 1: power 64% of limit against the job's 94% of limit, SM clock 1500 MHz against the job's 1980 MHz",)
    assert "ODD_GPU_OUT" not in [f.code for f in report.findings]  # the node saw part of the job: the job decides


def test_a_node_of_one_job_keeps_its_odd_gpu_when_the_job_is_that_node_alone() -> None:
    slow = {**WORK, "power_w": 450.0, "sm_clock_mhz": 1500.0}
    report = judged(host("n1", [g(0, WORK), g(1, WORK), g(2, WORK), g(3, slow)], dict.fromkeys(range(4), "5")))
    assert codes(report, "ODD_GPU_OUT") == [("n1", 3)] and codes(report, "JOB_STRAGGLER") == [("n1", 3)]


def test_the_jobs_own_ras_answer_names_a_missing_rank_on_a_host_that_did_not_answer() -> None:
    ras = NcclRasStatus(port=28028, asked_from="NCCL_RAS_ADDR of pid 1000", answered=True, ranks=6, node_count=3,
                        missing_ranks=(RasRank(rank=5, state="missing", host="10.0.0.3", gpu=1),))
    report = judged(host("n1", [g(0, SPIN), g(1, SPIN)], {0: "9", 1: "9"}, ras=ras, address="10.0.0.1"),
                    host("n2", [g(0, SPIN), g(1, SPIN)], {0: "9", 1: "9"}, address="10.0.0.2"),
                    down("n3", address="10.0.0.3"))
    (waits,) = [f for f in report.findings if f.code == "JOB_WAITS_ON"]
    assert waits.host == "n3" and waits.evidence["culprits"] == (
        "n3: NCCL RAS on n1: rank 5 missing",)


def test_allocated_gpus_without_a_process_are_named_and_the_job_says_so() -> None:
    idle = {"utilization_pct": 0.0, "power_w": 75.0, "memory_utilization_pct": 0.0}
    alloc = (JobAllocation(job_id="4242", node="n1", gpus=(0, 1, 2), user="bob", started_at="2026-12-03T10:00:00"),)
    report = judged(host("n1", [g(0, WORK), g(1, idle), g(2, idle), g(3, idle)], {0: "4242"}, user="bob"),
                    allocations=alloc)
    assert codes(report, "GPU_ALLOCATED_IDLE") == [("n1", 1), ("n1", 2)]  # GPU 3 is nobody's
    (job,) = report.jobs
    assert (job.job, job.user, job.allocated_gpus, job.started_at) == ("job 4242", "bob", 3, "2026-12-03T10:00:00")
    assert job.verdict == "2 GPUs allocated and idle"


def test_a_partial_job_view_is_not_judged_on_one_gpu() -> None:
    report = judged(host("n1", [g(0, SPIN)], {0: "3"}))
    (job,) = report.jobs
    assert job.verdict == "ok" and codes(report, "JOB_WAITS_ON") == []
    assert dataclasses.replace(report, jobs=()).findings == report.findings
