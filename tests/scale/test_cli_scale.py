"""No step of ``gpudiag sweep`` grows faster than its hosts: the inventory, the fan-out, the parsing and checks,
the JSON, the table (every row, none folded) and the history with its changes, run through the console entry
point over the shared fake transport (tests/unit/many_hosts.py: 8-GPU hosts recorded on the bed, each drawing
a power of its own). Bounds are ratios of CPU seconds measured in the same test, never wall time: four times
the hosts may cost at most six times the CPU (a quadratic step costs sixteen), and the table of every row
costs at most three times the JSON of the same hosts (rich drew it at five to six times)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from many_hosts import cpu_of_sweep, least_cpu_of_sweeps

SMALL, LARGE = 50, 200
LINEAR_SLACK = 1.5  # per-run fixed costs make small runs dearer per host: the bound is on growth only


def _answered(stdout: str) -> int:
    return sum(1 for h in json.loads(stdout)["hosts"] if h["status"] == "ok")


@pytest.mark.scale
@pytest.mark.parametrize("args", [["--format", "json"], ["--format", "table", "--no-fold"]], ids=["json", "table"])
def test_a_sweep_grows_linearly_with_its_hosts(tmp_path: Path, args: list[str]) -> None:
    cpu_of_sweep(tmp_path, 8, args)  # the imports and first uses, paid once
    small, out_small = least_cpu_of_sweeps(tmp_path, SMALL, args)
    large, out_large = least_cpu_of_sweeps(tmp_path, LARGE, args)
    if args[1] == "json":
        assert (_answered(out_small), _answered(out_large)) == (SMALL, LARGE)
    else:
        assert out_large.count("H200") == 8 * LARGE  # every GPU of every host is a row
    assert large / small <= LINEAR_SLACK * LARGE / SMALL, (small, large)


@pytest.mark.scale
def test_the_history_and_its_changes_grow_linearly(tmp_path: Path) -> None:
    def second_run(count: int) -> tuple[float, str]:
        args = ["--format", "json", "--history", str(tmp_path / f"history-{count}.sqlite")]
        cpu_of_sweep(tmp_path, count, args)  # records the first run; the later ones compare with the one before
        return least_cpu_of_sweeps(tmp_path, count, args)

    second_run(8)
    (small, out_small), (large, out_large) = second_run(SMALL), second_run(LARGE)
    assert (_answered(out_small), _answered(out_large)) == (SMALL, LARGE) and "history" in json.loads(out_large)
    assert large / small <= LINEAR_SLACK * LARGE / SMALL, (small, large)


@pytest.mark.scale
def test_the_table_of_every_row_costs_about_what_the_json_does(tmp_path: Path) -> None:
    cpu_of_sweep(tmp_path, 8, ["--format", "table"])
    as_json, _ = least_cpu_of_sweeps(tmp_path, LARGE, ["--format", "json"])
    as_table, out = least_cpu_of_sweeps(tmp_path, LARGE, ["--format", "table", "--no-fold"])
    assert out.count("H200") == 8 * LARGE
    # rich's table cost 5-6x the JSON; the plain grid about 1-2x (2.2x once on CI, where orjson makes the
    # JSON side cheaper still): 3x keeps the regression out without reading noise as one
    assert as_table <= 3 * as_json, (as_json, as_table)
