"""Whether a GPU's SMs do little: one decision that ``BUSY_LOW_POWER`` and ``HOST_BOUND`` share (issue 28), so
a GPU is judged by what its SMs do, not by how much of the time some kernel was resident.

utilization.gpu ("busy %") counts the time *any* kernel was resident, however few SMs it used: the case study's
MoE dispatch (tiny expert GEMMs launched one at a time from Python) read 46-53% busy on an H200 from one minute
to the next, at 22% of its power and 7-8% SM activity. A rule on busy % alone flipped between HOST_BOUND and
nothing at 50%. The SMs' own activity (NVML GPM, DCGM) says it directly; where it is not read, the share of the
enforced power limit stands in for it (the SMs draw the power); only where neither is read does busy % decide.
Pure; the caller decides what the answer means for its own finding."""

from __future__ import annotations

from dataclasses import dataclass

from gpudiag.model import CheckSettings, GpuReading


@dataclass(frozen=True, slots=True, kw_only=True)
class SmWork:
    """How much the SMs did over the window, from the best reading the GPU gave, and whether that is little."""

    starved: bool
    """The SMs do little (measured SM activity, or the power share, under its threshold)."""
    basis: str
    """What decided: ``sm_activity`` (NVML GPM or DCGM) or ``power`` (share of the enforced limit)."""
    value_pct: float
    threshold_pct: float
    words: str
    """What decided, for a sentence: "SM activity 7.5% (NVML GPM)", "152 W, 22% of its 700 W limit"."""


def sm_activity_text(gpu: GpuReading) -> str:
    """ "SM activity 0.8% (NVML GPM)", or "SM activity not available (why)"."""
    if gpu.sm_active_pct is not None:
        source = {"nvml gpm": "NVML GPM", "dcgm": "DCGM"}.get(gpu.sm_activity_from or "", gpu.sm_activity_from)
        return f"SM activity {gpu.sm_active_pct:.1f}%" + (f" ({source})" if source else "")
    why = gpu.sm_activity_unavailable or "no GPM reading for this GPU and no DCGM profiling on this node"
    return f"SM activity not available ({why})"


def sm_work(gpu: GpuReading, s: CheckSettings) -> SmWork | None:
    """Measured SM activity under ``starved_sm_activity_pct`` where it is read (whatever the power: high SM
    activity at low power is a bandwidth-bound kernel working); else the median power at or under
    ``low_power_pct`` of the enforced limit, unless memory utilization at or over
    ``bandwidth_memory_utilization_pct`` explains it (bandwidth-bound, healthy); None when neither is read."""
    if gpu.sm_active_pct is not None:
        return SmWork(starved=gpu.sm_active_pct < s.starved_sm_activity_pct, basis="sm_activity",
                      value_pct=gpu.sm_active_pct, threshold_pct=s.starved_sm_activity_pct,
                      words=sm_activity_text(gpu))
    power = gpu.power()
    share = power.pct_of_limit if power is not None else None
    if power is None or share is None or power.enforced_limit_w is None:
        return None
    mem = gpu.memory_utilization_pct
    bandwidth = mem is not None and mem >= s.bandwidth_memory_utilization_pct
    words = f"{power.watts:.0f} W, {share:.0f}% of its {power.enforced_limit_w:.0f} W limit" + \
        (f", memory {mem:.0f}% busy (bandwidth-bound)" if bandwidth else "")
    return SmWork(starved=share <= s.low_power_pct and not bandwidth, basis="power", value_pct=share,
                  threshold_pct=s.low_power_pct, words=words)
