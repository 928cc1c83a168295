"""The run history: one SQLite file (the standard library's ``sqlite3``; nothing to start) that records each
sweep: when, each host and its status, each GPU's combined readings (not raw samples), each finding with its
fingerprint (:mod:`gpudiag.audit.changes`), and what was sent about it.

* The schema is versioned (``PRAGMA user_version``) and brought up to date by :data:`MIGRATIONS`, in order,
  each inside the transaction that first writes; a file from a newer gpudiag is refused.
* WAL journal: readers (``gpudiag history``) never wait for a writer.
* One transaction per run (``BEGIN IMMEDIATE`` … ``COMMIT``): a run killed halfway leaves the file as it was.
  A second writer waits up to ``lock_wait_s`` for the lock, then :class:`HistoryLocked` (the CLI: one line,
  exit 3).
* A GPU's readings are stored as one JSON object written by walking the model's fields
  (:func:`gpudiag.model.json_codec.encode`): a new reading needs no migration.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpudiag.audit.changes import compare
from gpudiag.model import Action, GpuReading, Severity, SweepReport
from gpudiag.model.active import ActiveGpu
from gpudiag.model.changes import (
    NO_GPU,
    ChangeSet,
    ChangeState,
    FlapRule,
    OpenFinding,
    PastRun,
    epoch_of,
    gpu_keys,
)
from gpudiag.model.json_codec import encode, plain
from gpudiag.model.request import DEFAULT_LOCK_WAIT_S
from gpudiag.report.history_table import reading_of
from gpudiag.report.json_report import GPU_LEFT_OUT, power_document

HISTORY_SCHEMA = 4

# Migration N brings a file from version N-1 to N. Never edit one that shipped: add the next.
MIGRATIONS: tuple[str, ...] = (
    # 1: runs, hosts, GPUs (readings as JSON), findings by fingerprint
    """
    CREATE TABLE runs (id INTEGER PRIMARY KEY, started_at TEXT NOT NULL, started_at_s REAL NOT NULL,
                       duration_s REAL, exit_code INTEGER NOT NULL, recorded_at_s REAL NOT NULL);
    CREATE INDEX runs_started ON runs (started_at_s);
    CREATE TABLE hosts (run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE, host TEXT NOT NULL,
                        address TEXT, status TEXT NOT NULL, error TEXT, duration_s REAL,
                        PRIMARY KEY (run_id, host));
    CREATE TABLE gpus (run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE, host TEXT NOT NULL,
                       gpu_key TEXT NOT NULL, gpu_index INTEGER NOT NULL, uuid TEXT, readings TEXT NOT NULL,
                       PRIMARY KEY (run_id, host, gpu_key));
    CREATE TABLE findings (run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
                           fingerprint TEXT NOT NULL, host TEXT NOT NULL, gpu_key TEXT NOT NULL, gpu_index INTEGER,
                           code TEXT NOT NULL, severity TEXT NOT NULL, summary TEXT NOT NULL, since TEXT NOT NULL,
                           runs INTEGER NOT NULL, carried INTEGER NOT NULL, state TEXT NOT NULL,
                           PRIMARY KEY (run_id, fingerprint));
    CREATE INDEX findings_host ON findings (host, run_id);
    """,
    # 2: what was sent about each finding (for --renotify), and each run's failed notifications
    """
    CREATE TABLE notified (fingerprint TEXT PRIMARY KEY, last_sent_s REAL NOT NULL);
    ALTER TABLE runs ADD COLUMN notify_errors TEXT;
    """,
    # 3: how each run chose its hosts (its scope: the hosts table lists them; this says why those)
    """
    ALTER TABLE runs ADD COLUMN selection TEXT;
    """,
    # 4: what each finding needed on the action ladder (before repeats raised it), so that a GPU that needed
    # a reset three times this week can be told; NULL in rows recorded before (not known, never counted)
    """
    ALTER TABLE findings ADD COLUMN action TEXT;
    CREATE INDEX findings_gpu_action ON findings (host, gpu_key, action);
    """,
)


_CREATED = re.compile(r"CREATE TABLE (\w+)")  # the tables a migration adds


class HistoryError(Exception):
    """The history file cannot be used: the message is one line for the operator."""


class HistoryLocked(HistoryError):
    """Another run held the history's write lock for longer than the wait allowed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRun:
    """What :meth:`History.record` did: the run's id and what changed against the last run."""

    run_id: int
    changes: ChangeSet
    pruned_runs: int = 0


def readings_json(gpu: GpuReading, active: ActiveGpu | None = None) -> str:
    """A GPU's combined readings as one JSON object: every model field but the raw samples, and its power
    figure as the sweep document writes it (``power``: ``watts``, ``source``, ``pct_of_limit``, ``readings``); with
    ``active`` (``--active``), its result as ``active`` (``gpudiag history`` shows its figures per run)."""
    doc = encode(gpu, {GpuReading: (GPU_LEFT_OUT | {"samples"}, lambda g: {"power": power_document(g)})})
    if active is not None:
        doc["active"] = encode(active)
    return json.dumps(doc, allow_nan=False, separators=(",", ":"))


# Rows written before the power had one name (gpudiag.sweep/2's time) kept it in two flat keys.
_OLD_POWER_KEYS = {"power_watts": "watts", "power_pct_of_limit": "pct_of_limit"}


def stored_readings(text: str) -> dict[str, object]:
    """A stored readings object, old rows read as new ones: ``power_watts`` / ``power_pct_of_limit`` (rows
    recorded by gpudiag before schema gpudiag.sweep/3) become the ``power`` object's ``watts`` /
    ``pct_of_limit``."""
    doc: dict[str, object] = json.loads(text)
    if "power" not in doc and any(key in doc for key in _OLD_POWER_KEYS):
        old = {new: doc.pop(key, None) for key, new in _OLD_POWER_KEYS.items()}
        doc["power"] = None if old["watts"] is None else old
    return doc


class History:
    """One history file. Open with :meth:`open` (creates the file, in a folder that exists), use as a context
    manager."""

    def __init__(self, db: sqlite3.Connection, path: Path, lock_wait_s: float = DEFAULT_LOCK_WAIT_S) -> None:
        self._db = db
        self.path = path
        self._lock_wait_s = lock_wait_s

    @classmethod
    def open(cls, path: Path, *, lock_wait_s: float = DEFAULT_LOCK_WAIT_S) -> History:
        path = path.expanduser()
        try:
            if not path.parent.is_dir():  # never created: a mistyped path would start a new history
                raise HistoryError(f"history {path}: folder {path.parent} does not exist")
            db = sqlite3.connect(path, timeout=lock_wait_s, isolation_level=None)
            db.execute("PRAGMA foreign_keys = ON")
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        except sqlite3.OperationalError as exc:
            raise _translate(exc, path, lock_wait_s) from exc
        except (OSError, sqlite3.DatabaseError) as exc:
            raise HistoryError(f"history {path}: {exc}") from exc
        if mode != "wal":
            db.close()
            raise HistoryError(f"history {path}: cannot use WAL mode (journal_mode is {mode})")
        return cls(db, path, lock_wait_s)

    @classmethod
    def open_to_read(cls, path: Path) -> History:
        """Open an existing history only to read it (``gpudiag history``): one the user may read but not write
        (a root-owned file, a read-only folder) reads as well. SQLite's read-only mode still wants the WAL's
        shared-memory file; where the folder cannot hold one it is read as immutable (no writer is running
        where nobody can write)."""
        import urllib.parse

        path = path.expanduser()
        quoted = urllib.parse.quote(str(path.absolute()))
        last: sqlite3.Error | None = None
        for flags in ("mode=ro", "mode=ro&immutable=1"):
            db = None
            try:
                db = sqlite3.connect(f"file:{quoted}?{flags}", uri=True, isolation_level=None)
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except sqlite3.Error as exc:
                last = exc
                if db is not None:
                    db.close()
                continue
            return cls(db, path)
        raise HistoryError(f"history {path}: {last}")

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    @property
    def connection(self) -> sqlite3.Connection:
        """The SQLite connection (tests trace its statements)."""
        return self._db

    # ------------------------------------------------------------------------------------ schema

    def version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        """Inside the write transaction: bring the schema up to :data:`HISTORY_SCHEMA`."""
        version = self.version()
        if version > HISTORY_SCHEMA:
            raise HistoryError(f"history {self.path}: schema version {version} is newer than this gpudiag "
                               f"reads ({HISTORY_SCHEMA}); upgrade gpudiag")
        for number in range(version + 1, HISTORY_SCHEMA + 1):
            for statement in MIGRATIONS[number - 1].split(";"):
                if statement.strip():
                    self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version = {number}")

    def _begin(self) -> None:
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise _translate(exc, self.path, self._lock_wait_s) from exc

    def _write(self, work: Any) -> Any:
        """Run ``work()`` in one write transaction: all of it is kept, or none. A damaged file (a bad page, a
        table missing) is a :class:`HistoryError` naming it."""
        self._begin()
        try:
            self._migrate()
            result = work()
            self._db.execute("COMMIT")
            return result
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):  # a damaged file may refuse the rollback too
                self._db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError):
                raise _translate(exc, self.path, self._lock_wait_s) from exc
            if isinstance(exc, sqlite3.DatabaseError):
                raise HistoryError(f"history {self.path}: {exc}") from exc
            raise

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """A read of a damaged file (a bad page, a table missing): a :class:`HistoryError` naming it."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            raise _translate(exc, self.path, self._lock_wait_s) from exc
        except sqlite3.DatabaseError as exc:
            raise HistoryError(f"history {self.path}: {exc}") from exc

    @classmethod
    def check(cls, path: Path, *, lock_wait_s: float = DEFAULT_LOCK_WAIT_S) -> None:
        """Before a sweep: the file opens (or is created), is a history this gpudiag reads, holds the tables its
        version says, its pages read back (SQLite's ``quick_check``), and its write lock can be had within
        ``lock_wait_s``; else :class:`HistoryError` (:class:`HistoryLocked`) naming the file."""
        with cls.open(path, lock_wait_s=lock_wait_s) as history:
            db = history._db
            try:
                version = history.version()
                if version > HISTORY_SCHEMA:
                    raise HistoryError(f"history {history.path}: schema version {version} is newer than this "
                                       f"gpudiag reads ({HISTORY_SCHEMA}); upgrade gpudiag")
                problem = db.execute("PRAGMA quick_check(1)").fetchone()[0]
                if problem != "ok":  # e.g. "*** in database main ***\nPage 5: btreeInitPage() returns error code 11"
                    said = "; ".join(line for line in str(problem).splitlines() if not line.startswith("***"))
                    raise HistoryError(f"history {history.path}: the file is damaged ({said})")
                tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                missing = [t for migration in MIGRATIONS[:version] for t in _CREATED.findall(migration)
                           if t not in tables]
                if missing:
                    raise HistoryError(f"history {history.path}: table {missing[0]} is missing "
                                       f"(schema version {version})")
                history._begin()
                db.execute("ROLLBACK")
            except sqlite3.OperationalError as exc:
                raise _translate(exc, history.path, lock_wait_s) from exc
            except sqlite3.DatabaseError as exc:
                raise HistoryError(f"history {history.path}: {exc}") from exc

    # ------------------------------------------------------------------------------------ writing

    def record(self, report: SweepReport, *, flap: FlapRule = FlapRule(), keep_days: float | None = None,
               now_s: float | None = None, selection: tuple[str, ...] = ()) -> RecordedRun:
        """Compare ``report`` with the last runs, record it, prune runs older than ``keep_days``: one
        transaction. Raises :class:`HistoryLocked` when another run holds the lock past the wait.
        ``selection``: the options that chose the run's hosts (``--shard 1/4``), kept with the run; the hosts
        it swept are its scope."""
        now = dt.datetime.now(dt.timezone.utc).timestamp() if now_s is None else now_s

        def work() -> RecordedRun:
            changes = compare(report, self._past(flap.window, [h.host for h in report.hosts]), flap)
            run_id = self._insert(report, changes, now, selection)
            pruned = 0
            if keep_days is not None:
                pruned = self._db.execute("DELETE FROM runs WHERE started_at_s < ? AND id != ?",
                                          (now - keep_days * 86400.0, run_id)).rowcount
            return RecordedRun(run_id=run_id, changes=changes, pruned_runs=pruned)

        result: RecordedRun = self._write(work)
        return result

    def _insert(self, report: SweepReport, changes: ChangeSet, now: float, selection: tuple[str, ...]) -> int:
        db = self._db
        cursor = db.execute("INSERT INTO runs (started_at, started_at_s, duration_s, exit_code, recorded_at_s, "
                            "selection) VALUES (?, ?, ?, ?, ?, ?)",
                            (report.started_at, epoch_of(report.started_at), plain(report.duration_s),
                             report.exit_code, now, " ".join(selection) or None))
        run_id = int(cursor.lastrowid or 0)
        keys = gpu_keys(report)
        db.executemany("INSERT INTO hosts VALUES (?, ?, ?, ?, ?, ?)",
                       [(run_id, h.host, h.address, h.status.value, h.error, plain(h.duration_s))
                        for h in report.hosts])
        db.executemany("INSERT INTO gpus VALUES (?, ?, ?, ?, ?, ?)",
                       [(run_id, h.host, keys[(h.host, g.index)], g.index, g.uuid,
                         readings_json(g, h.readings.active.of(g.index) if h.readings and h.readings.active else None))
                        for h in report.hosts for g in h.gpus])
        state = {c.finding.fingerprint: c.state.value for c in changes.findings}
        db.executemany("INSERT INTO findings (run_id, fingerprint, host, gpu_key, gpu_index, code, severity, summary, "
                       "since, runs, carried, state, action) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       [(run_id, f.fingerprint, f.host, f.gpu_key, f.gpu, f.code, f.severity.label, f.summary,
                         f.since, f.runs, int(f.carried), state[f.fingerprint], (f.needed or f.action).label)
                        for f in changes.open_findings])
        return run_id

    def mark_notified(self, run_id: int, *, sent: Iterable[str], cleared: Iterable[str], errors: Iterable[str],
                      now_s: float) -> None:
        """After notifying: when each of ``sent`` was last sent, forget ``cleared`` (resolved), and keep the
        failed notifications in the run's record. One short transaction."""
        def work() -> None:
            self._db.executemany("INSERT INTO notified VALUES (?, ?) ON CONFLICT (fingerprint) DO UPDATE SET "
                                 "last_sent_s = excluded.last_sent_s", [(fp, now_s) for fp in sent])
            self._db.executemany("DELETE FROM notified WHERE fingerprint = ?", [(fp,) for fp in cleared])
            failed = list(errors)
            if failed:
                self._db.execute("UPDATE runs SET notify_errors = ? WHERE id = ?", (json.dumps(failed), run_id))

        self._write(work)

    # ------------------------------------------------------------------------------------ reading

    def _past(self, count: int, scope: Iterable[str] = ()) -> tuple[PastRun, ...]:
        """The last ``count`` runs and, for each host of ``scope``, the last run that swept it (a run records
        the hosts it swept: its scope), oldest first."""
        ids = {int(r[0]) for r in self._db.execute("SELECT id FROM runs ORDER BY id DESC LIMIT ?",
                                                    (max(count, 1),))}
        hosts = sorted(set(scope))
        for start in range(0, len(hosts), 500):  # SQLite's limit on bound parameters
            chunk = hosts[start:start + 500]
            ids.update(int(r[0]) for r in self._db.execute(
                f"SELECT max(run_id) FROM hosts WHERE host IN ({','.join('?' * len(chunk))}) GROUP BY host",
                chunk))
        rows = self._db.execute(f"SELECT id, started_at FROM runs WHERE id IN ({','.join('?' * len(ids))}) "
                                "ORDER BY id", sorted(ids)).fetchall() if ids else []
        return tuple(self._run(int(run_id), started_at) for run_id, started_at in rows)

    def _run(self, run_id: int, started_at: str) -> PastRun:
        status = dict(self._db.execute("SELECT host, status FROM hosts WHERE run_id = ?", (run_id,)).fetchall())
        action = "action" if self.version() >= 4 else "NULL"
        findings = tuple(
            OpenFinding(fingerprint=str(fp), code=str(code), severity=_severity(sev), host=str(host), gpu=gpu,
                        gpu_key=str(gpu_key), summary=str(summary), since=str(since), runs=_count(runs),
                        carried=bool(carried), action=_action(needed) if needed else Action.NONE)
            for fp, code, sev, host, gpu, gpu_key, summary, since, runs, carried, needed in self._db.execute(
                "SELECT fingerprint, code, severity, host, gpu_index, gpu_key, summary, since, runs, carried, "
                f"{action} FROM findings WHERE run_id = ? ORDER BY fingerprint", (run_id,)))
        return PastRun(run_id=run_id, started_at=started_at, host_status=status, findings=findings)

    def times_needed(self, report: SweepReport, *, since_s: float) -> dict[tuple[str, str, Action], frozenset[str]]:
        """(host, GPU key, action) -> each time that GPU needed that action (a streak, known by when it began)
        in the runs that started at or after ``since_s``, and in this run ``report`` (a finding still open
        from the last run goes on with its streak: the same time). Only GPU findings; only what the history
        knows (rows from before schema 4 did not record an action). Reads only."""
        times: dict[tuple[str, str, Action], set[str]] = {}
        if self.version() < 1:
            return {}
        hosts = sorted({h.host for h in report.hosts})
        if self.version() >= 4:
            for start in range(0, len(hosts), 500):  # SQLite's limit on bound parameters
                chunk = hosts[start:start + 500]
                for host, gpu_key, action, since in self._db.execute(
                        "SELECT DISTINCT f.host, f.gpu_key, f.action, f.since FROM findings f JOIN runs r "
                        "ON r.id = f.run_id WHERE r.started_at_s >= ? AND f.action IS NOT NULL AND f.gpu_key != ? "
                        f"AND f.host IN ({','.join('?' * len(chunk))})", (since_s, NO_GPU, *chunk)):
                    times.setdefault((host, gpu_key, _action(action)), set()).add(str(since))
        for f in compare(report, self._past(1, hosts)).open_findings:
            if f.gpu_key != NO_GPU and not f.carried:
                times.setdefault((f.host, f.gpu_key, f.needed or f.action), set()).add(f.since)
        return {key: frozenset(value) for key, value in times.items()}

    def trend(self, host: str, gpu_key: str, reading: str, limit: int = 30) -> tuple[float | None, ...]:
        """One reading of one GPU (a field, or ``power.pct_of_limit``: :func:`reading_of`) over its last
        ``limit`` recorded runs, oldest first (None: not reported)."""
        with self._reading():
            if self.version() < 1:
                return ()
            rows = self._db.execute("SELECT readings FROM gpus WHERE host = ? AND gpu_key = ? ORDER BY run_id "
                                    "DESC LIMIT ?", (host, gpu_key, limit)).fetchall()
        values = (reading_of(stored_readings(r[0]), reading) for r in reversed(rows))
        return tuple(float(v) if isinstance(v, (int, float)) else None for v in values)

    def last_sent(self) -> dict[str, float]:
        """fingerprint → when it was last notified (seconds since the epoch)."""
        with self._reading():
            if self.version() < 2:
                return {}
            return dict(self._db.execute("SELECT fingerprint, last_sent_s FROM notified").fetchall())

    def run_count(self) -> int:
        if self.version() < 1:
            return 0
        return int(self._db.execute("SELECT count(*) FROM runs").fetchone()[0])

    def runs(self, limit: int = 20) -> list[dict[str, object]]:
        """The last ``limit`` runs, newest first: id, started_at, exit_code, hosts, open findings, errors, and
        ``selection`` (the options that chose its hosts; None: all, or a file from before schema 3)."""
        version = self.version()
        if version < 2:
            return []
        selection = "r.selection" if version >= 3 else "NULL"
        rows = self._db.execute(
            "SELECT r.id, r.started_at, r.duration_s, r.exit_code, r.notify_errors, "
            "(SELECT count(*) FROM hosts h WHERE h.run_id = r.id), "
            f"(SELECT count(*) FROM findings f WHERE f.run_id = r.id), {selection} FROM runs r "
            "ORDER BY r.id DESC LIMIT ?", (limit,)).fetchall()
        return [{"run": r[0], "started_at": r[1], "duration_s": r[2], "exit_code": r[3],
                 "notify_errors": json.loads(r[4]) if r[4] else [], "hosts": r[5], "open_findings": r[6],
                 "selection": r[7]} for r in rows]

    def gpu_rows(self, host: str, gpu: str | None = None, limit: int = 20) -> list[dict[str, object]]:
        """One host's (or one of its GPU's: an index, or a UUID) recorded readings and open findings, per run,
        newest first."""
        if self.version() < 2:
            return []
        query = ("SELECT r.id, r.started_at, h.status, g.gpu_key, g.gpu_index, g.readings FROM runs r "
                 "JOIN hosts h ON h.run_id = r.id LEFT JOIN gpus g ON g.run_id = r.id AND g.host = h.host "
                 "WHERE h.host = ?")
        args: list[object] = [host]
        if gpu is not None:
            query += " AND (CAST(g.gpu_index AS TEXT) = ? OR g.uuid = ? OR g.gpu_key = ?)"
            args += [gpu, gpu, gpu]
        query += " ORDER BY r.id DESC, g.gpu_index LIMIT ?"
        args.append(limit)
        out = []
        for run_id, started_at, status, gpu_key, index, readings in self._db.execute(query, args).fetchall():
            findings = [{"code": c, "severity": s, "state": st, "since": since, "runs": n}
                        for c, s, st, since, n in self._db.execute(
                            "SELECT code, severity, state, since, runs FROM findings WHERE run_id = ? AND host = ? "
                            "AND (gpu_key = ? OR gpu_key = '-') ORDER BY code", (run_id, host, gpu_key or "-"))]
            out.append({"run": run_id, "started_at": started_at, "status": status, "gpu_key": gpu_key,
                        "gpu": index, "readings": stored_readings(readings) if readings else None,
                        "findings": findings})
        return out


# Rows a newer gpudiag wrote may hold words this version does not know (a rung added to the ladder, a new
# severity): they read as the nearest word it knows, so that the run after the sweep never loses its report.


def _action(word: object) -> Action:
    """An action word of a row; one this version does not know reads as WATCH (look at it: a newer gpudiag
    asked for something), never as a reset or a drain on a word not understood."""
    try:
        return Action.from_label(str(word))
    except ValueError:
        return Action.WATCH


def _severity(word: object) -> Severity:
    """A severity word of a row; one this version does not know reads as UNKNOWN (never hidden as ok)."""
    try:
        return Severity.from_label(str(word))
    except ValueError:
        return Severity.UNKNOWN


def _count(value: object) -> int:
    """A run count of a row; anything but a whole number of at least 1 reads as 1 (this run's)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1


def _translate(exc: sqlite3.OperationalError, path: Path, wait_s: float) -> HistoryError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return HistoryLocked(f"history {path} is locked by another gpudiag run (waited {wait_s:g} s); "
                             "this run was not recorded")
    return HistoryError(f"history {path}: {text}")


__all__ = ["HISTORY_SCHEMA", "MIGRATIONS", "ChangeState", "History", "HistoryError", "HistoryLocked",
           "RecordedRun", "readings_json", "stored_readings"]
