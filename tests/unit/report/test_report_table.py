"""The table report: cells, the clush-style folding of identical hosts, the golden output.

The golden file ``tests/data/golden/table_basic.txt`` is ``render_table(_basic_report(), width=120)``.
After an intended change to the layout, regenerate it (with every other golden file: tests/unit/report/
test_golden_reports.py) and review the diff:

    GPUDIAG_UPDATE_GOLDEN=1 python3 -m pytest -q tests/unit -k golden
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest
from builders import finding, gpu, host_report, node, sweep

from gpudiag.model import HostStatus, Severity, SmiStatus
from gpudiag.report import FORMATS, OutputFormat, ReportView, render
from gpudiag.report.fold import group_identical
from gpudiag.report.table import (
    clock_cell,
    host_block,
    pcie_cell,
    power_cell,
    render_summary_line,
    render_table,
    short_name,
)

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "golden" / "table_basic.txt"
ANSI = re.compile(r"\x1b\[[0-9;]*m")

RTX_PRO = {
    "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
    "compute_capability": "12.0",
    "sm": "SM120",
    "arch": "Blackwell (RTX)",
    "power_w": 330.0,
    "enforced_power_limit_w": 600.0,
    "default_power_limit_w": 600.0,
    "sm_clock_mhz": 2400.0,
    "max_sm_clock_mhz": 2430.0,
    "memory_total_mib": 97_887.0,
}


def _basic_report():
    """Three identical RTX PRO hosts, one with a GPU busy at low power, one H100 host, one down."""
    healthy = [gpu(index=i, **RTX_PRO) for i in range(2)]
    slow = gpu(
        index=1,
        **{**RTX_PRO, "power_w": 60.0, "pcie_gen": 3, "pcie_width": 8},
        clock_event_reasons=("sw_power_cap", "hw_slowdown"),
    )
    return sweep(
        host_report("gpu01", gpus=healthy),
        host_report("gpu02", gpus=healthy),
        host_report("gpu03", gpus=[gpu(index=i, **RTX_PRO, temperature_c=60.4) for i in range(2)]),
        host_report(
            "gpu04",
            gpus=[healthy[0], slow],
            findings=[
                finding(
                    host="gpu04",
                    gpu=1,
                    summary="GPU 1 reads 100% utilization but draws 10% of its 600 W enforced power limit, "
                    "with the SM clock held at 2400 MHz.",
                ),
                finding(
                    host="gpu04",
                    gpu=1,
                    code="PCIE_DOWNGRADED",
                    severity=Severity.WARNING,
                    summary="GPU 1's PCIe link runs at gen 3 x8, below its gen 5 x16 maximum.",
                ),
            ],
        ),
        host_report("h100-01", gpus=[gpu(index=0)]),
        host_report(
            "gpu05",
            status=HostStatus.UNREACHABLE,
            error="could not connect to 10.0.0.5 port 22: connection refused",
            findings=[
                finding(
                    host="gpu05",
                    gpu=None,
                    code="HOST_UNREACHABLE",
                    severity=Severity.UNKNOWN,
                    summary="gpu05 did not answer, so its GPUs were not checked.",
                )
            ],
        ),
    )


def _lines_with(text: str, needle: str) -> list[str]:
    return [line for line in text.splitlines() if needle in line]


def test_golden_table_basic():
    text = render_table(_basic_report(), width=120)

    if os.environ.get("GPUDIAG_UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8")


def test_fits_in_120_columns_without_trailing_spaces():
    text = render_table(_basic_report(), width=120)

    assert max(len(line) for line in text.splitlines()) <= 120
    assert all(line == line.rstrip() for line in text.splitlines())


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([], []),
        ([("a", 1)], [(("a",), 1)]),
        ([("a", 1), ("b", 2), ("c", 1)], [(("a", "c"), 1), (("b",), 2)]),
        ([("b", 2), ("a", 1), ("c", 2)], [(("b", "c"), 2), (("a",), 1)]),  # first appearance, not sorted
        ([("a", ("x", 1)), ("b", ("x", 1))], [(("a", "b"), ("x", 1))]),
    ],
)
def test_group_identical(items, expected):
    assert group_identical(items) == expected


def test_identical_hosts_fold_into_one_row():
    text = render_table(_basic_report(), width=120)

    # gpu03 reads 60.4 °C where the others read 60: the same once rounded, so it folds with them.
    assert len(_lines_with(text, "gpu[01-03]")) == 1
    # ... and its two GPUs, which read the same, are one row.
    assert _lines_with(text, "gpu[01-03]")[0].split()[:2] == ["gpu[01-03]", "0-1"]
    assert "(3 hosts)" in text
    assert not _lines_with(text, "gpu01 ") and not _lines_with(text, "gpu02 ")


@pytest.mark.parametrize(
    ("other", "folds"),
    [
        (host_report("b", gpus=[gpu(temperature_c=60.4)]), True),
        (host_report("b", gpus=[gpu(power_w=650.4)]), True),
        (host_report("b", gpus=[gpu(uuid="GPU-other", pci_bus_id="00000000:99:00.0")]), True),
        (host_report("b", gpus=[gpu(temperature_c=61.0)]), False),
        (host_report("b", gpus=[gpu(clock_event_reasons=("sw_power_cap",))]), False),
        (host_report("b", gpus=[gpu(), gpu(index=1)]), False),
        (host_report("b", findings=[finding(host="b", code="PCIE_DOWNGRADED")]), False),
        (host_report("b", findings=[finding(host="b", severity=Severity.WARNING)]), False),
        (host_report("b", status=HostStatus.PARTIAL), False),
    ],
)
def test_what_folds(other, folds):
    a = host_report("a", gpus=[gpu()])

    assert (host_block(a) == host_block(other)) is folds


def test_unreachable_host_gets_one_row_with_status_and_error():
    text = render_table(_basic_report(), width=120)

    rows = _lines_with(text, "gpu05:")
    assert rows == ["gpu05: unreachable: could not connect to 10.0.0.5 port 22: connection refused"]


def test_unreachable_hosts_with_the_same_error_fold():
    report = sweep(*(host_report(f"node{i}", status=HostStatus.TIMEOUT) for i in range(1, 5)))

    text = render_table(report, width=120)

    assert _lines_with(text, "node[1-4]") == ["node[1-4] (4 hosts): timeout: no answer within 30 s"]


def test_host_whose_nvidia_smi_failed_gets_a_row_without_gpus():
    failed = node([], smi_status=SmiStatus.DRIVER_ERROR, smi_message="NVIDIA-SMI has failed", smi_exit_code=9)
    report = sweep(host_report("gpu01", readings=failed))

    text = render_table(report, width=120)

    # "ok" alone beside a driver error would read as healthy: the GPUs' state stands beside the SSH status.
    assert _lines_with(text, "gpu01") == [
        "gpu01: ok, gpus: driver_error: nvidia-smi driver_error: NVIDIA-SMI has failed"]


def test_findings_by_host_one_line_each():
    text = render_table(_basic_report(), width=160)

    section = text.split("Findings\n", 1)[1]
    assert section.startswith("gpu04\n  CRITICAL  BUSY_LOW_POWER    gpu 1  GPU 1 reads 100% utilization")
    assert "  WARNING   PCIE_DOWNGRADED   gpu 1  GPU 1's PCIe link runs at gen 3 x8" in section
    assert "gpu05\n  UNKNOWN   HOST_UNREACHABLE         gpu05 did not answer" in section


def test_partial_host_shows_its_error_with_its_findings():
    report = sweep(host_report("gpu01", status=HostStatus.PARTIAL))

    text = render_table(report, width=120)

    assert "gpu01  partial: the collector's output was cut at 1 MiB" in text.splitlines()


def test_cluster_summary_lists_non_zero_counts_and_the_exit_code():
    text = render_table(_basic_report(), width=120)

    summary = text.split("Summary\n", 1)[1].splitlines()
    assert summary == [
        "  hosts     6: 5 ok, 1 unreachable",
        "  GPUs      9: 1 SM90, 8 SM120",
        "  power     shown as power.draw median (9 GPUs)",
        "  findings  3: 1 BUSY_LOW_POWER, 1 HOST_UNREACHABLE, 1 PCIE_DOWNGRADED",
        "  sweep     started 2025-06-01T12:00:00Z, took 6.5 s",
        "exit 2: critical findings",
    ]


def test_one_power_figure_in_the_table_the_json_and_the_finding():
    """power.draw median 500 W, energy counter 330 W, limit 600 W: every output shows 330 W (55%), the
    energy counter's figure, and says so (the check, the JSON and the table once disagreed: 55% vs 83%)."""
    from gpudiag.checks import CheckSettings, evaluate
    from gpudiag.report.json_report import to_document

    g = gpu(index=0, utilization_pct=100.0, memory_utilization_pct=10.0, power_w=500.0, energy_power_w=330.0,
            enforced_power_limit_w=600.0, default_power_limit_w=600.0)
    (found,) = evaluate("h", HostStatus.OK, None, node([g]), CheckSettings())
    report = sweep(host_report("h", gpus=[g], findings=[found]))

    assert (found.code, found.evidence["watts"], found.evidence["pct_of_limit"]) == (
        "BUSY_LOW_POWER", 330.0, 55.0)
    assert "330 W of its 600 W enforced limit (55%)" in found.summary
    assert found.evidence["power_source"] == "energy_counter"
    (written,) = to_document(report)["hosts"][0]["gpus"]
    assert written["power"] == {"watts": 330.0, "source": "energy_counter", "pct_of_limit": 55.0, "readings": {
        "energy_counter": 330.0, "power_draw": 500.0, "power_draw_instant": None}}  # the raw ones, named as such
    assert not {"power_pct_of_limit", "power_w", "energy_power_w"} & set(written)  # the one figure, once
    text = render_table(report, width=160)
    assert "330/600 W (55%)" in text and "83%" not in text
    assert "  power     shown as energy-counter average (1 GPU)" in text.splitlines()


def test_no_findings():
    text = render_table(sweep(host_report("gpu01")), width=120)

    assert "No findings." in text.splitlines()
    assert text.endswith("exit 0: nothing needs attention\n")


def test_colour_only_when_asked():
    report = _basic_report()

    plain = render_table(report, width=120)
    coloured = render_table(report, width=120, color=True)

    assert not ANSI.search(plain)
    assert ANSI.search(coloured)
    assert [line.rstrip() for line in ANSI.sub("", coloured).splitlines()] == plain.splitlines()


def test_wide_console_keeps_names_and_headers_on_one_line():
    text = render_table(_basic_report(), width=200)

    assert text.splitlines()[0].split() == [
        "host", "gpu", "name", "cc/SM", "util", "%", "mem", "%", "power", "SM", "clock", "temp", "°C", "PCIe",
        "reasons",
    ]  # fmt: skip
    assert "RTX PRO 6000 Blackwell Server Edition" in text


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", "H100 80GB HBM3"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000 Blackwell Server Edition"),
        ("Tesla V100-SXM2-16GB", "Tesla V100-SXM2-16GB"),
        (None, "-"),
    ],
)
def test_short_name(name, expected):
    assert short_name(name) == expected


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"power_w": 330.0, "enforced_power_limit_w": 600.0}, "330/600 W (55%)"),
        ({"power_w": 59.6, "enforced_power_limit_w": 600.0}, "60/600 W (10%)"),
        ({"power_w": None, "enforced_power_limit_w": 600.0}, "-/600 W"),
        ({"power_w": 330.0, "enforced_power_limit_w": None}, "330 W"),
        ({"power_w": None, "enforced_power_limit_w": None}, "-"),
    ],
)
def test_power_cell(overrides, expected):
    assert power_cell(gpu(**overrides)) == expected


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"sm_clock_mhz": 2400.0, "max_sm_clock_mhz": 2430.0}, "2400/2430 MHz"),
        ({"sm_clock_mhz": None, "max_sm_clock_mhz": None}, "-"),
    ],
)
def test_clock_cell(overrides, expected):
    assert clock_cell(gpu(**overrides)) == expected


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, "5x16"),
        ({"pcie_gen": 3, "pcie_width": 8}, "3x8/5x16"),
        ({"pcie_gen": 1}, "1x16/5x16"),  # idle GPUs drop their link generation: shown, judged by the checks
        ({"pcie_gen_max": None, "pcie_width_max": None}, "5x16"),
        ({"pcie_gen": None, "pcie_width": None}, "-"),
    ],
)
def test_pcie_cell(overrides, expected):
    assert pcie_cell(gpu(**overrides)) == expected


def test_lost_gpu_says_so_in_reasons():
    text = render_table(sweep(host_report("gpu01", gpus=[gpu(lost=True, utilization_pct=None)])), width=160)

    row = _lines_with(text, "gpu01 ")[0]
    assert row.endswith(" LOST")
    assert " - " in row


def test_summary_line():
    line = render_summary_line(_basic_report())

    assert line == (
        "6 hosts (5 ok, 1 unreachable), 9 GPUs, 3 findings (1 critical, 1 unknown, 1 warning); "
        "exit 2: critical findings"
    )
    assert "\n" not in line


@pytest.mark.parametrize("fmt", [OutputFormat.TABLE, "table", OutputFormat.JSON, "json"])
def test_render_dispatches_on_format(fmt):
    text = render(_basic_report(), fmt, ReportView(width=120, color=False))

    if OutputFormat(fmt) is OutputFormat.JSON:
        assert text.startswith('{\n  "schema": "gpudiag.sweep/4"')
    else:
        assert text == render_table(_basic_report(), width=120)


def test_every_format_choice_has_one_entry():
    assert [name for name, _ in FORMATS] == list(OutputFormat)


def test_render_refuses_unknown_format():
    with pytest.raises(ValueError):
        render(_basic_report(), "yaml")


def test_same_finding_on_several_gpus_of_a_host_is_one_line():
    findings = [finding(gpu=i, severity=Severity.WARNING, summary=f"reads 100% busy at {300 + i} W") for i in
                (0, 1, 2, 3, 5)]
    findings.append(finding(code="GPU_LOST", gpu=4, severity=Severity.CRITICAL, summary="GPU 4 is lost"))
    report = sweep(host_report("gpu01", gpus=[gpu(index=i) for i in range(6)], findings=findings))
    lines = [line for line in render(report, "table").splitlines() if "BUSY_LOW_POWER" in line or "GPU_LOST" in line]
    assert len(lines) == 3  # two findings lines and the summary's count line
    assert re.search(r"CRITICAL\s+GPU_LOST\s+gpu 4\s+GPU 4 is lost", lines[0])
    assert re.search(r"WARNING\s+BUSY_LOW_POWER\s+gpu 0-3,5\s+5 GPUs; gpu 0 reads 100% busy at 300 W", lines[1])


def test_the_process_column_names_the_process_running_the_kernels_and_is_left_out_where_no_gpu_has_one():
    """Issue 21: the process whose kernels occupy the GPU (its SM share), not the one holding the most memory;
    without per-process utilization, the table says it cannot tell and lists them."""
    from gpudiag.model import GpuProcess

    holder = GpuProcess(gpu=0, pid=48213, used_memory_mib=90_000.0, command=("python3", "-m", "sglang.launch_server"),
                        job_id="81723", sm_utilization_pct=0.0)
    spinner = GpuProcess(gpu=0, pid=500, used_memory_mib=300.0, command=("python3", "spin.py"),
                         sm_utilization_pct=100.0)
    busy = host_report("gpu01", gpus=[gpu(index=0), gpu(index=1)],
                       readings=node([gpu(index=0), gpu(index=1)], processes=(spinner, holder)))
    plain = host_report("gpu02")

    wide = render_table(sweep(busy, plain), width=200)
    assert wide.splitlines()[0].split()[-1] == "process"
    assert _lines_with(wide, "pid 500 spin.py")  # its kernels, though it holds the least memory
    assert "pid 48213" not in wide
    unknown = [dataclasses.replace(p, sm_utilization_pct=None) for p in (spinner, holder)]
    blind = host_report("gpu01", gpus=[gpu(index=0)], readings=node([gpu(index=0)], processes=tuple(unknown)))
    assert _lines_with(render_table(sweep(blind), width=200),
                       "one of 2: pid 48213 sglang (job 81723), pid 500 spin.py")
    narrow = render_table(sweep(busy, plain), width=80)
    assert "process" in _lines_with(narrow, "not shown at 80 columns")[0]
    without = render_table(sweep(plain), width=200)
    assert "process" not in without
