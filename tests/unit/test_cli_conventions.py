"""What a user of any command-line tool expects: --version, -h everywhere, bare ``gpudiag`` shows the help and
succeeds, and the same ``--format table|json`` on the commands that print tables (``--json`` kept, hidden)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudiag.cli.app import app

ENV = {"PATH": "/usr/bin:/bin"}


def gpudiag(*args: str) -> subprocess.CompletedProcess[str]:
    """The console entry point as installed (main(): usage errors exit 3), in a child process."""
    return subprocess.run([sys.executable, "-c", "from gpudiag.cli.app import main; main()", *args],
                          capture_output=True, text=True, check=False, timeout=60)


def test_version_names_the_installed_distribution() -> None:
    for flag in ("--version", "-V"):
        done = gpudiag(flag)
        assert (done.returncode, done.stdout) == (0, f"gpudiag {version('gpudiag')}\n")


def test_bare_gpudiag_prints_the_help_and_exits_0() -> None:
    done = gpudiag()
    assert done.returncode == 0, done.stderr
    assert "Usage: gpudiag" in done.stdout and "sweep" in done.stdout and done.stderr == ""


@pytest.mark.parametrize("command", [(), ("sweep",), ("local",), ("inventory",), ("watch",), ("merge",),
                                     ("signatures",), ("grep",), ("undrain",), ("history",), ("exporter",)])
def test_dash_h_is_help_on_every_command(command: tuple[str, ...]) -> None:
    short = CliRunner().invoke(app, [*command, "-h"], env=ENV, prog_name="gpudiag")
    long = CliRunner().invoke(app, [*command, "--help"], env=ENV, prog_name="gpudiag")
    assert short.exit_code == long.exit_code == 0, short.output
    assert short.stdout == long.stdout and "Usage: gpudiag" in short.stdout


def _inventory(tmp_path: Path) -> Path:
    path = tmp_path / "inventory.yaml"
    path.write_text("groups:\n  rack:\n    hosts: [\"gpu[01-02]\"]\n")
    return path


def test_inventory_json_carries_its_schema_and_json_is_a_hidden_alias(tmp_path: Path) -> None:
    inventory = str(_inventory(tmp_path))
    new = CliRunner().invoke(app, ["inventory", "-i", inventory, "--format", "json"], env=ENV)
    old = CliRunner().invoke(app, ["inventory", "-i", inventory, "--json"], env=ENV)
    assert new.exit_code == old.exit_code == 0, new.output
    doc = json.loads(new.stdout)
    assert doc["schema"] == "gpudiag.sources.inventory/1"
    assert [h["name"] for h in doc["hosts"]] == ["gpu01", "gpu02"]
    assert old.stdout == new.stdout and old.stderr == "gpudiag: --json is deprecated; use --format json\n"
    assert "--json" not in CliRunner().invoke(app, ["inventory", "-h"], env=ENV).stdout
    table = CliRunner().invoke(app, ["inventory", "-i", inventory, "-f", "table"], env=ENV)
    assert table.exit_code == 0 and "gpu[01-02]" in table.stdout and not table.stdout.lstrip().startswith("{")


def test_grep_json_carries_its_schema() -> None:
    done = CliRunner().invoke(app, ["grep", "--demo", "-s", "kernel_xid", "--format", "json"], env=ENV)
    doc = json.loads(done.stdout)
    assert doc["schema"] == "gpudiag.grep/1" and doc["signature"] == "kernel_xid"


def test_a_format_the_command_lacks_is_a_usage_error() -> None:
    done = gpudiag("inventory", "-i", "x.yaml", "--format", "html")
    assert done.returncode == 3 and "html" in done.stderr
