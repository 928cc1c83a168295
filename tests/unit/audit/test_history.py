"""The run history (SQLite) and what changed between runs: new, ongoing, resolved, carried, flapping; the
schema's migrations, the bounded lock wait, retention, and a writer killed with SIGKILL mid-transaction."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from builders import finding, gpu, host_report
from history_runs import T0, at, faulty, healthy

from gpudiag.audit.history import HISTORY_SCHEMA, MIGRATIONS, History, HistoryError, HistoryLocked
from gpudiag.model import HostStatus
from gpudiag.model.changes import ChangeState, FlapRule, fingerprints, gpu_keys


def states(changes: object) -> list[tuple[str, str]]:
    return [(c.state.value, c.finding.code) for c in changes.findings]  # type: ignore[attr-defined]


def test_fingerprints_use_uuids_unless_masked_or_repeated() -> None:
    report = at(0, host_report("a", gpus=[gpu(index=0), gpu(index=1), gpu(index=2, uuid="[N/A]")]),
                host_report("b", gpus=[gpu(index=1)]))  # the same UUID as a's GPU 1: a cloned VM
    keys = gpu_keys(report)
    assert keys == {("a", 0): "index:0",  # GPU-00000000-...-000000000000: masked
                    ("a", 1): "index:1", ("b", 1): "index:1", ("a", 2): "index:2"}
    report = at(0, host_report("a", gpus=[gpu(index=3, uuid="GPU-5f1b2c3d")],
                               findings=[finding(host="a", gpu=3), finding(host="a", gpu=None, code="XID",
                                                                           evidence={"xid": 79, "pci": "2b"})]))
    assert [fp for fp, _, _ in fingerprints(report.hosts[0], gpu_keys(report))] == [
        "a|uuid:GPU-5f1b2c3d|BUSY_LOW_POWER", "a|-|XID|xid:79/2b"]


def test_fingerprints_name_no_path_that_changes_between_runs() -> None:
    """An Xid is known by its GPU and code, not the log it was read from; a configured log by the path as
    configured; a log found through a process by its server and file name, not its folder or the pid."""
    def fps(*findings: object, gpu_uuid: str = "GPU-5f1b2c3d") -> list[str]:
        report = at(0, host_report("a", gpus=[gpu(index=4, uuid=gpu_uuid)], findings=list(findings)))
        return [fp for fp, _, _ in fingerprints(report.hosts[0], gpu_keys(report))]

    for folder in ("/tmp/gpudiag-demo-abc123", "/tmp/gpudiag-demo-zz9"):
        assert fps(finding(host="a", gpu=4, code="XID", evidence={"xid": 63, "pci": "0000:9d:00",
                                                                   "log": f"{folder}/kern.log"}),
                   finding(host="a", gpu=None, code="LOG_SIGNATURE",
                           evidence={"log": f"{folder}/sglang.log", "found_server": "SGLang", "signature": "oom"}),
                   finding(host="a", gpu=None, code="LOG_SIGNATURE",
                           evidence={"log": "/proc/4312/fd/1", "found_server": "vLLM", "signature": "oom"}),
                   finding(host="a", gpu=None, code="LOG_SIGNATURE",
                           evidence={"log": "~/serve.log", "signature": "oom"})) == [
            "a|uuid:GPU-5f1b2c3d|XID|xid:63", "a|-|LOG_SIGNATURE|SGLang:sglang.log/oom",
            "a|-|LOG_SIGNATURE|vLLM:1/oom", "a|-|LOG_SIGNATURE|~/serve.log/oom"]
    pid_changed = finding(host="a", gpu=None, code="LOG_SIGNATURE",
                          evidence={"log": "/proc/9999/fd/1", "found_server": "vLLM", "signature": "oom"})
    assert fps(pid_changed) == ["a|-|LOG_SIGNATURE|vLLM:1/oom"]


def test_new_ongoing_resolved_across_runs(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.sqlite") as history:
        first = history.record(healthy(0), now_s=T0)
        assert first.changes.findings == () and first.changes.previous_started_at is None
        assert history.record(healthy(5), now_s=T0).changes.findings == ()
        new = history.record(faulty(10), now_s=T0).changes
        assert states(new) == [("new", "BUSY_LOW_POWER")] and new.announced == new.findings
        ongoing = history.record(faulty(15), now_s=T0).changes
        (change,) = ongoing.findings
        assert (change.state, change.finding.since, change.finding.runs) == (
            ChangeState.ONGOING, "2025-06-01T12:10:00Z", 2)
        assert ongoing.announced == ()
        resolved = history.record(healthy(20), now_s=T0).changes
        assert states(resolved) == [("resolved", "BUSY_LOW_POWER")]
        fingerprint = "gpu01|uuid:GPU-00000000-0000-0000-0000-000000000001|BUSY_LOW_POWER"
        assert resolved.findings[0].finding.fingerprint == fingerprint
        assert history.run_count() == 5
    db = sqlite3.connect(tmp_path / "h.sqlite")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    readings = json.loads(db.execute("SELECT readings FROM gpus WHERE gpu_index = 1 LIMIT 1").fetchone()[0])
    assert "power_w" not in readings and "samples" not in readings  # the raw power is in the power object
    assert readings["power"] == {"watts": 650.0, "source": "power_draw", "pct_of_limit": 92.9, "readings": {
        "energy_counter": None, "power_draw": 650.0, "power_draw_instant": None}}
    assert readings["enforced_power_limit_w"] == 700.0 and readings["sm"] == "SM90"


def test_a_silent_host_keeps_its_findings_and_comes_back(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.sqlite") as history:
        history.record(faulty(0), now_s=T0)
        down = at(5, host_report("gpu01", status=HostStatus.UNREACHABLE,
                                 findings=[finding(host="gpu01", gpu=None, code="HOST_UNREACHABLE")]))
        changes = history.record(down, now_s=T0).changes
        assert states(changes) == [("new", "HOST_UNREACHABLE"), ("ongoing", "BUSY_LOW_POWER")]
        assert changes.findings[1].finding.carried and changes.hosts[0].came_back is False
        back = history.record(healthy(10), now_s=T0).changes
        assert sorted(states(back)) == [("resolved", "BUSY_LOW_POWER"), ("resolved", "HOST_UNREACHABLE")]
        assert [(h.host, h.came_back, h.previous_status) for h in back.hosts] == [("gpu01", True, "unreachable")]


def test_flapping_is_named_once_instead_of_alerting_each_time(tmp_path: Path) -> None:
    rule = FlapRule(changes=3, window=10)
    with History.open(tmp_path / "h.sqlite") as history:
        said = []
        for minute in range(8):
            report = faulty(minute) if minute % 2 else healthy(minute)
            changes = history.record(report, flap=rule, now_s=T0).changes
            said.append([(c.state.value, c.flapping, c.became_flapping) for c in changes.announced])
    assert said[:3] == [[], [("new", False, False)], [("resolved", False, False)]]
    assert said[3] == [("new", True, True)]  # the third change: flapping from now on, said once
    assert said[4:] == [[], [], [], []]


def test_retention_prunes_old_runs(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.sqlite") as history:
        history.record(faulty(0), now_s=T0)
        history.record(faulty(1), now_s=T0)
        recorded = history.record(faulty(2), keep_days=1, now_s=T0 + 86400 + 90)
        assert recorded.pruned_runs == 2 and history.run_count() == 1
        db = history.connection
        assert db.execute("SELECT count(*) FROM findings").fetchone()[0] == 1  # cascaded
        assert db.execute("SELECT count(*) FROM gpus").fetchone()[0] == 2


def test_a_version_1_file_is_migrated_and_a_newer_one_refused(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite"
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0] + "; PRAGMA user_version = 1;")
    db.close()
    with History.open(path) as history:
        history.record(healthy(0), now_s=T0)
        assert history.version() == HISTORY_SCHEMA and history.last_sent() == {}
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {HISTORY_SCHEMA + 1}")
    db.commit()
    db.close()
    with History.open(path) as history, pytest.raises(HistoryError, match="newer than this gpudiag reads"):
        history.record(healthy(1), now_s=T0)


def test_a_second_writer_waits_a_bounded_time_then_gives_up(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    with History.open(path) as history:
        history.record(healthy(0), now_s=T0)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with History.open(path, lock_wait_s=0.3) as history, pytest.raises(HistoryLocked) as info:
            history.record(healthy(1), now_s=T0)
        assert str(info.value) == (f"history {path} is locked by another gpudiag run (waited 0.3 s); "
                                   "this run was not recorded")
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_rows_recorded_before_the_power_object_read_as_new_ones(tmp_path: Path) -> None:
    """A history written by gpudiag before gpudiag.sweep/3 kept the power in power_watts and
    power_pct_of_limit: its trends and rows read as today's power object."""
    path = tmp_path / "h.sqlite"
    with History.open(path) as history:
        for minute in (0, 5):
            history.record(faulty(minute), now_s=T0)
    db = sqlite3.connect(path)
    (run_id, readings), *_ = db.execute("SELECT run_id, readings FROM gpus WHERE gpu_index = 1 ORDER BY run_id")
    old = json.loads(readings)
    power = old.pop("power")
    old.update(power_watts=power["watts"], power_pct_of_limit=power["pct_of_limit"])  # as it was written then
    db.execute("UPDATE gpus SET readings = ? WHERE run_id = ? AND gpu_index = 1", (json.dumps(old), run_id))
    db.commit()
    db.close()
    with History.open(path) as history:
        key = gpu_keys(faulty(0))[("gpu01", 1)]
        assert history.trend("gpu01", key, "power.pct_of_limit") == (power["pct_of_limit"],) * 2
        assert history.trend("gpu01", key, "power.watts") == (power["watts"],) * 2
        (oldest,) = [r for r in history.gpu_rows("gpu01", "1") if r["run"] == run_id]
        assert oldest["readings"]["power"] == {"watts": power["watts"], "pct_of_limit": power["pct_of_limit"]}
        assert "power_watts" not in oldest["readings"]


def two_hosts(minute: int, *hosts: str, fault_on: tuple[str, ...] = ("gpu01", "gpu02")) -> object:
    return at(minute, *(host_report(h, gpus=[gpu(index=0, uuid=f"GPU-{h}-0")],
                                    findings=[finding(host=h, gpu=0)] if h in fault_on else [])
                        for h in hosts))


def test_a_run_that_did_not_select_a_host_leaves_its_findings_untouched(tmp_path: Path) -> None:
    """--exclude / --limit / --shard: the host not swept is neither resolved nor carried; when a later run
    sweeps it again its streak goes on (since, runs) and nothing is new."""
    with History.open(tmp_path / "h.sqlite") as history:
        first = history.record(two_hosts(0, "gpu01", "gpu02"), now_s=T0).changes  # type: ignore[arg-type]
        assert states(first) == [("new", "BUSY_LOW_POWER")] * 2
        partial = history.record(two_hosts(5, "gpu01"), now_s=T0).changes  # type: ignore[arg-type]
        assert states(partial) == [("ongoing", "BUSY_LOW_POWER")] and partial.announced == ()
        assert [c.finding.host for c in partial.findings] == ["gpu01"] and partial.hosts == ()
        other = history.record(two_hosts(10, "gpu02", fault_on=()), now_s=T0).changes  # type: ignore[arg-type]
        assert [(c.state.value, c.finding.host, c.finding.runs) for c in other.findings] == [
            ("resolved", "gpu02", 1)]  # compared with run 1, the last that swept gpu02
        full = history.record(two_hosts(15, "gpu01", "gpu02", fault_on=("gpu01",)),  # type: ignore[arg-type]
                              now_s=T0).changes
        assert [(c.state.value, c.finding.host, c.finding.since, c.finding.runs) for c in full.findings] == [
            ("ongoing", "gpu01", "2025-06-01T12:00:00Z", 3)]
        assert full.announced == () and full.previous_started_at == "2025-06-01T12:10:00Z"


def test_shards_in_turn_never_flap_nor_resolve_each_other(tmp_path: Path) -> None:
    """Two shards of one job array, alternating on one history: each host is compared only with the runs that
    swept it, so nothing flaps or resolves; the runs of the other shard do not count in the flap window."""
    with History.open(tmp_path / "h.sqlite") as history:
        for minute in range(0, 60, 5):
            host = "gpu01" if minute % 10 == 0 else "gpu02"
            changes = history.record(two_hosts(minute, host), flap=FlapRule(changes=2, window=10),  # type: ignore[arg-type]
                                     now_s=T0).changes
            expected = "new" if minute < 10 else "ongoing"
            assert [(c.state.value, c.flapping) for c in changes.findings] == [(expected, False)], minute


def test_a_version_2_file_reads_before_and_after_the_scope_migration(tmp_path: Path) -> None:
    """Schema 3 adds each run's selection: a version 2 file still lists its runs in `gpudiag history` before
    any write, a run migrates it in place (the old runs kept), and the file the current code wrote opens again."""
    path = tmp_path / "v2.sqlite"
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0] + "; " + MIGRATIONS[1] + "; PRAGMA user_version = 2;"
                     "INSERT INTO runs (id, started_at, started_at_s, exit_code, recorded_at_s) "
                     f"VALUES (1, '2025-06-01T11:55:00Z', {T0 - 300}, 0, {T0 - 300});"
                     "INSERT INTO hosts VALUES (1, 'gpu01', NULL, 'ok', NULL, 1.0);")
    db.close()
    with History.open(path) as history:
        assert [(r["run"], r["hosts"], r["selection"]) for r in history.runs()] == [(1, 1, None)]
        assert history.version() == 2
        history.record(healthy(0), now_s=T0, selection=("--exclude", "gpu02", "--shard", "1/4"))
        assert history.version() == HISTORY_SCHEMA == 4
    with History.open(path) as history:
        assert [(r["run"], r["selection"]) for r in history.runs()] == [
            (2, "--exclude gpu02 --shard 1/4"), (1, None)]
        assert history.record(healthy(5), now_s=T0).changes.findings == ()
        assert history.runs()[0]["selection"] is None
