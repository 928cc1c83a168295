"""What a user of any command-line tool expects, through the console entry point in a child process (main():
usage errors exit 3): --version, bare ``gpudiag`` shows the help and succeeds, a format a command lacks is a
usage error. Split from tests/unit/cli/test_cli_conventions.py (-h everywhere and --format: there, in-process)."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version


def gpudiag(*args: str) -> subprocess.CompletedProcess[str]:
    """The console entry point as installed (main(): usage errors exit 3), in a child process."""
    return subprocess.run([sys.executable, "-c", "from gpudiag.cli.entry import main; main()", *args],
                          capture_output=True, text=True, check=False, timeout=60)


def test_version_names_the_installed_distribution() -> None:
    for flag in ("--version", "-V"):
        done = gpudiag(flag)
        assert (done.returncode, done.stdout) == (0, f"gpudiag {version('gpudiag')}\n")


def test_bare_gpudiag_prints_the_help_and_exits_0() -> None:
    done = gpudiag()
    assert done.returncode == 0, done.stderr
    assert "Usage: gpudiag" in done.stdout and "sweep" in done.stdout and done.stderr == ""


def test_a_format_the_command_lacks_is_a_usage_error() -> None:
    done = gpudiag("inventory", "-i", "x.yaml", "--format", "html")
    assert done.returncode == 3 and "html" in done.stderr
