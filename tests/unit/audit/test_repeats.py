"""Repeats escalate: a GPU that needed the same action 3 times in 7 days of runs gets it raised one step, said
in its sentence; the history keeps what each finding needed (schema 4), and an older file is migrated."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from builders import finding, gpu, host_report, sweep

from gpudiag.audit.history import HISTORY_SCHEMA, MIGRATIONS, History
from gpudiag.audit.repeats import escalate, escalate_with_history
from gpudiag.model import Action, Finding, Severity, SweepReport
from gpudiag.model.changes import epoch_of

UUID = "GPU-5f1b2c3d-aaaa-bbbb-cccc-000000000001"
SUMMARY = "GPU 1: 2 uncorrectable ECC errors since the driver loaded"


def ecc(action: Action = Action.RESET_GPU) -> Finding:
    return finding(host="gpu01", gpu=1, code="ECC_UNCORRECTED", severity=Severity.CRITICAL, summary=SUMMARY,
                   evidence={"ecc_uncorrected": 2}, action=action)


def run(day: int, hour: int = 12, *, fault: bool = True, uuid: str = UUID) -> SweepReport:
    return sweep(host_report("gpu01", gpus=[gpu(index=0), gpu(index=1, uuid=uuid)],
                             findings=[ecc()] if fault else []),
                 started_at=f"2025-06-{day:02d}T{hour:02d}:00:00Z")


def sweep_and_record(history: History, report: SweepReport) -> SweepReport:
    """What `gpudiag sweep --history` does: escalate from the history, then record."""
    now = epoch_of(report.started_at)
    escalated = escalate(report, history.times_needed(report, since_s=now - 7 * 86400))
    history.record(escalated, now_s=now)
    return escalated


def the_finding(report: SweepReport) -> Finding:
    (only,) = report.findings
    return only


def test_the_third_reset_this_week_asks_for_a_reboot(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.sqlite") as history:
        assert the_finding(sweep_and_record(history, run(1))) == ecc()
        assert the_finding(sweep_and_record(history, run(1, 13))) == ecc()  # still open: the same time
        sweep_and_record(history, run(2, fault=False))  # reset: cleared
        assert the_finding(sweep_and_record(history, run(3))) == ecc()  # the second time
        sweep_and_record(history, run(4, fault=False))
        third = the_finding(sweep_and_record(history, run(5)))
        sweep_and_record(history, run(5, 13))
    assert third == Finding(
        code="ECC_UNCORRECTED", severity=Severity.CRITICAL, host="gpu01", gpu=1,
        summary=f"{SUMMARY}; needed a reset 3 times this week, so reboot_node",
        evidence={"ecc_uncorrected": 2, "action_before_repeats": "reset_gpu", "times_needed_7d": 3},
        action=Action.REBOOT_NODE)
    with sqlite3.connect(tmp_path / "h.sqlite") as db:  # what was needed, not the raise: a raise cannot feed itself
        assert {row[0] for row in db.execute("SELECT action FROM findings")} == {"reset_gpu"}


def test_one_fault_open_for_many_runs_is_one_time(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.sqlite") as history:
        for hour in range(12, 22):
            assert the_finding(sweep_and_record(history, run(1, hour))).action is Action.RESET_GPU


def test_times_older_than_a_week_and_other_gpus_do_not_count(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.sqlite") as history:
        sweep_and_record(history, run(1))
        sweep_and_record(history, run(2, fault=False))
        sweep_and_record(history, run(3))
        sweep_and_record(history, run(4, fault=False))
        # day 10: the time on day 1 is 9 days old; two times in the week
        assert the_finding(sweep_and_record(history, run(10))).action is Action.RESET_GPU
        sweep_and_record(history, run(11, fault=False))
        # another GPU in the same slot (a new UUID): its first time
        assert the_finding(sweep_and_record(history, run(12, uuid="GPU-another"))).action is Action.RESET_GPU


def test_watch_and_replace_do_not_escalate() -> None:
    report = sweep(host_report("gpu01", gpus=[gpu(index=1, uuid=UUID)],
                               findings=[ecc(Action.WATCH), ecc(Action.REPLACE_GPU)]))
    times = {("gpu01", f"uuid:{UUID}", a): frozenset({"a", "b", "c", "d"}) for a in Action}
    assert escalate(report, times) == report


def test_a_version_3_file_is_migrated_and_its_old_rows_are_not_counted(tmp_path: Path) -> None:
    """Schema 4 adds each finding's action: a version 3 file, with findings of its own, still answers (its
    rows have no action: never counted), and the next run migrates it and records the action."""
    path = tmp_path / "v3.sqlite"
    db = sqlite3.connect(path)
    start = epoch_of("2025-06-01T12:00:00Z")
    fp = f"gpu01|uuid:{UUID}|ECC_UNCORRECTED"
    db.executescript(";".join(MIGRATIONS[:3]) + "; PRAGMA user_version = 3;"
                     "INSERT INTO runs (id, started_at, started_at_s, exit_code, recorded_at_s) "
                     f"VALUES (1, '2025-06-01T12:00:00Z', {start}, 2, {start});"
                     "INSERT INTO hosts VALUES (1, 'gpu01', NULL, 'ok', NULL, 1.0);"
                     f"INSERT INTO findings VALUES (1, '{fp}', 'gpu01', 'uuid:{UUID}', 1, 'ECC_UNCORRECTED', "
                     "'critical', 's', '2025-06-01T12:00:00Z', 1, 0, 'new');")
    db.close()
    report = run(3)
    assert escalate_with_history(report, path, now_s=epoch_of(report.started_at)) == report
    with History.open(path) as history:
        assert history.version() == 3  # reading did not migrate it
        # only this run's finding counts: it goes on with the old run's streak (the same time, since day 1)
        assert history.times_needed(report, since_s=0.0) == {
            ("gpu01", f"uuid:{UUID}", Action.RESET_GPU): frozenset({"2025-06-01T12:00:00Z"})}
        history.record(report, now_s=epoch_of(report.started_at))
        assert history.version() == HISTORY_SCHEMA == 4
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT run_id, action FROM findings ORDER BY run_id").fetchall() == [
            (1, None), (2, "reset_gpu")]
