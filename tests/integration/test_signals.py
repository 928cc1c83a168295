"""SIGINT and SIGTERM during a sweep, over the loopback sshd: the hosts that finished are reported, the rest
are ``cancelled``, the exit code says which signal (130, 143), and the hung collector on the node ends at once
(not at its own ``timeout``). A second signal exits at once, with no report.

No pseudo-terminal: ``gpudiag sweep`` runs as a plain subprocess and is sent the signal with ``send_signal``.
The waits are bounded and generous; nothing here asserts a tight timing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopback import process_ended

WAIT_S = 60.0  # generous bound for a step that takes well under a second on an idle machine


def _start(sshd_cluster, tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:  # type: ignore[no-untyped-def]
    """``gpudiag sweep`` of one healthy and one hung host (--timeout 120), started; returns once the healthy
    host's raw output is saved (it is done) and the hung stub has written its pid."""
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(sshd_cluster.inventory_defaults() + "hosts:\n  fine: {address: 127.0.0.2}\n"
                         "  stuck: {address: 127.0.0.9}\n")
    pid_file = sshd_cluster.hang_pid_file("hang")
    pid_file.unlink(missing_ok=True)  # left by an earlier test
    raw = tmp_path / "raw"
    proc = subprocess.Popen([sys.executable, "-m", "gpudiag", "sweep", "-i", str(inventory), "--format", "json",
                             "--samples", "2", "--interval", "0.1", "--timeout", "120", "--save-raw", str(raw)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    deadline = time.monotonic() + WAIT_S
    while not ((raw / "fine.json").exists() and pid_file.exists()):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"the sweep did not reach the hung host in time (exit {proc.returncode}): {err}")
        time.sleep(0.05)
    time.sleep(0.2)  # the report of the healthy host is built just after its raw output is saved
    return proc, pid_file


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["INT", "TERM"])
def test_a_signal_reports_what_finished_and_ends_the_hung_collector(sshd_cluster, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                    signum: int, code: int) -> None:
    proc, pid_file = _start(sshd_cluster, tmp_path)
    hung_pid = int(pid_file.read_text())
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == code, err
    doc = json.loads(out)
    assert doc["stopped_by"] == signal.Signals(signum).name and doc["summary"]["exit_code"] == code
    by_host = {h["host"]: h for h in doc["hosts"]}
    assert by_host["fine"]["status"] == "ok" and len(by_host["fine"]["gpus"]) == 8
    assert by_host["stuck"]["status"] == "cancelled"
    assert [f["code"] for f in by_host["stuck"]["findings"]] == ["HOST_CANCELLED"]
    # The collector ended with its channel, not at its own `timeout` (120 s).
    assert process_ended(hung_pid, wait_s=10.0), "the hung nvidia-smi still runs on the node"


def test_a_second_sigint_exits_at_once(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    proc, pid_file = _start(sshd_cluster, tmp_path)
    hung_pid = int(pid_file.read_text())
    # Signals of one kind that arrive together merge into one: the second is sent a moment after the first (and
    # again, until gpudiag exits), so that it lands while the first is being handled or the report written.
    proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + WAIT_S
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 130, err
    assert out == ""  # no report
    # The connection went with the process: the node ends the collector all the same.
    assert process_ended(hung_pid, wait_s=10.0), "the hung nvidia-smi still runs on the node"
