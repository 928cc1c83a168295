"""Widths: every text renderer keeps every line within the width it is given (the CLI gives the terminal's),
leaves out the columns that matter least first and says so, and shows more when wider."""

from __future__ import annotations

import pytest
from builders import finding, gpu, host_report, sweep
from rich.cells import cell_len

from gpudiag.cli.live import render_watch
from gpudiag.model import HostStatus, Severity
from gpudiag.report.columns import Column, fit, plain_table, wrap
from gpudiag.report.history_table import render_gpu_rows
from gpudiag.report.inventory_table import hosts_count, log_text, render_inventory
from gpudiag.report.table import render_table
from gpudiag.report.terminal import trimmed_lines

LONG_NAME = "NVIDIA RTX PRO 6000 Blackwell Server Edition"


def _cluster():
    """A bit of everything: long GPU names, a slow PCIe link, reasons, long findings, dead hosts, a long
    host name, a finding on every GPU of a host."""
    slow = gpu(index=1, name=LONG_NAME, pcie_gen=3, pcie_width=8, clock_event_reasons=("sw_power_cap", "hw_slowdown"))
    long_summary = "a sentence that goes on " * 12 + "/var/log/a/very/long/path/that/cannot/break/at/a/space.log"
    return sweep(
        host_report("gpu-node-with-a-rather-long-name-01", gpus=[gpu(index=0, name=LONG_NAME), slow], findings=[
            finding(host="gpu-node-with-a-rather-long-name-01", gpu=1, code="PCIE_DOWNGRADED",
                    severity=Severity.WARNING, summary=long_summary)]),
        host_report("h1", gpus=[gpu(index=i) for i in range(8)], findings=[
            finding(host="h1", gpu=i, summary=f"GPU {i} {long_summary}") for i in range(8)]),
        *(host_report(f"dead{i:02d}", status=HostStatus.UNREACHABLE, address=f"10.1.0.{i}",
                      error=f"no SSH login to 10.1.0.{i} within 3 s") for i in range(1, 31)),
    )


@pytest.mark.parametrize("width", [40, 60, 80, 100, 120, 160, 200])
@pytest.mark.parametrize("fold", [True, False])
def test_the_sweep_report_keeps_within_every_width(width: int, fold: bool) -> None:
    text = render_table(_cluster(), width=width, fold=fold)

    assert [line for line in text.splitlines() if cell_len(line) > width] == []
    assert ("dead[01-30] (30 hosts): unreachable: no SSH login to <host> within 3 s" in text.replace("\n", " ")
            .replace("  ", " ")) is (fold and width >= 80)


def test_columns_go_by_priority_and_are_said() -> None:
    narrow, wide = render_table(_cluster(), width=80), render_table(_cluster(), width=200)

    # The slow link makes PCIe matter more than the GPU's name at 80 columns.
    assert "(not shown at 80 columns: name, cc/SM, mem %, temp °C; a wider terminal shows them)" in \
        narrow.replace("\n", " ")
    assert "not shown" not in wide and "cc/SM" in wide and "SM clock" in wide
    assert "PCIe" in narrow.splitlines()[1]  # a link below its maximum makes PCIe matter


def test_memory_utilization_stays_at_80_columns() -> None:
    """A GPU busy at 59% of its power limit is not BUSY_LOW_POWER when its memory is busy (bandwidth-bound):
    at 80 columns the table dropped ``mem %``, so nothing on screen said why it was not flagged (issue 30
    item 8). The temperature gives way first (a hot GPU's reasons say "thermal")."""
    gpus = [gpu(index=i, utilization_pct=99.0, memory_utilization_pct=99.0, power_w=413.0) for i in range(8)]
    text = render_table(sweep(host_report("infer-h200-02", gpus)), width=80)
    header = "\n".join(text.splitlines()[:2])

    assert "mem" in header and "temp" not in header
    assert "temp °C" in text.replace("\n", " ") and "a wider terminal shows them" in text.replace("\n", " ")


def test_the_columns_shown_depend_on_the_width_alone() -> None:
    """Two runs of one cluster show the same columns whatever their values (issue 19): an idle run's short
    cells must not make room for a column that a busy run's long cells leave out."""
    def run(**values: object) -> str:
        gpus = [gpu(index=i, **values) for i in range(8)]  # type: ignore[arg-type]
        text = render_table(sweep(host_report("train-h200-01", gpus), host_report("infer-h200-02", gpus)),
                            width=80)
        return next(line for line in text.splitlines() if line.startswith("host"))

    busy = run(sm_clock_mhz=1980.0, power_w=650.0, temperature_c=71.0)
    idle = run(sm_clock_mhz=405.0, power_w=65.0, temperature_c=31.0, clock_event_reasons=("gpu_idle",))
    assert busy.split() == idle.split()


def test_quiet_is_the_findings_and_the_exit_line() -> None:
    text = render_table(_cluster(), width=80, findings_only=True)

    assert text.startswith("Findings\n") and text.rstrip().endswith("exit 2: critical findings")
    assert "Summary" not in text and not any(line.startswith("host ") for line in text.splitlines())


def test_fit_takes_columns_by_priority_and_a_narrow_one_after_a_wide_one() -> None:
    columns = [Column(header="a", priority=100), Column(header="b", priority=50), Column(header="c", priority=10)]

    assert fit(columns, [10, 30, 5], 60) == (0, 1, 2)
    assert fit(columns, [10, 30, 5], 30) == (0, 2)  # b does not fit, c still does
    assert fit(columns, [100, 3, 3], 20) == (0,)  # the first column shows whatever its width


def test_wrap_hangs_under_a_short_head_and_indents_under_a_long_one() -> None:
    assert wrap("  WARNING  ", "one two three four five six", 24) == ["  WARNING  one two three",
                                                                      "           four five six"]
    assert wrap("a very long heading here ", "one two three", 30) == ["a very long heading here", "      one two three"]
    assert all(len(line) <= 20 for line in wrap("x ", "y" * 100, 20))


def test_plain_table_drops_what_matters_least_and_wraps_the_last_column() -> None:
    text = plain_table(("run", "started", "findings"), [("1", "2026-12-01T12:00:00+00:00", "A " * 40)], 40,
                       priorities=(100, 10, 90))

    assert text.splitlines()[0] == "run  findings"
    assert all(len(line) <= 40 for line in text.splitlines())
    assert text.splitlines()[-1] == "(not shown at 40 columns: started)"


def test_history_rows_fit_80() -> None:
    row = {"run": 12, "started_at": "2026-12-01T12:00:00+00:00", "status": "ok", "gpu": 3,
           "readings": {"utilization_pct": 99.0, "memory_utilization_pct": 40.0, "power": {"watts": 400.0,
                        "pct_of_limit": 57.1}, "sm_clock_mhz": 1980.0, "temperature_c": 60.0, "pcie_gen": 5},
           "findings": [{"code": "BUSY_LOW_POWER", "state": "open", "runs": 3}, {"code": "XID", "state": "new",
                                                                              "runs": 1}]}
    text = render_gpu_rows([row] * 3, width=80)

    assert all(len(line) <= 80 for line in text.splitlines())
    assert "BUSY_LOW_POWER (open, 3 runs)" in text and text.startswith("run ")


def test_watch_fits_80() -> None:
    text = render_watch(1, 0, _cluster(), width=80)

    assert [line for line in text.splitlines() if cell_len(line) > 80] == []


def test_inventory_cells_and_count() -> None:
    assert log_text({"path": "/var/log/sglang.log", "server": "sglang"}) == "sglang:/var/log/sglang.log"
    assert log_text({"path": "/v.log", "packs": ["vllm", "nccl"], "tail_mib": 32}) == (
        "/v.log (packs=vllm,nccl, tail_mib=32)")
    assert log_text("@kernel") == "@kernel"
    assert (hosts_count(1), hosts_count(2)) == ("1 host", "2 hosts")
    rows = [{"name": f"n{i}", "target": f"n{i}", "user": "u", "logs": [{"path": "/l"}]} for i in range(3)]
    assert render_inventory(rows, width=80).splitlines()[-1] == "3 hosts, 1 row"


def test_no_trailing_blanks_even_among_colour_codes() -> None:
    text = render_table(_cluster(), width=80, color=True)

    assert not any(line.endswith(" ") or line.replace("\x1b[0m", "").endswith(" ") for line in text.splitlines())
    assert trimmed_lines("a  \x1b[1m  \x1b[0m\nb \n") == "a\x1b[0m\nb\n"


def test_a_long_folded_range_heads_its_group_at_80() -> None:
    """The Ctrl-C fold line (issue 19): five cancelled hosts' range on a line of its own, broken between
    ranges, the sentence under it, rather than folded into a narrow column beside the sentence."""
    names = ["sglang-glm5", "train-h200-01", "infer-h200-02", "train-h200-04", "spare-h200-03"]
    hosts = [host_report(n, None, status=HostStatus.CANCELLED,
                         error="the sweep was interrupted before this host answered") for n in names]
    lines = render_table(sweep(*hosts, stopped_by="SIGINT"), width=80).splitlines()

    assert lines[:2] == ["infer-h200-02,sglang-glm5,spare-h200-03,train-h200-[01,04] (5 hosts):",
                         "    cancelled: the sweep was interrupted before this host answered"]
    narrow = render_table(sweep(*hosts, stopped_by="SIGINT"), width=40).splitlines()
    assert narrow[:3] == ["infer-h200-02,sglang-glm5,", "spare-h200-03,train-h200-[01,04] (5", "hosts):"] or all(
        len(line) <= 40 for line in narrow)
