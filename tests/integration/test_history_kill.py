"""The history survives a writer killed mid-write (kill -9 of a child process that holds the write open).
Split from tests/unit/audit/test_history.py."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from history_runs import T0, faulty, healthy

from gpudiag.audit.history import History
from gpudiag.model import Severity
from gpudiag.model.changes import ChangeState

WRITER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from builders import finding, gpu, host_report, sweep
    from gpudiag.audit.history import History

    history = History.open(__import__("pathlib").Path(sys.argv[1]))
    def pause(statement):
        if statement.startswith("INSERT INTO findings"):  # runs, hosts and GPUs are written; not committed
            print("mid-write", flush=True)
            time.sleep(60)
    history.connection.set_trace_callback(pause)
    report = sweep(host_report("gpu09", gpus=[gpu(index=i) for i in range(8)],
                               findings=[finding(host="gpu09", gpu=3)]), started_at="2025-06-01T13:00:00Z")
    history.record(report)
""")


def test_kill_9_mid_write_leaves_the_history_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    with History.open(path) as history:
        history.record(healthy(0), now_s=T0)
        history.record(faulty(5), now_s=T0)
    builders = Path(__file__).resolve().parents[1] / "unit"  # builders.py, for the child
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(builders)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "mid-write"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        if child.stdout:
            child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("SELECT started_at FROM runs ORDER BY id").fetchall() == [
        ("2025-06-01T12:00:00Z",), ("2025-06-01T12:05:00Z",)]
    assert db.execute("SELECT count(*) FROM hosts WHERE host = 'gpu09'").fetchone()[0] == 0
    db.close()
    with History.open(path, lock_wait_s=2) as history:  # the lock died with the writer
        changes = history.record(faulty(10), now_s=T0).changes
    assert [(c.state, c.finding.runs) for c in changes.findings] == [(ChangeState.ONGOING, 2)]
    assert changes.findings[0].finding.severity is Severity.CRITICAL
