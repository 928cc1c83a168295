"""The active test in every format (gpudiag.report.active_report and its callers): the table's lines at 80
columns, the JSON's per-GPU object (and the node's, read back), the Prometheus gauges, the HTML section, the
history's stored readings and its per-run columns; on the H200's recorded figures and a slowed GPU."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from builders import gpu, host_report, node, sweep

from gpudiag.audit.history import readings_json, stored_readings
from gpudiag.collect.parse import parse_probe
from gpudiag.model import HostReport, SweepReport
from gpudiag.model.active import ActiveGpu, ActiveState, ActiveTest
from gpudiag.report.active_report import text_lines
from gpudiag.report.history_table import render_gpu_rows
from gpudiag.report.html import render_html
from gpudiag.report.json_report import from_document, to_document
from gpudiag.report.prometheus import render_prometheus
from gpudiag.report.table import render_table

DATA = Path(__file__).resolve().parents[2] / "data" / "h200_580.159_active"
_test = parse_probe(json.loads((DATA / "probe_active.json").read_text())).active
assert _test is not None
H200 = _test.gpus[0]


def report() -> SweepReport:
    """gpu01: GPU 0 the H200's own figures, GPU 1 slowed, GPUs 2-3 in use; gpu02: no libcuda."""
    slowed = dataclasses.replace(H200, gpu=1, compute_tflops=31.3, compute_sm_clock_mhz=990.0)
    skipped = tuple(ActiveGpu(gpu=i, state=ActiveState.SKIPPED, why="in use: a process on it") for i in (2, 3))
    test = ActiveTest(budget_s=10.0, elapsed_s=3.9, gpus=(H200, slowed, *skipped))
    gpus = [gpu(index=i, name="NVIDIA H200") for i in range(4)]
    error = "no CUDA driver library (libcuda.so.1) on the node"
    nolib = ActiveTest(budget_s=10.0, elapsed_s=0.1, error=error,
                       gpus=(ActiveGpu(gpu=0, state=ActiveState.NOT_RUN, why=error),))
    return sweep(host_report("gpu01", readings=node(gpus, hostname="gpu01", active=test)),
                 host_report("gpu02", readings=node([gpu(index=0)], hostname="gpu02", active=nolib)),
                 host_report("gpu03"))


def test_the_tables_lines_fit_80_columns_one_per_gpu_and_skips_folded() -> None:
    lines = text_lines(report(), 80)
    assert lines[0] == "Active test (up to 3.9 s a node)"
    assert lines[1:] == [
        "gpu01 GPU 0: fp32 62.5 TFLOP/s, copy 4270 GB/s, h2d 55.3 GB/s, d2h 55.2 GB/s",
        "    (1980 MHz, 274 W, Gen5 x16)",
        "gpu01 GPU 1: fp32 31.3 TFLOP/s, copy 4270 GB/s, h2d 55.3 GB/s, d2h 55.2 GB/s",
        "    (990 MHz, 274 W, Gen5 x16)",
        "gpu01 GPU 2-3: skipped: in use: a process on it",
        "gpu02: no CUDA driver library (libcuda.so.1) on the node",
    ]
    table = render_table(report(), width=80)
    assert "\n".join(lines) in table and max(len(line) for line in table.splitlines()) <= 80
    assert text_lines(sweep(host_report("gpu01")), 80) == []  # no --active: no section
    assert "Active test" not in render_table(sweep(host_report("gpu01")), width=80)


def test_json_per_gpu_and_back() -> None:
    document = to_document(report())
    gpus = document["hosts"][0]["gpus"]
    assert gpus[0]["active"]["compute_tflops"] == 62.51 and gpus[0]["active"]["state"] == "tested"
    assert gpus[1]["active"]["compute_sm_clock_mhz"] == 990.0
    assert gpus[2]["active"] == {**gpus[2]["active"], "state": "skipped", "why": "in use: a process on it"}
    assert "active" not in document["hosts"][2]["gpus"][0]  # a host without --active: no object
    back = from_document(json.loads(json.dumps(document)))
    first: HostReport = back.hosts[0]
    assert first.readings is not None and first.readings.active == report().hosts[0].readings.active  # type: ignore[union-attr]


def test_prometheus_gauges_only_where_the_test_ran() -> None:
    text = render_prometheus(report())
    assert 'gpudiag_gpu_active_fp32_flops{host="gpu01",gpu="0"} 62510000000000.0' in text
    assert 'gpudiag_gpu_active_memory_copy_bytes_per_second{host="gpu01",gpu="1"} 4270000000000.0' in text
    assert 'gpudiag_gpu_active_state{host="gpu01",gpu="2",state="skipped"} 1.0' in text
    assert 'gpudiag_gpu_active_state{host="gpu02",gpu="0",state="not_run"} 1.0' in text
    assert 'gpudiag_gpu_active_fp32_flops{host="gpu01",gpu="2"}' not in text  # skipped: no figure, never a 0
    assert "gpudiag_gpu_active" not in render_prometheus(sweep(host_report("gpu01")))


def test_the_html_page_has_a_row_per_gpu_named_to_the_test() -> None:
    page = render_html(report())
    section = page[page.index("<h2>Active test</h2>"):page.index("</table>", page.index("<h2>Active test</h2>"))]
    assert section.count("<tr>") == 1 + 5
    assert "<td>62.5</td><td>4270</td><td>55.3</td><td>55.2</td>" in section
    assert "<td>skipped</td>" in section and "in use: a process on it" in section
    assert "<h2>Active test</h2>" not in render_html(sweep(host_report("gpu01")))


def test_the_history_keeps_the_figures_per_run() -> None:
    stored = stored_readings(readings_json(gpu(index=0), H200))
    assert stored["active"]["compute_tflops"] == 62.51 and stored["active"]["pcie_h2d_gb_s"] == 55.33
    assert "active" not in stored_readings(readings_json(gpu(index=0)))
    slower = stored_readings(readings_json(gpu(index=0), dataclasses.replace(H200, compute_tflops=31.3)))
    rows = [{"run": n, "started_at": f"2026-12-0{n}T00:00:00+00:00", "status": "ok", "gpu": 0, "readings": r,
             "findings": []} for n, r in ((2, slower), (1, stored))]
    text = render_gpu_rows(rows, width=160)
    assert "TFLOP/s" in text.splitlines()[0] and "31.3" in text.splitlines()[1] and "62.5" in text.splitlines()[2]
