"""When the live progress shows: on a terminal (stdout and stderr), never on a pipe, never with --quiet;
--progress and --no-progress force it. Hosts on a loopback port nothing listens on: each refuses at once."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pty_screen import run_in_pty, strip_escapes

SWEEP = [sys.executable, "-m", "gpudiag", "sweep", "127.0.0.[2-21]", "-p", "1", "--concurrency", "4"]
SHOWN = "20/20 hosts"  # what the progress says last, before it is erased


def _env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}, "TERM": "xterm-256color"}


@pytest.mark.parametrize(("flags", "shown"), [([], True), (["--no-progress"], False), (["--quiet"], False),
                                              (["--format", "json"], True)],
                         ids=["terminal", "no-progress", "quiet", "json-to-the-terminal"])
def test_in_a_terminal(flags: list[str], shown: bool) -> None:
    run = run_in_pty([*SWEEP, *flags], columns=80, env=_env())

    assert run.exit_code == 2, run.text
    assert (SHOWN in strip_escapes(run.raw)) is shown
    assert "in flight" not in run.text  # erased, where it was drawn


@pytest.mark.parametrize(("flags", "shown"), [([], False), (["--progress"], True)], ids=["pipe", "forced"])
def test_on_a_pipe(flags: list[str], shown: bool) -> None:
    done = subprocess.run([*SWEEP, *flags], capture_output=True, text=True, env=_env(), timeout=120)

    assert done.returncode == 2, done.stderr
    assert (SHOWN in done.stderr) is shown
    assert "in flight" not in done.stdout and "\x1b[" not in done.stdout
