"""With --history, GPU_ALLOCATED_IDLE says for how many runs and hours the job has left its GPU idle: the streak
is the job's on that GPU (a real history file; gpudiag.audit.streaks)."""

from __future__ import annotations

from pathlib import Path

from builders import gpu, host_report, node, sample, sweep

from gpudiag.audit.history import History
from gpudiag.audit.streaks import with_streaks
from gpudiag.checks.allocated import with_allocated_idle
from gpudiag.model import JobAllocation, SweepReport


def report_at(hour: int, job: str) -> SweepReport:
    idle = [gpu(index=i, utilization_pct=0.0, power_w=70.0, memory_used_mib=0.0,
                samples=[sample(utilization_pct=0.0, power_w=70.0)] * 3) for i in range(2)]
    base = sweep(host_report("gpu01", readings=node(idle, hostname="gpu01", processes_from="nvml")),
                 started_at=f"2026-12-03T0{hour}:00:00Z")
    return with_allocated_idle(base, [JobAllocation(job_id=job, node="gpu01", gpus=(1,), user="alice",
                                                    started_at="2026-12-02T22:10:00")])


def test_the_streak_is_the_jobs_on_that_gpu(tmp_path: Path) -> None:
    with History.open(tmp_path / "history.db") as history:
        for hour in range(3):
            report = report_at(hour, "81723")
            changes = history.record(report, now_s=0.0).changes
        (f,) = with_streaks(report, changes).findings
        assert f.summary.endswith("; so for 3 runs over 2.0 h (since 2026-12-03T00:00:00Z)")
        assert (f.evidence["streak_runs"], f.evidence["streak_hours"], f.gpu) == (3, 2.0, 1)
        # Another job given the same GPU: a new streak, said without one.
        report = report_at(3, "81800")
        changes = history.record(report, now_s=0.0).changes
        (f,) = with_streaks(report, changes).findings
        assert "so for" not in f.summary and "streak_runs" not in f.evidence and f.evidence["job_id"] == "81800"
