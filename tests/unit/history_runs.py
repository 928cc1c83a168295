"""Runs of one host at given minutes, for the history's tests (unit and the kill -9 one in tests/integration)."""

from __future__ import annotations

from builders import finding, gpu, host_report, sweep

from gpudiag.model import SweepReport

T0 = 1_748_779_200.0  # 2025-06-01T12:00:00Z


def at(minute: int, *hosts: object) -> SweepReport:
    return sweep(*hosts, started_at=f"2025-06-01T12:{minute:02d}:00Z")  # type: ignore[arg-type]


def healthy(minute: int) -> SweepReport:
    return at(minute, host_report("gpu01", gpus=[gpu(index=0), gpu(index=1)]))


def faulty(minute: int, *, gpu_index: int = 1, code: str = "BUSY_LOW_POWER") -> SweepReport:
    return at(minute, host_report("gpu01", gpus=[gpu(index=0), gpu(index=1)],
                                  findings=[finding(host="gpu01", gpu=gpu_index, code=code)]))
