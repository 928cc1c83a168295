"""The collector's ``active`` section → ActiveTest (gpudiag.collect.parse_active), on the H200's recorded documents
and on junk a node could send."""

from __future__ import annotations

import json
from pathlib import Path

from gpudiag.collect.parse import parse_probe
from gpudiag.collect.parse_active import parse_active
from gpudiag.model.active import ActiveGpu, ActiveState, ActiveTest

DATA = Path(__file__).resolve().parents[2] / "data" / "h200_580.159_active"


def test_the_recorded_idle_h200() -> None:
    readings = parse_probe(json.loads((DATA / "probe_active.json").read_text()))
    assert readings.active is not None
    (result,) = readings.active.gpus
    assert readings.active.budget_s == 10.0 and 3.0 < (readings.active.elapsed_s or 0) < 5.0
    assert readings.active.error is None
    assert result == ActiveGpu(
        gpu=0, state=ActiveState.TESTED, compute_tflops=62.51, compute_sm_clock_mhz=1980.0,
        compute_sm_clock_max_mhz=1980.0, compute_power_w=result.compute_power_w,
        compute_power_max_w=result.compute_power_max_w, compute_temperature_max_c=result.compute_temperature_max_c,
        compute_clock_event_reasons_mask=0, memory_copy_gb_s=4270.0, pcie_h2d_gb_s=55.33, pcie_d2h_gb_s=55.2,
        pcie_gen_under_load=5, pcie_width_under_load=16, xids=(), ecc_uncorrected_rise=0, ecc_corrected_rise=0)
    assert 200 < (result.compute_power_max_w or 0) < 700
    assert readings.active.line(0) == "fp32 62.5 TFLOP/s, copy 4270 GB/s, h2d 55.3 GB/s, d2h 55.2 GB/s"


def test_the_recorded_busy_and_recheck_cases_are_skips() -> None:
    busy = parse_probe(json.loads((DATA / "capture_busy.json").read_text())).active
    assert busy is not None
    assert [(g.state, g.why) for g in busy.gpus] == [(ActiveState.SKIPPED, "in use: a process on it")]
    recheck = parse_active(json.loads((DATA / "capture_recheck.json").read_text())["active"])
    assert recheck is not None
    assert [(g.state, g.why) for g in recheck.gpus] == [
        (ActiveState.SKIPPED, "in use at the re-check: a process on it")]
    deadline = parse_active(json.loads((DATA / "capture_deadline.json").read_text())["active"])
    assert deadline is not None and [g.state for g in deadline.gpus] == [ActiveState.TIMED_OUT]
    assert deadline.line(0) == "timed out: the test did not finish in 4 s and was ended"


def test_no_section_is_not_asked_and_junk_is_not_reported() -> None:
    assert parse_active(None) is None and parse_active([1, 2]) is None
    junk = {"budget_s": "ten", "error": 7, "gpus": [
        {"index": 3, "state": "exploded", "compute": {"tflops": 1e300, "sm_clock_mhz_median": -5}, "memory": [],
         "h2d": {"gb_s": True, "pcie_gen_min": "5"}, "after": {"xids": [79, "x", -1], "ecc_uncorrected_rise": 2.5}},
        {"index": -1, "state": "tested"}, {"state": "tested"}, "gpu", {"index": 3, "state": "tested"}]}
    assert parse_active(junk) == ActiveTest(gpus=(ActiveGpu(gpu=3, state=ActiveState.FAILED, xids=(79,)),))
    many = {"gpus": [{"index": i, "state": "skipped"} for i in range(500)]}
    parsed = parse_active(many)
    assert parsed is not None and len(parsed.gpus) == 64
