"""The right culprit on the real H200 (issue 21), replayed from raw collector documents recorded over real SSH
by ``bash bench/device_capture.sh`` (tests/data/h200_580.159_{two_processes,hold100,eager_decode,nccl1}/):

* a spinner (pid 1090, 520 MiB, NVML SM share 100%) beside a 60 GiB idle holder (pid 1092): BUSY_LOW_POWER and
  the table name the spinner (main named the holder before), at 5 and 10 samples;
* a 100 GiB idle holder: GPU_HELD_IDLE with its memory, and with a history of three runs, for how long;
* eager decode at batch 1: HOST_BOUND at 3, 5 and 10 samples;
* no real capture reads memory no process accounts for (the driver keeps 624 MiB on NVML's count).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from gpudiag.audit.history import History
from gpudiag.audit.streaks import with_streaks
from gpudiag.checks import CheckSettings, evaluate
from gpudiag.collect.parse import parse_probe
from gpudiag.model import HostReport, HostStatus, NodeReadings, SweepReport
from gpudiag.model.json_codec import decode, encode
from gpudiag.report import ReportView, render
from gpudiag.report.table import render_summary_line

DATA = Path(__file__).resolve().parents[2] / "data"
S = CheckSettings()


def doc(case: str, name: str) -> dict[str, Any]:
    return json.loads((DATA / f"h200_580.159_{case}" / f"{name}_nvml.json").read_text())


def readings(case: str, name: str) -> NodeReadings:
    return parse_probe(doc(case, name))


def host(node: NodeReadings, name: str = "h200") -> HostReport:
    return HostReport(host=name, address="127.0.0.1", status=HostStatus.OK, readings=node,
                      findings=evaluate(name, HostStatus.OK, None, node, S))


@pytest.mark.parametrize("name", ["two_processes", "two_processes_s10"])
def test_the_two_process_gpu_names_the_spinning_process_in_the_finding_and_the_table(name: str) -> None:
    node = readings("two_processes", name)
    assert {(p.pid, p.sm_utilization_pct, p.used_memory_mib) for p in node.processes} == {
        (1090, 100.0, 520.0), (1092, None, 62050.0)}
    h = host(node)
    (f,) = h.findings
    assert f.code == "BUSY_LOW_POWER" and f.evidence["pid"] == 1090
    assert f.evidence["command"] == "/opt/torch/.venv/bin/python3 bench/gpu_workloads.py spin"
    assert f.evidence["process_chosen_by"] == "sm_share"
    assert "; on it: pid 1090 gpu_workloads.py, chosen as its kernels held the GPU's SMs 100% of the window " \
           "(NVML per-process utilization; pid 1092 0%)" in f.summary
    table = render(SweepReport(started_at="2026-12-02T01:49:00Z", duration_s=2.0, hosts=(h,)), "table",
                   ReportView(width=200))
    row = next(line for line in table.splitlines() if line.startswith("h200 "))
    assert row.rstrip().endswith("pid 1090 gpu_workloads.py") and "pid 1092" not in row
    assert re.search(r"\n +gpu 0 +pid 1090 gpu_workloads\.py, root, 100% CPU, 100% SM, 0\.5 GiB \(\+1 more\)\n", table)


def test_without_per_process_utilization_the_two_are_listed_as_not_told_apart() -> None:
    raw = doc("two_processes", "two_processes")
    for p in raw["nvml"]["processes"]["0"]:
        p["sm_util_pct"] = None  # as nvidia-smi lists them: no per-process utilization
    (f,) = evaluate("h200", HostStatus.OK, None, parse_probe(raw), S)
    assert f.evidence["process_chosen_by"] == "ambiguous" and "pid" not in f.evidence
    assert f.evidence["processes"].startswith("pid 1092 gpu_workloads.py, root, 60.6 GiB; pid 1090 gpu_workloads.py")


@pytest.mark.parametrize("name", ["hold100", "hold100_s3"])
def test_gpu_held_idle_fires_on_the_idle_holder_with_its_memory(name: str) -> None:
    (f,) = host(readings("hold100", name)).findings
    assert f.code == "GPU_HELD_IDLE" and f.evidence["pid"] == 1246 and f.evidence["used_memory_mib"] == 103010.0
    assert f.evidence["user"] == "root" and f.evidence["process_chosen_by"] == "memory"
    assert "holds 100.6 GiB of its 140.4 GiB (72%), drawing 120 W; user root" in f.summary


def test_gpu_held_idle_not_on_a_busy_gpu_nor_one_with_no_process() -> None:
    assert "GPU_HELD_IDLE" not in [f.code for f in host(readings("two_processes", "two_processes")).findings]
    idle = json.loads((DATA / "h200_580.159_processes" / "idle_nvml.json").read_text())
    assert evaluate("h200", HostStatus.OK, None, parse_probe(idle), S) == ()


def test_with_a_history_of_three_runs_it_says_for_how_long(tmp_path: Path) -> None:
    node = readings("hold100", "hold100")
    with History.open(tmp_path / "history.db") as history:
        for hour in range(3):
            report = SweepReport(started_at=f"2026-12-02T0{hour}:00:00Z", duration_s=2.0, hosts=(host(node),))
            changes = history.record(report, now_s=0.0).changes
        (f,) = with_streaks(report, changes).findings
    assert f.summary.endswith("; so for 3 runs over 2.0 h (since 2026-12-02T00:00:00Z)")
    assert (f.evidence["streak_runs"], f.evidence["streak_hours"]) == (3, 2.0)
    table = render(with_streaks(report, changes), "table", ReportView(width=200))
    assert "held idle  1 GPU held at 0% (100.6 GiB): 1 root" in table
    assert render_summary_line(report) == ("1 hosts (1 answered), 1 GPUs (1 held idle), 1 findings (1 warning); "
                                           "exit 1: warnings or missing readings")


@pytest.mark.parametrize("samples", [3, 5, 10])
def test_eager_decode_is_host_bound_at_3_5_and_10_samples(samples: int) -> None:
    node = readings("eager_decode", f"eager_decode_s{samples}")
    assert len(node.gpus[0].samples) == samples
    (f,) = host(node).findings
    assert f.code == "HOST_BOUND" and f.evidence["process_chosen_by"] == "cpu" and f.evidence["pid"] == 1375
    assert "its kernels held the SMs" in f.evidence["kernels_launched"]


def test_no_real_capture_reads_memory_no_process_accounts_for() -> None:
    """The threshold stays quiet on every recording whose processes were read (NVML: +624 MiB, smi: +9 MiB)."""
    judged = 0
    for path in sorted(DATA.glob("h200*/*.json")):
        raw = json.loads(path.read_text())
        if not str(raw.get("schema", "")).startswith("gpudiag.probe"):
            continue
        node = parse_probe(raw)
        judged += bool(node.processes)
        assert "GPU_MEMORY_UNACCOUNTED" not in [f.code for f in evaluate("h", HostStatus.OK, None, node, S)], path
    assert judged >= 20


def test_ras_says_its_ranks_in_busy_low_power_and_survives_the_json_report() -> None:
    """What NCCL's RAS thread answered on the H200 (world size 1), put beside the starved GPU's readings."""
    exchange = json.loads((DATA / "h200_580.159_nccl1" / "ras_28028.json").read_text())["json_verbose_p2"]
    raw = doc("two_processes", "two_processes")
    raw["nccl_ras"] = {"asked": True, "from": "default", "host": "127.0.0.1", "port": 28028, "format": "json",
                       "answer": exchange["received"][-1].removesuffix("<closed>"), "closed": True,
                       "truncated": False, "error": None, "elapsed_s": 0.002}
    node = parse_probe(raw)
    (f,) = evaluate("h200", HostStatus.OK, None, node, S)
    assert "; NCCL RAS (2.28.9): 1 rank on 1 node (192.0.2.2); every rank answered and none lags" in f.summary
    assert (f.evidence["nccl_ras_ranks"], f.evidence["nccl_ras_nodes"]) == (1, "192.0.2.2")
    back = decode(NodeReadings, json.loads(json.dumps(encode(node))))
    assert back.nccl_ras == node.nccl_ras and back == dataclasses.replace(node)
