"""``gpudiag history`` as plain-text tables: the recorded runs, or one host's (one GPU's) readings and findings
per run. Pure: returns text (rows as :meth:`gpudiag.audit.history.History.runs` and ``gpu_rows`` give them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpudiag.report.columns import plain_table

# (header, reading in the stored readings JSON (:func:`reading_of`), format)
GPU_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("util%", "utilization_pct", "{:.0f}"),
    ("mem%", "memory_utilization_pct", "{:.0f}"),
    ("power W", "power.watts", "{:.0f}"),
    ("of limit%", "power.pct_of_limit", "{:.1f}"),
    ("SM MHz", "sm_clock_mhz", "{:.0f}"),
    ("temp C", "temperature_c", "{:.0f}"),
    ("PCIe", "pcie_gen", "gen{}"),
    ("TFLOP/s", "active.compute_tflops", "{:.1f}"),  # --active's figures: a GPU that slowed since last week
    ("copy GB/s", "active.memory_copy_gb_s", "{:.0f}"),
    ("h2d GB/s", "active.pcie_h2d_gb_s", "{:.1f}"),
)


def reading_of(readings: Mapping[str, object], path: str) -> object:
    """The value at ``path`` in a stored readings object: a field name, or ``power.pct_of_limit`` (the power
    object's share); None when absent."""
    value: object = readings
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _cell(value: object, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def render_runs(rows: Sequence[dict[str, Any]], *, width: int = 160) -> str:
    """The recorded runs, newest first, in ``width`` columns."""
    if not rows:
        return "no recorded runs\n"
    cells = [(str(r["run"]), r["started_at"], str(r["exit_code"]), str(r["hosts"]), str(r["open_findings"]),
              "; ".join(r["notify_errors"]) or "-") for r in rows]
    return plain_table(("run", "started", "exit", "hosts", "open findings", "notify errors"), cells, width,
                       priorities=(100, 90, 95, 70, 80, 60))


def render_gpu_rows(rows: Sequence[dict[str, Any]], *, width: int = 160) -> str:
    """One host's (one GPU's) readings and findings per run, in ``width`` columns: the readings that matter
    least left out first at 80."""
    if not rows:
        return "nothing recorded for this host\n"
    out = []
    for r in rows:
        readings = r["readings"] or {}
        findings = ", ".join(f"{f['code']} ({f['state']}, {f['runs']} run{'s' if f['runs'] != 1 else ''})"
                             for f in r["findings"]) or "-"
        out.append((str(r["run"]), r["started_at"], r["status"], "-" if r["gpu"] is None else str(r["gpu"]),
                    *(_cell(reading_of(readings, name), fmt) for _, name, fmt in GPU_COLUMNS), findings))
    return plain_table(("run", "started", "status", "gpu", *(h for h, _, _ in GPU_COLUMNS), "findings"), out,
                       width, priorities=(100, 40, 80, 95, 90, 30, 85, 60, 50, 35, 20, 45, 25, 15, 99))
