"""A ``--history`` file that cannot take the run is found before any connection (issue 23 #8): corrupt, locked
by another process, a damaged page, a table missing. Each is one line naming the file, exit 3, and nothing
swept: the target is a listening socket of the test's that counts its connections, and it gets none. Before,
the history was opened only after the sweep: every host was swept, then the run exited 3 (or with a traceback)
and printed no report."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cli_run import run_cli
from history_files import damage_a_page, recorded_history

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


@dataclass
class CountingListener:
    port: int
    accepted: int = 0


@pytest.fixture()
def listener() -> Iterator[CountingListener]:
    """A TCP port that counts the connections it accepts (and closes them): an SSH target that must not be
    contacted."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    counting = CountingListener(port=server.getsockname()[1])
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                server.accept()[0].close()
            except OSError:
                continue
            counting.accepted += 1

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield counting
    stop.set()
    thread.join()
    server.close()


def sweep(listener: CountingListener, history: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli("sweep", f"127.0.0.1:{listener.port}", "--timeout", "3", "--history", str(history), *extra,
                   cwd=REPO)  # in this process: the process is not the point


def assert_refused(done: subprocess.CompletedProcess[str], listener: CountingListener, history: Path,
                   why: str) -> None:
    assert listener.accepted == 0, "a host was contacted"
    assert (done.returncode, done.stdout) == (3, ""), done.stderr
    assert done.stderr.startswith(f"gpudiag: history {history}") and done.stderr.count("\n") == 1, done.stderr
    assert why in done.stderr and done.stderr.endswith("; nothing was swept\n"), done.stderr


def test_a_corrupt_file(listener: CountingListener, tmp_path: Path) -> None:
    history = tmp_path / "h.sqlite"
    history.write_bytes(b"this is not a database\n" * 200)
    assert_refused(sweep(listener, history), listener, history, "file is not a database")


def test_a_file_another_process_holds_locked(listener: CountingListener, tmp_path: Path) -> None:
    history = recorded_history(tmp_path / "h.sqlite")
    with subprocess.Popen([sys.executable, "-c", "import sqlite3, sys, time\n"
                           "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                           "db.execute('BEGIN IMMEDIATE'); print('held', flush=True); time.sleep(60)",
                           str(history)], stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            done = sweep(listener, history, "--history-lock-wait", "0.5")
        finally:
            holder.kill()
    assert_refused(done, listener, history, "is locked by another gpudiag run (waited 0.5 s)")


def test_a_damaged_page(listener: CountingListener, tmp_path: Path) -> None:
    history = damage_a_page(recorded_history(tmp_path / "h.sqlite"))
    assert_refused(sweep(listener, history), listener, history, "the file is damaged (Page 5: ")


def test_a_missing_table(listener: CountingListener, tmp_path: Path) -> None:
    history = recorded_history(tmp_path / "h.sqlite")
    with sqlite3.connect(history) as db:
        db.execute("DROP TABLE findings")
    db.close()
    assert_refused(sweep(listener, history), listener, history, "table findings is missing")


def test_a_good_file_sweeps(listener: CountingListener, tmp_path: Path) -> None:
    """The check itself contacts nothing and refuses nothing: a new file and a recorded one both sweep."""
    for history in (tmp_path / "new" / "h.sqlite", recorded_history(tmp_path / "h.sqlite")):
        before = listener.accepted
        done = sweep(listener, history)
        assert done.returncode == 2 and "HOST_UNREACHABLE" in done.stdout, done.stderr  # the listener is no sshd
        assert listener.accepted > before
