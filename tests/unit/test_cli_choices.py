"""Choice options are ``str`` Enums that typer checks: a bad choice is typer's usage error, exit 3, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpudiag.collect.remote import collector_call
from gpudiag.model.choices import EventLoop, HistoryFormat, Source
from gpudiag.report import OutputFormat
from gpudiag.sweep.runner import SweepOptions, collector_command

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


def test_the_choices_are_the_enums() -> None:
    assert [s.value for s in Source] == ["auto", "nvidia-smi"]
    assert [e.value for e in EventLoop] == ["asyncio", "uvloop"]
    assert [f.value for f in OutputFormat] == ["table", "json", "html"]
    assert [f.value for f in HistoryFormat] == ["table", "json"]
    assert SweepOptions().source is Source.AUTO


def test_collector_call_takes_the_enum_or_its_value() -> None:
    by_value = collector_call(samples=1, interval_s=0.0, deadline_s=10.0, source="nvidia-smi")  # type: ignore[arg-type]
    by_enum = collector_call(samples=1, interval_s=0.0, deadline_s=10.0, source=Source.NVIDIA_SMI)
    auto = collector_call(samples=1, interval_s=0.0, deadline_s=10.0)
    assert by_value == by_enum
    assert len(by_enum.stdin) < len(auto.stdin)  # nvidia-smi only: the NVML binding is not sent
    smi_only = collector_command(SweepOptions(source=Source.NVIDIA_SMI))
    assert len(smi_only.stdin) < len(collector_command(SweepOptions()).stdin)  # SweepOptions.source reaches it
    with pytest.raises(ValueError, match=r"^unknown source 'nvml' \(known: auto, nvidia-smi\)$"):
        collector_call(samples=1, interval_s=0.0, deadline_s=10.0, source="nvml")  # type: ignore[arg-type]
