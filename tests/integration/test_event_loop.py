"""--event-loop: asyncio by default; uvloop when asked and installed, else asyncio with one line saying so."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def local(*global_args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpudiag", *global_args, "local", "--format", "json", "--samples",
                           "1"], capture_output=True, text=True, cwd=REPO, timeout=60,
                          env={**os.environ, "PATH": "/usr/bin:/bin"})


def test_uvloop_when_asked() -> None:
    done = local("--event-loop", "uvloop")
    assert json.loads(done.stdout)["hosts"][0]["host"] == "localhost"
    if importlib.util.find_spec("uvloop") is None:
        assert done.stderr == "gpudiag: uvloop is not installed; using asyncio\n"
    else:
        assert done.stderr == ""


def test_an_unknown_loop_is_a_usage_error() -> None:
    # typer checks the choice itself (a str Enum); main() turns click's usage error into exit 3.
    done = local("--event-loop", "trio")
    assert (done.returncode, done.stdout) == (3, "")
    error = done.stderr.splitlines()[-1]
    assert error.startswith("Error: Invalid value for '--event-loop'")
    assert "'trio' is not one of 'asyncio', 'uvloop'" in error and "Traceback" not in done.stderr
