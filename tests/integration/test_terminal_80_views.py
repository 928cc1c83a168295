"""Issue 19's views at an 80-column terminal, in a real pseudo-terminal: ``watch --demo`` (redrawn in place,
40 rows), ``--only-changes``, the Ctrl-C fold line and the sweep report have no line over 80 cells and
no finding code cut in two by a line break."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len

from pty_screen import PtyRun, run_in_pty, split_codes, strip_escapes

pytestmark = pytest.mark.integration
GPUDIAG = [sys.executable, "-m", "gpudiag"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    return {**env, "TERM": "xterm-256color"}


def _fits(run: PtyRun) -> None:
    lines = [strip_escapes(line) for line in run.screen]
    assert [line for line in lines if cell_len(line) > 80] == [], run.text
    assert split_codes(lines) == [], run.text


def test_watch_demo_at_80_columns_and_40_rows() -> None:
    run = run_in_pty([*GPUDIAG, "watch", "--demo", "--count", "2", "--every", "0.5"], columns=80, rows=40,
                     env=_env(), timeout_s=180)

    assert run.exit_code == 2, run.text
    _fits(run)
    screen = run.text
    assert "HOST_UNREACHABLE" in screen and "XID" in screen  # the critical host and the Xid on screen
    assert "2 hosts ok: infer-h200-02, train-h200-01" in screen  # the healthy hosts, one line
    assert not [line for line in run.screen if line.startswith("train-h200-01 ")]


def test_only_changes_at_80_columns(tmp_path: Path) -> None:
    run = run_in_pty([*GPUDIAG, "sweep", "--demo", "--history", str(tmp_path / "h.sqlite"), "--only-changes"],
                     columns=80, env=_env(), timeout_s=180)

    _fits(run)
    changes = [line for line in run.screen if line.startswith("NEW ")]
    # each change names its host, GPUs, code and action
    assert "NEW       WARNING  sglang-glm5 GPUs 0-7  BUSY_LOW_POWER  action: watch" in changes, run.text
    assert "NEW       CRITICAL spare-h200-03 GPU 4  ECC_UNCORRECTED  action: reset_gpu" in changes, run.text
    hosts = [line.split()[2] for line in changes]
    assert hosts == sorted(hosts)  # by host, then GPU


def test_the_ctrl_c_fold_line_at_80_columns() -> None:
    # ^C once a host answered: the sweep's signal handlers are in place by then
    run = run_in_pty([*GPUDIAG, "sweep", "--demo"], columns=80, env=_env(),
                     until=lambda out: "1/6 hosts" in out, then=b"\x03", timeout_s=180)

    assert run.exit_code == 130, run.text
    _fits(run)
    heading = [line for line in run.screen if line.endswith(" hosts):")]
    if heading:  # several hosts cancelled: their range heads the group, the sentence indented under it
        below = run.screen[run.screen.index(heading[0]) + 1]
        assert below.startswith("    cancelled: "), run.text


def test_the_sweep_report_at_80_columns() -> None:
    run = run_in_pty([*GPUDIAG, "sweep", "--demo"], columns=80, env=_env(), timeout_s=180)

    assert run.exit_code == 2, run.text
    _fits(run)
    assert "exit 2: critical findings" in run.text
