"""After the sweep an output can still fail (a full disk, a folder removed meanwhile): the report is not lost
with it (issue 30 #1). Before, stdout was empty and the exit 3: with ``--history --only-changes`` the run was
recorded, so the next run said nothing of what this one found. Now the report (or the changes) reaches
stdout, one line names the file, exit 3. And one run gives a text mail and a JSON archive (issue 30 #3)."""

from __future__ import annotations

import json
from pathlib import Path

from builders import finding, gpu, host_report, sweep

from gpudiag.audit.scheduled import DEFAULT_KEEP_DAYS, AuditOptions, audit
from gpudiag.model import HostStatus
from gpudiag.model.request import OutputRequest
from gpudiag.report import OutputFormat


def report():  # type: ignore[no-untyped-def]
    return sweep(host_report("gpu01", gpus=[gpu(index=0)], findings=[finding(gpu=0)]),
                 host_report("gpu02", status=HostStatus.TIMEOUT, error="no answer within 30 s"))


def test_an_output_file_that_fails_after_the_sweep_sends_the_report_to_stdout(tmp_path: Path) -> None:
    gone = tmp_path / "removed-meanwhile" / "r.json"
    outcome = audit(report(), OutputRequest(format=OutputFormat.JSON), AuditOptions(output=gone))
    assert outcome.exit_code == 3 and outcome.report_shown
    assert json.loads(outcome.stdout)["summary"]["exit_code"] == 2
    assert outcome.stderr == (f"cannot write {gone}.tmp.{__import__('os').getpid()}: no such file or directory",)


def test_a_prom_file_that_fails_keeps_the_changes_on_stdout(tmp_path: Path) -> None:
    options = AuditOptions(history=tmp_path / "h.sqlite", only_changes=True,
                           prom_file=tmp_path / "removed" / "g.prom")
    outcome = audit(report(), OutputRequest(format=OutputFormat.TABLE, width=100), options)
    assert outcome.exit_code == 3 and len(outcome.stderr) == 1 and "g.prom" in outcome.stderr[0]
    assert "NEW" in outcome.stdout and "BUSY_LOW_POWER" in outcome.stdout  # what was recorded, the operator saw


def test_one_run_gives_a_text_mail_and_a_json_archive(tmp_path: Path) -> None:
    options = AuditOptions(history=tmp_path / "h.sqlite", only_changes=True, output=tmp_path / "last.json",
                           output_format=OutputFormat.JSON, json_file=tmp_path / "archive.json")
    outcome = audit(report(), OutputRequest(format=OutputFormat.TABLE, width=100), options)
    assert outcome.exit_code == 2 and outcome.stderr == ()
    assert not outcome.stdout.lstrip().startswith("{") and "NEW" in outcome.stdout
    for name in ("last.json", "archive.json"):
        document = json.loads((tmp_path / name).read_text())
        assert document["summary"]["exit_code"] == 2 and len(document["hosts"]) == 2


def test_history_retention_has_a_default(tmp_path: Path) -> None:
    """Without --keep-days, runs older than 30 days are pruned: the file stops growing."""
    import datetime as dt
    import sqlite3

    history = tmp_path / "h.sqlite"
    now = 1_800_000_000.0
    for age_days in (DEFAULT_KEEP_DAYS + 5, 1.0, 0.0):
        when = now - age_days * 86400
        started = dt.datetime.fromtimestamp(when, dt.timezone.utc).isoformat()
        audit(sweep(host_report("gpu01"), started_at=started), OutputRequest(), AuditOptions(history=history),
              clock=lambda w=when: w)
    with sqlite3.connect(history) as db:
        ages = sorted(round((now - r[0]) / 86400) for r in db.execute("SELECT started_at_s FROM runs"))
    db.close()
    assert DEFAULT_KEEP_DAYS == 30.0 and ages == [0, 1]
