"""The thresholds the checks judge by (:class:`CheckSettings`), with their defaults: a model value, so that a
:class:`~gpudiag.model.SweepReport` carries the ones its run used and every report (the JSON's ``settings``
block, the HTML's shaded region) shows them. Overridden by flags and an inventory's ``checks:``
(:func:`gpudiag.checks.with_overrides`).

Standard library only; see :mod:`gpudiag.model`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckSettings:
    """Every threshold a check uses. Percentages are 0-100."""

    busy_utilization_pct: float = 90.0
    """BUSY_LOW_POWER: median utilization.gpu at or above this reads as "busy"."""
    low_power_pct: float = 60.0
    """BUSY_LOW_POWER: median power at or below this share of the *enforced* limit reads as "low"."""
    bandwidth_memory_utilization_pct: float = 60.0
    """BUSY_LOW_POWER: median utilization.memory at or above this means a bandwidth-bound kernel (healthy)."""
    starved_sm_activity_pct: float = 20.0
    """BUSY_LOW_POWER where SM activity is measured (NVML GPM, DCGM): a busy GPU whose SMs are active less than
    this is starved whatever its power; at or above, it is not (README: H200 spin 0.8%, tiny graph 0.3%;
    GEMV 90%, copy 99%, GEMM 96%)."""
    host_bound_cpu_pct: float = 80.0
    """HOST_BOUND: a GPU process using at least this much of one CPU core over the window (a pegged thread
    reads ~100) ..."""
    host_bound_max_utilization_pct: float = 50.0
    """... while its SMs do little: SM activity under ``starved_sm_activity_pct`` where it is read, else power at
    or under ``low_power_pct`` of the enforced limit (not bandwidth-bound), and only where neither is read, a GPU
    at most this busy (H200 eager decode 16%, Python-launched small GEMMs 19%; every device-bound workload
    98-100%). Never at or above ``busy_utilization_pct``: that GPU is BUSY_LOW_POWER's. The eager MoE dispatch
    read 46-53% busy at SM activity 7-8% and 22% power: busy % alone flipped its verdict at 50 ..."""
    host_bound_min_utilization_pct: float = 1.0
    """... and, where NVML gives no per-process SM share, some sample of the window at least this busy (or SM
    activity above zero): kernels ran. A GPU that ran none is idle (a server's idle loop may poll at 100% CPU).
    The busiest sample, not the median: H200 eager decode read 4% busy over 3 samples, 4-7% over 5."""
    held_idle_memory_mib: float = 1024.0
    """GPU_HELD_IDLE: a GPU 0% busy in every sample while one process holds at least this much of its memory, from
    one run. A floor above a bare CUDA context, not a share: on the H200 (driver 580) a process that only made
    its context held 612 MiB (PyTorch, one tiny tensor) or 520 MiB (a spinner), a small eager model 974 MiB;
    a 20 GiB holder (14%) is as unusable to others as a 100 GiB one (71%)."""
    held_idle_critical_hours: float = 24.0
    """GPU_HELD_IDLE with ``--history``: held idle by the same holder for at least this many hours is critical
    (a warning before): a day of an allocated GPU doing nothing."""
    unaccounted_memory_mib: float = 4096.0
    """GPU_MEMORY_UNACCOUNTED: used memory at least this far above what the listed processes hold (H200 driver
    580: NVML counts 615 MiB reserved by the driver, nvidia-smi 9 MiB per process: at most 624 MiB on every
    recording)."""
    odd_gpu_utilization_points: float = 30.0
    """ODD_GPU_OUT: on a node whose GPUs run one job, a GPU this many points of utilization from its peers'
    median ..."""
    odd_gpu_power_pct: float = 25.0
    """... or whose power differs from its peers' median by this share of that median ..."""
    odd_gpu_clock_pct: float = 15.0
    """... or whose SM clock does, is the odd one out. JOB_STRAGGLER uses the same three margins across a job's
    nodes, below the job's median only ..."""
    odd_gpu_sm_activity_pct: float = 25.0
    """JOB_STRAGGLER: ... or whose SM activity (GPM, DCGM) is this share below its job's median."""
    job_idle_utilization_pct: float = 5.0
    """The job view: a GPU of a job whose busiest sample stays below this is idle (not in the job's work)."""
    pcie_busy_utilization_pct: float = 50.0
    """PCIE_LINK_DEGRADED: only judged while the GPU is this busy (idle links downshift to save power)."""
    power_limit_tolerance_w: float = 1.0
    """POWER_LIMIT_REDUCED: enforced limits within this of the default are not "reduced"."""
    slowdown_critical_fraction: float = 0.5
    """THERMAL/HW_SLOWDOWN: critical when the reason is active in at least this share of samples ..."""
    slowdown_critical_clock_drop_pct: float = 30.0
    """... and the median SM clock is at least this far below its maximum."""
    xid_storm_lines: float = 20.0
    """XID_STORM: this many lines of one Xid on one GPU within the kernel log's window (24 h by default) is a
    storm, not an event. One fault writes a handful of lines (an Xid 13 is logged once per faulting SM or
    TPC, an Xid 43/45 follows each killed channel, a crashed 8-rank job writes one per GPU), so 20 is several
    faults; a GPU that keeps faulting under new jobs, or a remap or ECC Xid that recurs, reaches it within a
    day."""


FLEET_FACTS = ("driver", "cuda", "vbios")  # what an expectation may name (the config's [fleet."MODEL"] keys)


@dataclass(frozen=True, slots=True, kw_only=True)
class VersionExpectation:
    """What the operator expects a GPU model's hosts to run (``--expect "NVIDIA H200:driver=580.159.04"``, or the
    config file's ``[fleet."NVIDIA H200"]`` table): beats the group's vote, as NHC's checks do. ``model`` "*"
    applies to every model."""

    model: str
    fact: str  # one of FLEET_FACTS
    version: str

    def applies_to(self, model: str | None) -> bool:
        return self.model == "*" or (model is not None and self.model.casefold() == model.casefold())
