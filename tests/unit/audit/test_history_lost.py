"""A history that fails after the sweep loses only the record (issue 23 #8): the report is printed and
written (``--output``) as if there were no ``--history``, one line says the run was not recorded, exit 3.
Before, the run exited 3 with nothing on stdout and no ``--output`` file, or with a traceback for a damaged
page. (Before the sweep, ``check_history`` finds these and nothing is swept: tests/integration.)"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from builders import finding, gpu, host_report, sweep

from gpudiag.audit.history import History, HistoryError
from gpudiag.audit.scheduled import AuditConfigError, AuditOptions, audit, check_history
from gpudiag.model import SweepReport
from gpudiag.model.request import OutputRequest
from gpudiag.report import OutputFormat
from history_files import damage_a_page, recorded_history


def report() -> SweepReport:
    return sweep(host_report("gpu01", gpus=[gpu(index=0)], findings=[finding(gpu=0)]))


def drop_findings(path: Path) -> Path:
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE findings")
    db.close()
    return path


BROKEN = {"damaged_page": (damage_a_page, "the file is damaged"), "missing_table": (drop_findings, "findings")}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_the_report_is_printed_and_written_when_the_history_breaks(tmp_path: Path, kind: str) -> None:
    breaks, said = BROKEN[kind]
    history = breaks(recorded_history(tmp_path / "h.sqlite"))
    with pytest.raises(AuditConfigError, match=said):  # what the sweep command says before any connection
        check_history(AuditOptions(history=history))
    # ... and the history broke only after that check: the report is not lost.
    shown = audit(report(), OutputRequest(format=OutputFormat.JSON), AuditOptions(history=history))
    assert json.loads(shown.stdout)["hosts"][0]["host"] == "gpu01" and shown.report_shown
    (line,) = shown.stderr
    assert line.startswith(f"history {history}: ") and line.endswith("; this run was not recorded")
    assert shown.exit_code == 3 and shown.run_id is None
    out = tmp_path / "report.json"
    written = audit(report(), OutputRequest(format=OutputFormat.JSON, quiet=True),
                    AuditOptions(history=history, output=out, only_changes=True))
    assert json.loads(out.read_text())["hosts"][0]["host"] == "gpu01"
    assert written.stdout == "" and written.stderr == shown.stderr and written.exit_code == 3


def test_a_lock_held_past_the_wait_after_the_sweep(tmp_path: Path) -> None:
    history = recorded_history(tmp_path / "h.sqlite")
    check_history(AuditOptions(history=history))  # fine before the sweep
    holder = sqlite3.connect(history, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another run, still writing, took the lock since
    try:
        outcome = audit(report(), OutputRequest(format=OutputFormat.TABLE),
                        AuditOptions(history=history, lock_wait_s=0.2, only_changes=True))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert "gpu01" in outcome.stdout and outcome.report_shown  # the whole table, not the (unknown) changes
    assert outcome.stderr == (f"history {history} is locked by another gpudiag run (waited 0.2 s); "
                              "this run was not recorded",)
    assert outcome.exit_code == 3
    with History.open(history) as opened:
        assert opened.run_count() == 1  # nothing half-written


def test_a_newer_schema_is_refused_before_the_sweep(tmp_path: Path) -> None:
    history = recorded_history(tmp_path / "h.sqlite")
    with sqlite3.connect(history) as db:
        db.execute("PRAGMA user_version = 99")
    db.close()
    with pytest.raises(HistoryError, match="schema version 99 is newer"):
        History.check(history)
