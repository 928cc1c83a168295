"""The checks, on hand-built readings: each verdict in a table, whole findings compared where it matters."""

from __future__ import annotations

from typing import Any

import pytest
from builders import gpu, node, sample

from gpudiag.checks import CheckSettings, SettingsError, evaluate, with_overrides
from gpudiag.checks.gpu import (
    busy_low_power,
    hw_slowdown,
    pcie_link_degraded,
    power_limit_reduced,
    thermal_slowdown,
)
from gpudiag.model import Finding, HostStatus, Severity, SmiStatus

S = CheckSettings()

CASE_STUDY: dict[str, Any] = {
    "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "compute_capability": "12.0", "sm": "SM120",
    "arch": "Blackwell (RTX)", "utilization_pct": 100.0, "memory_utilization_pct": 25.0, "power_w": 330.0,
    "enforced_power_limit_w": 600.0, "default_power_limit_w": 600.0, "sm_clock_mhz": 2400.0, "max_sm_clock_mhz": 2430.0}


def codes(findings: tuple[Finding, ...]) -> list[str]:
    return [f.code for f in findings]


def test_case_study_gpu_is_flagged_with_full_evidence() -> None:
    g = gpu(index=3, samples=[sample(power_w=330.0)] * 5, **CASE_STUDY)
    assert busy_low_power("sglang-glm5", g, S) == (Finding(
        code="BUSY_LOW_POWER", severity=Severity.WARNING, host="sglang-glm5", gpu=3,
        summary="reads 100% busy but draws 330 W of its 600 W enforced limit (55%), memory 25% busy, "
                "SM clock 2400 of 2430 MHz: a kernel is always resident but few SMs do work - launch-bound, "
                "latency-bound, or waiting on communication",
        evidence={"utilization_pct": 100.0, "memory_utilization_pct": 25.0, "watts": 330.0,
                  "enforced_power_limit_w": 600.0, "pct_of_limit": 55.0,
                  "power_source": "power_draw", "sm_clock_mhz": 2400.0,
                  "max_sm_clock_mhz": 2430.0, "samples": 5, "busy_utilization_pct": 90.0,
                  "low_power_pct": 60.0, "bandwidth_memory_utilization_pct": 60.0,
                  "starved_sm_activity_pct": 20.0,
                  "sm_activity": "SM activity not available (no GPM reading for this GPU and no DCGM profiling "
                                 "on this node)"}),)


@pytest.mark.parametrize("why, overrides, flagged", [
    ("case study", {}, True),
    ("bandwidth-bound: util 99, mem util 100, 60% power", {"utilization_pct": 99.0, "memory_utilization_pct": 100.0,
                                                                "power_w": 360.0}, False),
    ("compute-bound at the cap", {"power_w": 598.0, "memory_utilization_pct": 40.0}, False),
    ("idle", {"utilization_pct": 0.0, "power_w": 80.0}, False),
    ("busy just below threshold", {"utilization_pct": 89.0}, False),
    ("power exactly at threshold share", {"power_w": 360.0}, True),
    ("power just above threshold share", {"power_w": 361.0}, False),
    ("thermal slowdown explains it", {"clock_event_reasons": ("hw_thermal_slowdown",)}, False),
    ("power brake explains it", {"clock_event_reasons": ("hw_power_brake_slowdown",)}, False),
    ("sw power cap does not explain low power", {"clock_event_reasons": ("sw_power_cap",)}, True),
    ("power not reported: not applicable", {"power_w": None}, False),
    ("limit not reported: not applicable", {"enforced_power_limit_w": None}, False),
    ("memory util not reported: still flagged", {"memory_utilization_pct": None}, True),
    ("judged against the ENFORCED limit, not the default", {"enforced_power_limit_w": 450.0,
                                                            "default_power_limit_w": 600.0, "power_w": 330.0}, False),
    ("reduced limit, still starved", {"enforced_power_limit_w": 450.0, "power_w": 200.0}, True),
])
def test_busy_low_power_verdicts(why: str, overrides: dict[str, Any], flagged: bool) -> None:
    g = gpu(**{**CASE_STUDY, **overrides})
    assert bool(busy_low_power("h", g, S)) is flagged, why


def test_thresholds_are_settings() -> None:
    g = gpu(**CASE_STUDY)
    assert busy_low_power("h", g, with_overrides(S, {"low_power_pct": 50})) == ()
    assert busy_low_power("h", gpu(**{**CASE_STUDY, "utilization_pct": 80.0}),
                          with_overrides(S, {"busy_utilization_pct": 75})) != ()


@pytest.mark.parametrize("overrides, problem", [
    ({"nonsense": 1}, "unknown check setting 'nonsense'"),
    ({"low_power_pct": "high"}, "must be a number"),
    ({"low_power_pct": True}, "must be a number"),
])
def test_bad_settings_are_one_line_errors(overrides: dict[str, object], problem: str) -> None:
    with pytest.raises(SettingsError, match=problem):
        with_overrides(S, overrides)


def test_power_limit_reduced() -> None:
    (f,) = power_limit_reduced("h", gpu(enforced_power_limit_w=450.0, default_power_limit_w=700.0), S)
    assert f.code == "POWER_LIMIT_REDUCED" and f.severity is Severity.WARNING
    assert f.evidence == {"enforced_power_limit_w": 450.0, "default_power_limit_w": 700.0, "pct_of_default": 64.3,
                          "power_limit_tolerance_w": 1.0}
    assert power_limit_reduced("h", gpu(enforced_power_limit_w=699.5, default_power_limit_w=700.0), S) == ()
    assert power_limit_reduced("h", gpu(default_power_limit_w=None), S) == ()


@pytest.mark.parametrize("overrides, flagged", [
    ({"pcie_gen": 3, "pcie_width": 8}, True),
    ({"pcie_gen": 5, "pcie_width": 8}, True),
    ({"pcie_gen": 1, "utilization_pct": 0.0}, False),  # idle links downshift on purpose
    ({"pcie_gen": None}, False),
    ({}, False),
])
def test_pcie_link_degraded(overrides: dict[str, Any], flagged: bool) -> None:
    assert bool(pcie_link_degraded("h", gpu(**overrides), S)) is flagged


def test_thermal_slowdown_severity_by_duration_and_clock_drop() -> None:
    hot = [sample(clock_event_reasons_mask=0x40)] * 4 + [sample(clock_event_reasons_mask=0)]
    (f,) = thermal_slowdown("h", gpu(samples=hot, clock_event_reasons=("hw_thermal_slowdown",),
                                     sm_clock_mhz=1100.0, max_sm_clock_mhz=1980.0), S)
    assert f.code == "THERMAL_SLOWDOWN" and f.severity is Severity.CRITICAL
    assert f.evidence["samples_active"] == 4 and f.evidence["clock_drop_pct"] == 44.4
    brief = [sample(clock_event_reasons_mask=0x20)] + [sample(clock_event_reasons_mask=0)] * 4
    (f,) = thermal_slowdown("h", gpu(samples=brief, clock_event_reasons=("sw_thermal_slowdown",),
                                     sm_clock_mhz=1100.0, max_sm_clock_mhz=1980.0), S)
    assert f.severity is Severity.WARNING
    assert thermal_slowdown("h", gpu(samples=[sample(clock_event_reasons_mask=0x4)] * 5), S) == ()


def test_hw_slowdown_and_power_brake() -> None:
    braked = [sample(clock_event_reasons_mask=0x80)] * 5
    (f,) = hw_slowdown("h", gpu(samples=braked, clock_event_reasons=("hw_power_brake_slowdown",),
                                sm_clock_mhz=1900.0, max_sm_clock_mhz=1980.0), S)
    assert f.code == "HW_SLOWDOWN" and f.severity is Severity.WARNING  # sustained, but clocks barely dropped


def test_evaluate_node_level_failures() -> None:
    def run(**kw: Any) -> list[str]:
        return codes(evaluate("h", HostStatus.OK, None, node(gpus=(), **kw), S))

    assert run(smi_status=SmiStatus.MISSING) == ["NVIDIA_SMI_MISSING"]
    assert run(smi_status=SmiStatus.DRIVER_ERROR, smi_exit_code=9) == ["DRIVER_ERROR"]
    assert run(smi_status=SmiStatus.NO_DEVICES, smi_exit_code=6) == ["NO_GPUS"]
    assert run(smi_status=SmiStatus.FAILED, smi_exit_code=255) == ["DRIVER_ERROR"]
    assert run(output_truncated=True) == ["PROBE_INCOMPLETE"]


def test_evaluate_unreachable_host() -> None:
    (f,) = evaluate("h", HostStatus.TIMEOUT, "no answer within 30 s", None, S)
    assert (f.code, f.severity, f.summary) == ("HOST_UNREACHABLE", Severity.CRITICAL,
                                               "timeout: no answer within 30 s")


def test_mixed_architectures_separates_sm100_from_sm120() -> None:
    b200 = gpu(index=0, compute_capability="10.0", sm="SM100", arch="Blackwell (datacenter)")
    rtx = gpu(index=1, compute_capability="12.0", sm="SM120", arch="Blackwell (RTX)")
    found = evaluate("h", HostStatus.OK, None, node(gpus=(b200, rtx)), S)
    assert codes(found) == ["MIXED_ARCHITECTURES"]
    assert found[0].evidence["sm"] == "SM100, SM120"
    same = evaluate("h", HostStatus.OK, None, node(gpus=(gpu(index=0), gpu(index=1))), S)
    assert codes(same) == []


def test_lost_gpu_and_ecc_are_critical() -> None:
    found = evaluate("h", HostStatus.PARTIAL, None,
                     node(gpus=(gpu(index=0, ecc_uncorrected=2), gpu(index=1, lost=True, utilization_pct=None,
                                                                       power_w=None))), S)
    assert [(f.code, f.gpu, f.severity) for f in found] == [("ECC_UNCORRECTED", 0, Severity.CRITICAL),
                                                            ("GPU_LOST", 1, Severity.CRITICAL)]


def test_busy_low_power_prefers_the_energy_counter_average() -> None:
    g = gpu(**{**CASE_STUDY, "power_w": 500.0, "energy_power_w": 330.0}, samples=[sample()] * 5)
    (f,) = busy_low_power("h", g, S)
    assert f.evidence["watts"] == 330.0 and f.evidence["pct_of_limit"] == 55.0
    assert f.evidence["power_source"] == "energy_counter"
    # A spike in the instantaneous samples does not hide a starved GPU, and vice versa:
    assert busy_low_power("h", gpu(**{**CASE_STUDY, "power_w": 300.0, "energy_power_w": 500.0}), S) == ()


def test_dcgm_profiling_joins_the_evidence_when_there_is_some() -> None:
    g = gpu(**CASE_STUDY, sm_active_pct=4.0, sm_occupancy_pct=2.5, tensor_active_pct=0.0, dram_active_pct=7.0,
            sm_activity_from="dcgm")
    (f,) = busy_low_power("h", g, S)
    assert (f.evidence["sm_active_pct"], f.evidence["dram_active_pct"]) == (4.0, 7.0)
    assert f.evidence["sm_activity"] == "SM activity 4.0% (DCGM)"
    assert "; SM activity 4.0% (DCGM): a kernel is always resident" in f.summary


@pytest.mark.parametrize("check, reading", [
    (busy_low_power, "utilization_pct"),
    (power_limit_reduced, "default_power_limit_w"),
    (thermal_slowdown, "clock_event_reasons_mask"),
])
def test_a_failed_reading_makes_its_check_say_unknown(check: Any, reading: str) -> None:
    """nvidia-smi's [Unknown Error] (or NVMLError_Unknown) is a missing reading, not "not applicable"."""
    g = gpu(**{**CASE_STUDY, reading: None}, failed_readings=((reading, "nvidia-smi: [Unknown Error]"),),
            samples=[sample(clock_event_reasons_mask=None)] * 3)
    (found,) = check("h", g, S)
    assert found.severity is Severity.UNKNOWN and found.gpu == 0
    assert found.summary.endswith(f"a reading it needs failed ({reading}: nvidia-smi: [Unknown Error])")
    assert found.evidence == {"failed_readings": reading, "why": f"{reading}: nvidia-smi: [Unknown Error]"}


def test_a_reading_the_gpu_cannot_give_stays_not_applicable() -> None:
    g = gpu(**{**CASE_STUDY, "utilization_pct": None}, samples=[sample(clock_event_reasons_mask=None)] * 3)
    assert busy_low_power("h", g, S) == () and thermal_slowdown("h", g, S) == ()
