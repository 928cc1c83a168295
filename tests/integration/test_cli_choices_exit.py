"""A bad choice through the real entry point, in a child process (``python -m gpudiag``): typer's usage error,
exit 3, no traceback. Split from tests/unit/cli/test_cli_choices.py (the choices are the enums: there)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def gpudiag(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpudiag", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=60, env={**os.environ, "PATH": "/usr/bin:/bin", **(env or {})})


@pytest.mark.parametrize(("args", "option", "choices"), [
    (("local", "--source", "nvml"), "'--source'", "'nvml' is not one of 'auto', 'nvidia-smi'"),
    (("sweep", "localhost", "--source", "NVML"), "'--source'", "'NVML' is not one of 'auto', 'nvidia-smi'"),
    (("local", "--format", "xml"), "'--format' / '-f'", "'xml' is not one of 'table', 'json', 'html'"),
    (("merge", "-f", "yaml", "x.json"), "'--format' / '-f'", "'yaml' is not one of 'table', 'json'"),
    (("--event-loop", "trio", "local"), "'--event-loop'", "'trio' is not one of 'asyncio', 'uvloop'"),
    (("sweep", "localhost", "--drain-on", "often"), "'--drain-on'", "'often' is not one of 'critical', 'warning'"),
    (("history", "h.sqlite", "--format", "html"), "'--format' / '-f'", "'html' is not one of 'table', 'json'"),
    (("undrain", "--drain-on", "often"), "'--drain-on'", "'often' is not one of 'critical', 'warning'"),
])
def test_a_bad_choice_is_a_usage_error(args: tuple[str, ...], option: str, choices: str) -> None:
    done = gpudiag(*args)
    assert (done.returncode, done.stdout) == (3, "")
    assert "Traceback" not in done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith(f"Error: Invalid value for {option}") and choices in error


def test_a_bad_event_loop_from_the_environment_is_a_usage_error() -> None:
    done = gpudiag("local", "--samples", "1", env={"GPUDIAG_EVENT_LOOP": "trio"})
    assert done.returncode == 3 and "'trio' is not one of 'asyncio', 'uvloop'" in done.stderr
