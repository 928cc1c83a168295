"""The scheduled audit as cron runs it, on a loopback cluster of our own: run 1 records; run 2 (no change)
says nothing new; a GPU made faulty in the stub shows as new, made healthy again as resolved; the webhook
(a real HTTP server on loopback) receives exactly new + resolved; --notify-cmd gets the same JSON on stdin;
a second run that cannot get the history's lock fails with one line and exit 3."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_run import run_cli
from loopback import SshdCluster, SshdUnavailable, running_cluster
from webhook import Webhook, running_webhook

# Its tests share a module-scoped fixture: one worker runs them all, else each worker builds it again
# (with --dist loadgroup; the default, --dist loadfile, keeps a file on one worker).
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("test_audit")]
REPO = Path(__file__).resolve().parents[2]
NODES = {"127.0.0.2": "healthy", "127.0.0.3": "healthy"}


@pytest.fixture(scope="module")
def small_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SshdCluster, Path]]:
    """Two healthy nodes whose scenarios the test changes (the stub reads hosts.json at every call)."""
    work = tmp_path_factory.mktemp("audit_cluster")
    try:
        with running_cluster(work, extra_healthy=0, scenarios=NODES) as cluster:
            yield cluster, work / "node" / "bin" / "hosts.json"
    except SshdUnavailable as exc:
        pytest.skip(str(exc))


def play(hosts_json: Path, scenarios: dict[str, str]) -> None:
    mapping = json.loads(hosts_json.read_text())
    hosts_json.write_text(json.dumps({**mapping, **scenarios}))


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=REPO, input=stdin)  # in this process: the process is not the point


def inventory(cluster: SshdCluster, tmp_path: Path) -> Path:
    path = tmp_path / "inventory.yaml"
    path.write_text(f"{cluster.inventory_defaults()}hosts:\n  node-a: {{address: 127.0.0.2}}\n"
                    "  node-b: {address: 127.0.0.3}\n")
    return path


def test_run_record_change_resolve_and_notify(small_cluster, tmp_path: Path, webhook) -> None:  # type: ignore[no-untyped-def]
    cluster, hosts_json = small_cluster
    play(hosts_json, NODES)
    history = tmp_path / "state" / "history.sqlite"
    history.parent.mkdir()  # the folder must exist: gpudiag never creates it (issue 30)
    received_by_cmd = tmp_path / "cmd.jsonl"
    # argv, no shell: the quotes group the program text as one argument, as a shell would
    append = 'import sys; open(sys.argv[1], "a").write(sys.stdin.read().replace(chr(10), "") + chr(10))'
    notify_cmd = f"{sys.executable} -c '{append}' {received_by_cmd}"
    args = ("sweep", "-i", str(inventory(cluster, tmp_path)), "--samples", "1", "--interval", "0",
            "--history", str(history), "--notify", webhook.url, "--notify-cmd", notify_cmd)

    first = cli(*args, "--only-changes")
    assert first.returncode == 0 and first.stdout == "" and first.stderr == "", first.stderr
    plain = cli(*args[:7])
    again = cli(*args, "--only-changes")
    assert (again.returncode, again.stdout, again.stderr) == (plain.returncode, "", "")

    play(hosts_json, {"127.0.0.3": "case_study"})  # busy at low power: BUSY_LOW_POWER on its GPUs
    new = cli(*args, "--only-changes")
    assert new.returncode == 1, new.stderr
    lines = new.stdout.splitlines()
    assert lines[0].startswith("gpudiag ") and " new, 0 resolved since " in lines[0]
    heads = [line for line in lines[1:] if not line.startswith(" ")]  # the sentence is indented under each
    assert heads and all(line.startswith("NEW ") and "node-b GPU" in line and "BUSY_LOW_POWER" in line
                         and line.endswith("  action: watch") for line in heads)
    n_lines = len(heads)  # folded: the same code on several GPUs of a host is one change
    n_new = int(lines[0].split(": ", 1)[1].split(" new")[0])

    ongoing = cli(*args, "--format", "json")
    assert ongoing.returncode == 1
    doc = json.loads(ongoing.stdout)
    changes = [f["change"] for h in doc["hosts"] for f in h["findings"]]
    assert changes and all(c["state"] == "ongoing" and c["runs"] == 2 and not c["flapping"] for c in changes)
    assert doc["changes"]["findings"] == [] and doc["history"]["run"] == 4

    play(hosts_json, NODES)
    resolved = cli(*args, "--only-changes")
    assert resolved.returncode == 0
    resolved_heads = [line for line in resolved.stdout.splitlines()[1:] if not line.startswith(" ")]
    assert len(resolved_heads) == n_lines
    assert all(line.startswith("RESOLVED ") and line.endswith("  resolved") for line in resolved_heads)
    assert all("2 runs" in line for line in resolved.stdout.splitlines()[1:] if line.startswith("    open since"))

    states = [[f["state"] for f in body["findings"]] for body in webhook.bodies]
    assert states == [["new"] * n_new, ["resolved"] * n_new]  # exactly new + resolved; nothing for the rest
    assert all(body["schema"] == "gpudiag.audit.changes/1" for body in webhook.bodies)
    assert [json.loads(line) for line in received_by_cmd.read_text().splitlines()] == webhook.bodies

    shown = cli("history", str(history), "--host", "node-b", "--gpu", "0", "--format", "json")
    rows = json.loads(shown.stdout)
    assert [r["run"] for r in rows] == [5, 4, 3, 2, 1]  # the plain run was not recorded
    assert [bool(r["findings"]) for r in rows] == [False, True, True, False, False]
    assert rows[1]["readings"]["utilization_pct"] is not None and rows[1]["readings"]["power"]["pct_of_limit"] < 60
    table = cli("history", str(history))
    assert table.returncode == 0 and table.stdout.splitlines()[0].split()[:3] == ["run", "started", "exit"]


def test_workers_and_a_partial_run_change_nothing_over_real_ssh(small_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """--workers 2 sweeps the same hosts as one process: no change; --exclude node-b leaves node-b's findings
    untouched (not resolved); a full run after them reports no change and node-b's streak went on."""
    cluster, hosts_json = small_cluster
    history = tmp_path / "history.sqlite"
    args = ("sweep", "-i", str(inventory(cluster, tmp_path)), "--samples", "1", "--interval", "0",
            "--history", str(history), "--only-changes")
    play(hosts_json, {"127.0.0.3": "case_study"})
    try:
        first = cli(*args)
        assert first.returncode == 1 and "node-b GPU" in first.stdout, first.stderr
        for extra in (("--workers", "2"), ("--exclude", "node-b"), ()):
            done = cli(*args, *extra)
            assert (done.returncode, done.stdout, done.stderr) == (1 if "node-b" not in extra else 0, "", ""), extra
    finally:
        play(hosts_json, NODES)
    with sqlite3.connect(history) as db:
        runs = [r for (r,) in db.execute("SELECT DISTINCT runs FROM findings WHERE run_id = 4 AND host = 'node-b'")]
        swept = [n for (n,) in db.execute("SELECT count(*) FROM hosts GROUP BY run_id ORDER BY run_id")]
    assert runs == [3] and swept == [2, 2, 1, 2]  # runs 1, 2 and 4 swept node-b: its streak is 3 runs


def test_a_locked_history_fails_with_one_line_and_exit_3(small_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster, hosts_json = small_cluster
    play(hosts_json, NODES)
    history = tmp_path / "history.sqlite"
    args = ("sweep", "-i", str(inventory(cluster, tmp_path)), "--samples", "1", "--interval", "0",
            "--history", str(history), "--quiet")
    assert cli(*args).returncode == 0
    holder = sqlite3.connect(history, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another run, still writing
    try:
        locked = cli(*args, "--history-lock-wait", "0.5")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert locked.returncode == 3 and locked.stdout == ""
    assert locked.stderr == (f"gpudiag: history {history} is locked by another gpudiag run (waited 0.5 s); "
                             "this run was not recorded; nothing was swept\n")  # found before any connection


def test_output_file_with_quiet_keeps_stdout_silent(small_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cluster, hosts_json = small_cluster
    play(hosts_json, {"127.0.0.3": "case_study"})
    out = tmp_path / "report.json"
    done = cli("sweep", "-i", str(inventory(cluster, tmp_path)), "--samples", "1", "--interval", "0",
               "--format", "json", "--output", str(out), "--quiet")
    play(hosts_json, NODES)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "")
    assert json.loads(out.read_text())["summary"]["exit_code"] == 1
    bad = cli("sweep", "127.0.0.2", "--only-changes")
    assert (bad.returncode, bad.stderr) == (3, "gpudiag: --only-changes needs --history PATH (it works from the "
                                                "recorded runs)\n")


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    with running_webhook() as hook:
        yield hook


def test_the_third_reset_this_week_is_raised_by_the_sweep_command(small_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`gpudiag sweep --history` over real SSH: node-a's GPU 1 has uncorrected ECC errors (reset_gpu), is
    healthy after a reset, faulty again, healthy, and faulty a third time: that third run's finding and host
    say reboot_node and why; the history keeps what it needed."""
    cluster, hosts_json = small_cluster
    history = tmp_path / "history.sqlite"
    args = ("sweep", "-i", str(inventory(cluster, tmp_path)), "--limit", "node-a", "--samples", "1",
            "--interval", "0", "--history", str(history), "--format", "json")
    seen = []
    try:
        for scenario in ("ecc", "healthy", "ecc", "healthy", "ecc"):
            play(hosts_json, {"127.0.0.2": scenario})
            # A streak is known by the second its run started (the report's started_at): two loopback sweeps
            # take about a second, so without this two of the three streaks could share a second and count once.
            time.sleep(1.0 - time.time() % 1.0 + 0.01)
            run = cli(*args)
            assert run.returncode in (0, 2), run.stderr
            (host,) = json.loads(run.stdout)["hosts"]
            seen.append((host["action"], [(f["code"], f["action"]) for f in host["findings"]]))
    finally:
        play(hosts_json, NODES)
    assert seen == [("reset_gpu", [("ECC_UNCORRECTED", "reset_gpu")]), ("none", []),
                    ("reset_gpu", [("ECC_UNCORRECTED", "reset_gpu")]), ("none", []),
                    ("reboot_node", [("ECC_UNCORRECTED", "reboot_node")])]
    assert json.loads(run.stdout)["hosts"][0]["findings"][0]["summary"].endswith(
        "; needed a reset 3 times this week, so reboot_node")
    with sqlite3.connect(history) as db:
        assert {row[0] for row in db.execute("SELECT action FROM findings")} == {"reset_gpu"}
