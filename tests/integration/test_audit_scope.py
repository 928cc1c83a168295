"""The scheduled audit on the demo cluster, as cron runs it (``gpudiag sweep --demo`` in a process of its own):
two runs with the same state print nothing the second time and post nothing to a real webhook on loopback
(the fingerprints name no path that changes between runs: the demo's logs are in a new temporary folder each
run); a run that swept only some hosts (``--exclude``, ``--limit``, ``--shard``) changes nothing for the others;
four ``--shard i/4`` runs at once on one history file record four runs, and a full run after them reports no
change."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_run import run_cli
from webhook import Webhook, running_webhook

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
EXCLUDED = ("sglang-glm5", "spare-h200-03")


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    with running_webhook() as hook:
        yield hook


FAST = ("--samples", "1", "--interval", "0")  # the history's scope is the point, not the sampling window


def sweep(history: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # In this process: the process is not the point (the four shards at once, below, are processes).
    return run_cli("sweep", "--demo", "--history", str(history), "--only-changes", *FAST, *args, cwd=REPO)


def open_findings(history: Path) -> dict[str, set[str]]:
    """host → the fingerprints open after the last run that swept it."""
    with sqlite3.connect(history) as db:
        last = dict(db.execute("SELECT host, max(run_id) FROM hosts GROUP BY host").fetchall())
        return {host: {fp for (fp,) in db.execute("SELECT fingerprint FROM findings WHERE run_id = ? AND host = ?",
                                                  (run, host))} for host, run in last.items()}


def streaks(history: Path) -> dict[str, tuple[str, int]]:
    """fingerprint → (since, runs) in the last run that recorded it."""
    with sqlite3.connect(history) as db:
        return {fp: (since, runs) for fp, since, runs in db.execute(
            "SELECT fingerprint, since, runs FROM findings ORDER BY run_id")}


def test_two_demo_runs_with_the_same_state_print_and_post_nothing_the_second_time(tmp_path: Path,
                                                                                  webhook: Webhook) -> None:
    history = tmp_path / "h.sqlite"
    first = sweep(history, "--notify", webhook.url)
    assert first.returncode == 2, first.stderr
    assert first.stdout.startswith("gpudiag ") and " new, 0 resolved" in first.stdout
    assert len(webhook.bodies) == 1
    fingerprints = [f["fingerprint"] for f in webhook.bodies[0]["findings"]]
    assert "/tmp" not in " ".join(fingerprints) and "gpudiag-demo-" not in " ".join(fingerprints)
    assert any("|XID|xid:63" in fp for fp in fingerprints)  # the Xid by GPU and code
    second = sweep(history, "--notify", webhook.url)
    assert (second.returncode, second.stdout, second.stderr) == (2, "", "")
    assert len(webhook.bodies) == 1  # nothing posted the second time


def test_a_partial_run_changes_nothing_for_the_hosts_it_did_not_select(tmp_path: Path, webhook: Webhook) -> None:
    history = tmp_path / "h.sqlite"
    assert sweep(history, "--notify", webhook.url).returncode == 2
    assert len(webhook.bodies) == 1
    webhook.bodies.clear()
    before, streak = open_findings(history), streaks(history)
    excluded = sweep(history, "--exclude", EXCLUDED[0], "--exclude", EXCLUDED[1], "--notify", webhook.url)
    assert (excluded.stdout, excluded.stderr) == ("", "")
    assert webhook.bodies == []  # nothing resolved, nothing posted
    assert {h: before[h] for h in EXCLUDED} == {h: open_findings(history)[h] for h in EXCLUDED}
    limited = sweep(history, "--limit", "train-h200-[01,04-05]")
    assert limited.stdout == "", limited.stdout
    full = sweep(history, "--notify", webhook.url)
    assert (full.stdout, full.stderr) == ("", "")  # nothing new, nothing flapping
    assert webhook.bodies == []
    after = streaks(history)
    for host in EXCLUDED:  # the streak went on: one more run than before the partial runs, same start
        for fp in before[host]:
            assert after[fp] == (streak[fp][0], streak[fp][1] + 1), fp


def test_four_shards_at_once_record_four_runs_and_a_full_run_after_reports_no_change(tmp_path: Path) -> None:
    history = tmp_path / "h.sqlite"
    shards = [subprocess.Popen([sys.executable, "-m", "gpudiag", "sweep", "--demo", "--history", str(history),
                                "--history-lock-wait", "60", "--only-changes", "--format", "json",
                                "--shard", f"{i}/4", *FAST], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=REPO) for i in range(1, 5)]
    outs = [p.communicate(timeout=240) for p in shards]
    assert [err for _, err in outs] == [""] * 4
    with sqlite3.connect(history) as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (4,)
        assert sorted(s for (s,) in db.execute("SELECT selection FROM runs")) == [f"--shard {i}/4" for i in range(1, 5)]
        swept = [host for (host,) in db.execute("SELECT host FROM hosts")]
    assert len(swept) == len(set(swept)) == 6  # each shard recorded only its own hosts, none twice
    documents = [json.loads(out) for out, _ in outs if out]
    assert {c["change"] for d in documents for c in d["changes"]} == {"new"}  # first runs: nothing resolved
    assert not any(c["code"] == "DRIVER_DRIFT" for d in documents for c in d["changes"])  # no shard sees a group
    full = sweep(history, "--format", "json")
    # nothing else changes; the one thing new is what only the whole group can say: train-h200-04's older driver
    assert (full.returncode, full.stderr) == (2, ""), full.stderr
    assert [(c["change"], c["host"], c["code"]) for c in json.loads(full.stdout)["changes"]] == [
        ("new", "train-h200-04", "DRIVER_DRIFT")]
