"""Who is on the GPU and what its SMs do, on the real H200 (tests/data/h200_580.159_processes/, recorded over
real SSH by bench/device_sweep.sh), replayed through the parser and the checks.

The issue's bar: the spin and tiny-graph workloads give BUSY_LOW_POWER with SM activity and the workload's
pid and command in the evidence; the eager decode gives HOST_BOUND; GEMM, GEMV, copy and idle give none.
The thresholds (checks/settings.py, README "Who is on the GPU") must separate these recorded numbers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpudiag.checks import CheckSettings, evaluate
from gpudiag.collect.parse import parse_probe
from gpudiag.logs.plan import build_plans
from gpudiag.model import Host, HostStatus, NodeReadings
from gpudiag.model.json_codec import decode, encode

DATA = Path(__file__).resolve().parents[2] / "data" / "h200_580.159_processes"
S = CheckSettings()

VERDICTS = {
    "idle": [],
    "spin": ["BUSY_LOW_POWER"],
    "tiny_graph": ["BUSY_LOW_POWER"],
    "gemv": [],
    "copy": [],
    "small_gemm": ["HOST_BOUND"],  # 256x256 GEMMs launched one by one from Python: launch-bound, 19-31% busy
    "gemm": [],
    "eager_decode": ["HOST_BOUND"],
    "eager_decode_run2": ["HOST_BOUND"],
}
STARVED = ("spin", "tiny_graph")
WORKING = ("gemv", "copy", "gemm")  # busy and doing real work
HOST_BOUND = ("eager_decode", "eager_decode_run2", "small_gemm")


def load(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.json").read_text())


def node(workload: str, source: str = "nvml") -> NodeReadings:
    return parse_probe(load(f"{workload}_{source}"))


@pytest.mark.parametrize("workload", sorted(VERDICTS))
def test_each_workload_gets_its_verdict_through_nvml(workload: str) -> None:
    readings = node(workload)
    found = evaluate("h200", HostStatus.OK, None, readings, S)
    assert [f.code for f in found] == VERDICTS[workload]


@pytest.mark.parametrize("workload", sorted(w for w in VERDICTS if w != "eager_decode_run2"))
def test_nvidia_smi_path_agrees_without_gpm(workload: str) -> None:
    """Without NVML, nvidia-smi --query-compute-apps lists the processes, /proc gives their CPU, and the power
    rule stands in for the SM activity."""
    readings = node(workload, "smi")
    assert readings.processes_from == "nvidia-smi"
    assert all(g.sm_active_pct is None for g in readings.gpus)
    found = evaluate("h200", HostStatus.OK, None, readings, S)
    assert [f.code for f in found] == VERDICTS[workload]


@pytest.mark.parametrize("workload", STARVED)
def test_starved_gpu_names_its_process_and_sm_activity(workload: str) -> None:
    (finding,) = evaluate("h200", HostStatus.OK, None, node(workload), S)
    assert finding.evidence["sm_activity"].startswith("SM activity 0.") \
        and finding.evidence["sm_activity"].endswith("% (NVML GPM)")
    assert finding.evidence["command"] == f"python3 bench/gpu_workloads.py {workload}"
    assert finding.evidence["process"] == f"pid {finding.evidence['pid']} gpu_workloads.py"
    assert f"; on it: pid {finding.evidence['pid']} gpu_workloads.py" in finding.summary
    smi_finding, = evaluate("h200", HostStatus.OK, None, node(workload, "smi"), S)
    assert smi_finding.evidence["sm_activity"].startswith("SM activity not available")


def test_host_bound_names_the_process_its_cpu_and_the_gpu() -> None:
    (finding,) = evaluate("h200", HostStatus.OK, None, node("eager_decode"), S)
    e = finding.evidence
    assert e["command"] == "python3 bench/gpu_workloads.py eager_decode" and e["user"] == "root"
    assert e["process_cpu_pct"] >= 99 and 5 <= e["utilization_pct"] <= 50 and 120 <= e["watts"] <= 160
    assert finding.summary.startswith(f"pid {e['pid']} gpu_workloads.py uses 100% of a CPU core while the GPU "
                                      "is only 26% busy at 142 W (20% of its limit)")
    assert e["starved_by"] == "sm_activity"  # NVML GPM read it: SM activity decided
    assert "capture CUDA graphs" in finding.summary


def test_thresholds_separate_the_recorded_workloads() -> None:
    """The calibration, as the README states it: every busy workload's process pegs a core (its thread spins
    in cudaDeviceSynchronize), so the CPU alone says nothing; utilization separates host-bound (<= 31%) from
    device-bound (>= 98%) work, and SM activity separates starved (< 1%) from working (>= 90%) GPUs."""
    def gpu(w: str) -> Any:
        (g,) = node(w).gpus
        return g
    starved = [gpu(w).sm_active_pct for w in STARVED]
    working = [gpu(w).sm_active_pct for w in WORKING]
    assert max(starved) < 1.0 < S.starved_sm_activity_pct < 90.0 <= min(working)
    host_util = [gpu(w).utilization_pct for w in HOST_BOUND]
    busy_util = [gpu(w).utilization_pct for w in STARVED + WORKING]
    assert S.host_bound_min_utilization_pct < min(host_util) <= max(host_util) < S.host_bound_max_utilization_pct
    assert S.host_bound_max_utilization_pct < S.busy_utilization_pct <= min(busy_util)
    cpu = [node(w).processes[0].cpu_pct for w in HOST_BOUND + STARVED + WORKING]
    assert min(cpu) > S.host_bound_cpu_pct  # pegged in every one: a synchronizing thread spins
    assert node("idle").processes == ()


def test_per_process_sm_utilization_is_nvmls() -> None:
    (p,) = node("spin").processes
    assert p.sm_utilization_pct == 100.0 and p.used_memory_mib and p.job_id is None
    assert p.stdout is not None and p.unreadable == ()


def test_server_log_found_by_itself_and_read_with_its_packs() -> None:
    """The SGLang look-alike (bench/fake_server), its stdout a file, swept with no logs configured."""
    plan = build_plans([Host(name="h200")])["h200"]
    readings = parse_probe(load("server_nvml"), log_plan=plan)
    (scan,) = readings.logs
    assert scan.path == "/tmp/sglang_server.log" and scan.found_server == "SGLang"
    assert scan.found_from is not None and scan.found_from.startswith("stdout and stderr of pid ")
    codes = [f.code for f in evaluate("h200", HostStatus.OK, None, readings, S, plan)]
    assert codes == ["HOST_BOUND", "LOG_EXPECTED_ABSENT"]
    assert readings.processes[0].program == "sglang"


def test_processes_and_gpm_survive_the_json_report() -> None:
    readings = node("spin")
    back = decode(NodeReadings, json.loads(json.dumps(encode(readings))))
    assert back.processes == readings.processes and back.gpus == readings.gpus


def test_a_user_who_cannot_read_the_process_is_told_so() -> None:
    readings = parse_probe(load("server_as_alice_nvml"))
    (p,) = readings.processes
    assert readings.processes_user == "alice" and p.user == "root" and p.cpu_pct is not None
    assert dict(p.unreadable) == {"job_id": "not readable as user alice", "stdout": "not readable as user alice",
                                  "stderr": "not readable as user alice"}
    assert p.job_id is None and p.stdout is None and readings.logs == ()
