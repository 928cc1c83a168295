"""``--workers N`` over the loopback sshd: the same hosts, statuses and findings as one process, in the
inventory's order and the same JSON shape; progress events cross from the workers; a signal still reports
what finished, the rest ``cancelled``, and ends the hung collector on the node.

The waits are bounded and generous; nothing here asserts a timing.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gpudiag.logs import LogOptions, build_plans
from gpudiag.model import Host, HostReport, HostStatus
from gpudiag.sweep.runner import SweepOptions
from gpudiag.sweep.workers import shards, sweep_in_workers
from gpudiag.transport.build import SshRequest
from loopback import process_ended

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
WAIT_S = 60.0
SCENARIOS = ("healthy", "case_study", "idle", "power_reduced", "ecc", "driver_error", "thermal", "pcie_degraded",
             "no_nvidia_smi", "one_lost")


def _inventory(sshd_cluster, path: Path, names: dict[str, str]) -> Path:  # type: ignore[no-untyped-def]
    path.write_text(sshd_cluster.inventory_defaults() + "hosts:\n"
                    + "".join(f"  {name}: {{address: {address}}}\n" for name, address in names.items()))
    return path


def _sweep(inventory: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    done = subprocess.run([sys.executable, "-m", "gpudiag", "sweep", "-i", str(inventory), "--samples", "1",
                           "--interval", "0", "--format", "json", *extra],
                          capture_output=True, text=True, cwd=REPO, timeout=180)
    return done.returncode, json.loads(done.stdout), done.stderr


def _shape(value: Any) -> Any:
    """The keys of every object (a list of objects by its first one): what a reader of the JSON relies on.
    Plain values are only values: a reading taken twice may differ (a clock reason seen in one run, not in the
    other; a null where the other run read a number)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value and isinstance(value[0], dict) else "list"
    return "value"


def _judged(doc: dict[str, Any]) -> list[tuple[str, str, list[tuple[str, str, Any]]]]:
    return [(h["host"], h["status"], [(f["code"], f["severity"], f.get("gpu")) for f in h["findings"]])
            for h in doc["hosts"]]


def test_workers_give_the_same_report_as_one_process(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    names = {s: sshd_cluster.address_of(s) for s in SCENARIOS}
    names.update({f"extra-{i:02d}": a for i, a in enumerate(sshd_cluster.extra_addresses[:10])})
    inventory = _inventory(sshd_cluster, tmp_path / "inventory.yaml", names)
    one_code, one, _ = _sweep(inventory)
    three_code, three, err = _sweep(inventory, "--workers", "3")
    assert len(shards([Host(name=n) for n in names], 3)) == 3  # every worker has hosts
    assert three_code == one_code == 2, err  # ecc, driver_error: critical
    assert [h["host"] for h in three["hosts"]] == list(names)  # the inventory's order
    assert _judged(three) == _judged(one)
    assert three["summary"] == one["summary"]
    for mine, theirs in zip(three["hosts"], one["hosts"], strict=True):
        assert _shape(mine) == _shape(theirs)
    assert _shape({k: v for k, v in three.items() if k != "hosts"}) == _shape(
        {k: v for k, v in one.items() if k != "hosts"})


class Recorder:
    """A SweepObserver that keeps what it was told."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.finished: list[HostReport] = []

    def host_started(self, host: Host) -> None:
        self.started.append(host.name)

    def host_finished(self, report: HostReport) -> None:
        self.finished.append(report)


def test_progress_events_cross_from_the_workers(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "ssh_config").write_text("")  # not the tester's own ~/.ssh/config
    hosts = (*sshd_cluster.hosts("healthy", "case_study", "idle"), *sshd_cluster.extra_hosts(5))
    options = SweepOptions(samples=1, interval_s=0.0, deadline_s=30.0)
    recorder = Recorder()
    report = asyncio.run(sweep_in_workers(hosts, options, build_plans(hosts, LogOptions()),
                                          SshRequest(ssh_config=tmp_path / "ssh_config"), 2, observer=recorder))
    assert [h.host for h in report.hosts] == [h.name for h in hosts]
    assert all(h.status is HostStatus.OK for h in report.hosts), [h.error for h in report.hosts]
    assert sorted(recorder.started) == sorted(h.name for h in hosts)
    assert sorted(recorder.finished, key=lambda r: r.host) == sorted(report.hosts, key=lambda r: r.host)


def _start(sshd_cluster, tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:  # type: ignore[no-untyped-def]
    """``gpudiag sweep --workers 2`` of healthy hosts and one hung host (--timeout 120) in its own session,
    started; returns once every healthy host's raw output is saved and the hung stub has written its pid."""
    names = {"stuck": sshd_cluster.address_of("hang"), "fine": sshd_cluster.address_of("healthy")}
    names.update({f"extra-{i}": a for i, a in enumerate(sshd_cluster.extra_addresses[:4])})
    inventory = _inventory(sshd_cluster, tmp_path / "inventory.yaml", names)
    assert len(shards([Host(name=n) for n in names], 2)) == 2
    pid_file = sshd_cluster.hang_pid_file("hang")
    pid_file.unlink(missing_ok=True)  # left by an earlier test
    raw = tmp_path / "raw"
    proc = subprocess.Popen([sys.executable, "-m", "gpudiag", "sweep", "-i", str(inventory), "--format", "json",
                             "--samples", "2", "--interval", "0.1", "--timeout", "120", "--save-raw", str(raw),
                             "--workers", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
                            start_new_session=True)
    deadline = time.monotonic() + WAIT_S
    while not (all((raw / f"{n}.json").exists() for n in names if n != "stuck") and pid_file.exists()):
        if proc.poll() is not None or time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
            pytest.fail(f"the sweep did not reach the hung host in time (exit {proc.returncode}): {err}")
        time.sleep(0.05)
    time.sleep(0.5)  # each host's report is built (and sent up) just after its raw output is saved
    return proc, pid_file


@pytest.mark.parametrize(("signum", "group", "code"), [(signal.SIGINT, True, 130), (signal.SIGTERM, False, 143)],
                         ids=["INT-to-the-group", "TERM-to-the-parent"])
def test_a_signal_stops_the_workers_and_reports_what_finished(sshd_cluster, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                              signum: int, group: bool, code: int) -> None:
    proc, pid_file = _start(sshd_cluster, tmp_path)
    hung_pid = int(pid_file.read_text())
    if group:  # Ctrl-C at a terminal: the parent and every worker get it
        os.killpg(proc.pid, signum)
    else:  # kill PID: only the parent, which tells its workers
        proc.send_signal(signum)
    try:
        out, err = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == code, err
    doc = json.loads(out)
    assert doc["stopped_by"] == signal.Signals(signum).name and doc["summary"]["exit_code"] == code
    statuses = {h["host"]: h["status"] for h in doc["hosts"]}
    assert statuses.pop("stuck") == "cancelled"
    assert set(statuses.values()) == {"ok"}, statuses
    assert "Traceback" not in err
    assert process_ended(hung_pid, wait_s=10.0), "the hung nvidia-smi still runs on the node"


def _group_members(pgid: int) -> list[int]:
    """The processes left in process group ``pgid`` (zombies are ended: their parent is gone)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                found.append(int(entry.name))
    return found


def test_a_second_sigint_exits_at_once_and_leaves_no_worker(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    proc, pid_file = _start(sshd_cluster, tmp_path)
    hung_pid = int(pid_file.read_text())
    os.killpg(proc.pid, signal.SIGINT)
    deadline = time.monotonic() + WAIT_S
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert out == ""  # no report
    deadline = time.monotonic() + WAIT_S
    while _group_members(proc.pid) and time.monotonic() < deadline:  # the workers see their parent gone
        time.sleep(0.05)
    assert _group_members(proc.pid) == [], "a worker outlived its parent"
    assert process_ended(hung_pid, wait_s=10.0), "the hung nvidia-smi still runs on the node"


def test_a_worker_that_fails_makes_its_hosts_error_rows(tmp_path: Path) -> None:
    """A worker that cannot sweep (here: its SSH config vanished after the parent checked it) ends with its
    reason; its hosts become ``error`` rows that say so, and the sweep itself still reports."""
    hosts = tuple(Host(name=f"node{i:02d}", address="127.0.0.1") for i in range(6))
    options = SweepOptions(samples=1, interval_s=0.0, deadline_s=30.0)
    missing = tmp_path / "gone_ssh_config"
    report = asyncio.run(sweep_in_workers(hosts, options, build_plans(hosts, LogOptions()),
                                          SshRequest(ssh_config=missing), 2))
    assert [h.host for h in report.hosts] == [h.name for h in hosts]
    assert {h.status for h in report.hosts} == {HostStatus.ERROR}
    assert {h.error for h in report.hosts} == {
        f"the worker process sweeping this host failed: SshConfigError: {missing}: no such SSH config file"}
    assert report.stopped_by is None and report.exit_code == 2
