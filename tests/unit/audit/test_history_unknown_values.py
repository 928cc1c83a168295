"""Rows a newer gpudiag wrote (issue 30, fault matrix #4): an action, a severity or a run count this version
does not know. Before, the run after the sweep was a traceback, exit 1, with nothing on stdout: the report
lost. Now an unknown word reads as the nearest this version knows, and the report is whole."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from builders import finding, gpu, host_report, sweep

from gpudiag.audit.history import History
from gpudiag.audit.scheduled import AuditOptions, audit
from gpudiag.model import Action, Severity
from gpudiag.model.request import OutputRequest
from gpudiag.report import OutputFormat


def report():  # type: ignore[no-untyped-def]
    return sweep(host_report("gpu01", gpus=[gpu(index=0)], findings=[
        finding(gpu=0, code="ECC_UNCORRECTED", severity=Severity.CRITICAL, action=Action.RESET_GPU)]))


@pytest.mark.parametrize(("column", "value"), [("action", "retire_rack"), ("severity", "dire"),
                                               ("runs", "many"), ("runs", -3), ("since", 17)])
def test_a_value_this_version_does_not_know_costs_nothing(tmp_path: Path, column: str, value: object) -> None:
    history = tmp_path / "h.sqlite"
    first = audit(report(), OutputRequest(), AuditOptions(history=history, keep_days=1e5))
    assert first.exit_code == 2
    with sqlite3.connect(history) as db:
        db.execute(f"UPDATE findings SET {column} = ?", (value,))  # noqa: S608 (a column of the test's own)
    db.close()
    for fmt in OutputFormat.TABLE, OutputFormat.JSON:
        again = audit(report(), OutputRequest(format=fmt), AuditOptions(history=history, keep_days=1e5))
        assert again.exit_code == 2 and again.stderr == () and "ECC_UNCORRECTED" in again.stdout
    with History.open(history) as recorded:
        assert recorded.run_count() == 3
        assert recorded.gpu_rows("gpu01")  # gpudiag history reads it too
