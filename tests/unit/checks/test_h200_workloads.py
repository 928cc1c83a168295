"""Real H200 readings under known workloads (tests/data/h200_580.159_<workload>/, recorded over real SSH by
bench/device_sweep.sh) replayed through the parser and the checks: each must get its right verdict.

A resident-but-starved GPU (one spinning thread; a graph of tiny kernels) must be flagged BUSY_LOW_POWER;
bandwidth-bound work (a large copy, a batch-1 GEMV) and a compute-bound GEMM at its power cap must not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudiag.checks import CheckSettings, evaluate
from gpudiag.collect.parse import parse_probe
from gpudiag.model import HostStatus

DATA = Path(__file__).resolve().parents[2] / "data"

# workload -> (finding codes, why)
VERDICTS = {
    "idle": ([], "idle: 0% busy, ~77 W"),
    "spin": (["BUSY_LOW_POWER"], "one thread spinning: 100% busy at ~17% of 700 W"),
    "tiny_graph": (["BUSY_LOW_POWER"], "launch-bound graph of tiny kernels: 99% busy at ~17%"),
    "gemv": ([], "bandwidth-bound GEMV: memory 100% busy, ~90% power"),
    "copy": ([], "bandwidth-bound copy: memory 100% busy at ~67% power"),
    "small_gemm": ([], "small GEMMs launched from Python: only ~20% busy, not 'busy'"),
    "gemm": ([], "compute-bound GEMM at its power cap"),
}


def load(workload: str, source: str = "probe") -> dict[str, object]:
    return json.loads((DATA / f"h200_580.159_{workload}" / f"{source}.json").read_text())


@pytest.mark.parametrize("source", ["probe", "nvml"])
@pytest.mark.parametrize("workload", sorted(VERDICTS))
def test_recorded_workload_gets_its_verdict(workload: str, source: str) -> None:
    """Both recordings of each workload - through nvidia-smi (probe.json) and through NVML (nvml.json)."""
    expected, why = VERDICTS[workload]
    node = parse_probe(load(workload, source))
    assert node.source == ("nvml" if source == "nvml" else "nvidia-smi (python collector)")
    assert [g.name for g in node.gpus] == ["NVIDIA H200"]
    assert node.driver_version == "580.159.04" and node.cuda_version == "13.0"
    found = evaluate("h200", HostStatus.OK, None, node, CheckSettings())
    assert [f.code for f in found] == expected, why


@pytest.mark.parametrize("workload", sorted(VERDICTS))
def test_the_asyncssh_sweep_of_the_same_state_agreed(workload: str) -> None:
    """The second reading, through gpudiag's own SSH path, gave the same verdict."""
    doc = json.loads((DATA / f"h200_580.159_{workload}" / "sweep.json").read_text())
    (host,) = doc["hosts"]
    assert host["status"] == "ok"
    assert sorted({f["code"] for f in host["findings"]}) == VERDICTS[workload][0]


def test_spin_evidence_is_the_real_numbers() -> None:
    node = parse_probe(load("spin"))
    (finding,) = evaluate("h200", HostStatus.OK, None, node, CheckSettings())
    gpu = node.gpus[0]
    assert finding.evidence["utilization_pct"] == gpu.utilization_pct == 100.0
    assert finding.evidence["enforced_power_limit_w"] == 700.0
    assert finding.evidence["pct_of_limit"] < 25.0  # type: ignore[operator]
    assert gpu.sm_clock_mhz == 1980.0  # clocks at max: not a slowdown, the SMs are just idle


def test_gemm_runs_at_the_power_cap_with_sw_power_cap_reason() -> None:
    gpu = parse_probe(load("gemm")).gpus[0]
    assert "sw_power_cap" in gpu.clock_event_reasons
    assert gpu.power_w is not None and gpu.power_w > 0.9 * 700


def test_nvml_recordings_carry_the_energy_average_and_the_verdict_uses_it() -> None:
    node = parse_probe(load("spin", "nvml"))
    gpu = node.gpus[0]
    assert gpu.energy_power_w is not None and gpu.power_w is not None
    assert abs(gpu.energy_power_w - gpu.power_w) < 5.0
    (finding,) = evaluate("h200", HostStatus.OK, None, node, CheckSettings())
    assert finding.evidence["watts"] == gpu.energy_power_w
    assert finding.evidence["power_source"] == "energy_counter"


@pytest.mark.parametrize("workload", ["spin", "gemm"])
def test_recorded_parity_of_nvml_and_nvidia_smi(workload: str) -> None:
    """tests/gpu/test_parity.py's output on the H200: no field outside its tolerance."""
    doc = json.loads((DATA / "h200_580.159_parity" / f"{workload}.json").read_text())
    assert doc["problems"] == []
    diffs = {f["field"]: f["diff"] for f in doc["fields"] if f["diff"] is not None}
    assert diffs["utilization_pct"] == 0.0 and diffs["enforced_power_limit_w"] == 0.0
    assert abs(diffs["power_w"]) < 1.0


PROBE2 = DATA / "h200_580.159_probe2"


@pytest.mark.parametrize("workload", ["idle", "spin", "tiny_graph", "gemm"])
@pytest.mark.parametrize("path", ["nvml", "smi"])
def test_power_draw_instant_on_both_paths_of_a_real_h200(workload: str, path: str) -> None:
    """The table's newest reading, recorded through NVML (NVML_FI_DEV_POWER_INSTANT) and nvidia-smi
    (power.draw.instant) on the H200: present, near the 1 s average, nothing failed, the same verdict."""
    node = parse_probe(json.loads((PROBE2 / f"{workload}_{path}.json").read_text()))
    (g,) = node.gpus
    assert node.source == ("nvml" if path == "nvml" else "nvidia-smi (python collector)")
    assert g.power_instant_w is not None and g.power_w is not None and g.failed_readings == ()
    assert abs(g.power_instant_w - g.power_w) <= max(15.0, 0.05 * g.power_w)
    assert all(s.power_instant_w is not None for s in g.samples) and len(g.samples) == 5
    power = g.power()
    assert power is not None
    assert power.source.value == ("energy_counter" if path == "nvml" else "power_draw")
    codes = [f.code for f in evaluate("h200", HostStatus.OK, None, node, CheckSettings())]
    assert codes == VERDICTS[workload][0], VERDICTS[workload][1]


def test_recorded_parity_of_power_draw_instant() -> None:
    for workload in ("spin", "gemm"):
        doc = json.loads((PROBE2 / f"parity_{workload}.json").read_text())
        assert doc["problems"] == []
        (row,) = [f for f in doc["fields"] if f["field"] == "power_instant_w"]
        assert row["nvml"] is not None and row["nvidia_smi"] is not None and abs(row["diff"]) < 30.0
