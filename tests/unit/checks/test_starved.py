"""The starved GPU (issue 28), on hand-built readings: one decision of whether its SMs do little (SM activity where
read, else the power share, else busy %), shared by BUSY_LOW_POWER and HOST_BOUND, so a launch-bound GPU gets
one verdict whichever side of 50% busy it reads, a GPU whose SMs work stays quiet with a pegged thread beside it,
and one GPU never gets both. The H200 recordings are replayed in test_h200_moe_dispatch.py."""

from __future__ import annotations

import pytest
from builders import gpu, node, sample

from gpudiag.checks import CheckSettings, evaluate
from gpudiag.checks.starved import sm_work
from gpudiag.model import GpuProcess, HostStatus

S = CheckSettings()
PEGGED = GpuProcess(gpu=0, pid=7, command=("python3", "serve.py"), user="alice", cpu_pct=100.0,
                    used_memory_mib=6664.0, sm_utilization_pct=48.0)
CALM = GpuProcess(gpu=0, pid=8, command=("python3", "train.py"), user="bob", cpu_pct=1.0,
                  used_memory_mib=1002.0, sm_utilization_pct=49.0)


def codes(util: float, *, sm: float | None, power_w: float | None, proc: GpuProcess = PEGGED) -> list[str]:
    g = gpu(utilization_pct=util, sm_active_pct=sm, sm_activity_from="nvml gpm" if sm is not None else None,
            power_w=power_w, memory_utilization_pct=4.0,
            samples=[sample(utilization_pct=util, power_w=power_w, memory_utilization_pct=4.0)] * 5)
    return [f.code for f in evaluate("h", HostStatus.OK, None, node([g], processes=(proc,)), S)]


@pytest.mark.parametrize("util", [40.0, 47.0, 50.0, 51.0, 53.0, 60.0, 89.0])
def test_a_launch_bound_gpu_is_host_bound_whatever_its_busy_pct(util: float) -> None:
    """The H200's eager MoE dispatch: 46-53% busy, SM activity 7-8%, 152 W of 700."""
    assert codes(util, sm=7.5, power_w=152.0) == ["HOST_BOUND"]  # measured SM activity decides
    assert codes(util, sm=None, power_w=152.0) == ["HOST_BOUND"]  # without it, the power share


@pytest.mark.parametrize("util", [35.0, 50.0, 67.0])
def test_a_gpu_whose_sms_work_is_not_host_bound_even_with_a_pegged_thread(util: float) -> None:
    """Large GEMMs half the time: SM activity 46%, 505 W of 700 (72%), on the H200."""
    for proc in (CALM, PEGGED):
        assert codes(util, sm=46.0, power_w=505.0, proc=proc) == []
        assert codes(util, sm=None, power_w=505.0, proc=proc) == []
    assert codes(50.0, sm=7.5, power_w=152.0, proc=CALM) == []  # starved, but no host thread feeds it


def test_measured_sm_activity_beats_the_power_share() -> None:
    assert codes(50.0, sm=46.0, power_w=152.0) == []  # SMs working at low power (bandwidth-bound)
    assert codes(50.0, sm=5.0, power_w=505.0) == ["HOST_BOUND"]


def test_busy_pct_decides_only_where_neither_sm_activity_nor_power_is_read() -> None:
    assert codes(47.0, sm=None, power_w=None) == ["HOST_BOUND"]
    assert codes(51.0, sm=None, power_w=None) == []  # over host_bound_max_utilization_pct: nothing to go on


@pytest.mark.parametrize(("util", "expected"), [(89.0, "HOST_BOUND"), (90.0, "BUSY_LOW_POWER"),
                                                (100.0, "BUSY_LOW_POWER")])
def test_one_gpu_never_gets_both(util: float, expected: str) -> None:
    """At or above busy_utilization_pct a kernel is always resident: the GPU does not wait on launches."""
    assert codes(util, sm=0.8, power_w=120.0) == [expected]
    assert codes(util, sm=None, power_w=120.0) == [expected]


def test_sm_work_says_what_decided() -> None:
    measured = sm_work(gpu(sm_active_pct=7.49, sm_activity_from="nvml gpm", power_w=152.0), S)
    assert measured is not None and (measured.starved, measured.basis, measured.words) == (
        True, "sm_activity", "SM activity 7.5% (NVML GPM)")
    power = sm_work(gpu(power_w=152.0, memory_utilization_pct=4.0), S)
    assert power is not None and (power.starved, power.basis, power.value_pct) == (True, "power", 21.7)
    assert power.words == "152 W, 22% of its 700 W limit"
    bandwidth = sm_work(gpu(power_w=300.0, memory_utilization_pct=80.0), S)
    assert bandwidth is not None and not bandwidth.starved and bandwidth.words.endswith("(bandwidth-bound)")
    assert sm_work(gpu(power_w=None, enforced_power_limit_w=None), S) is None
