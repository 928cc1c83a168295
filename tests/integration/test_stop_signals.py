"""Signals as a service manager and a shell send them (issue 30, fault matrix #10): ``systemctl stop`` (SIGTERM)
ends watch and the exporter with their "stopped" line and exit 143 (before, they died with no line); a SIGINT
that the shell set to be ignored (a background job, ``cmd &`` in a script) stays ignored (before, the sweep
re-enabled it and stopped)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def test_sigterm_stops_watch_with_its_line() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "gpudiag", "watch", "--demo", "--every", "1", "--plain"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        while not proc.stdout.readline().startswith("refresh 1"):
            assert time.monotonic() < deadline and proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143 and err.endswith("gpudiag: watch stopped\n"), err


def test_a_sigint_the_shell_ignores_stays_ignored(silent_listener: int) -> None:
    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    proc = subprocess.Popen([sys.executable, "-m", "gpudiag", "sweep", f"127.0.0.1:{silent_listener}",
                             "--connect-timeout", "4", "--no-progress"], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=ignore_sigint)
    time.sleep(2.0)  # inside the sweep: the host has not answered yet
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and "SIGINT" not in err and "HOST_UNREACHABLE" in out, err
