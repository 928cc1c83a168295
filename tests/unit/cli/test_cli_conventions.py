"""What a user of any command-line tool expects: --version, -h everywhere, bare ``gpudiag`` shows the help and
succeeds, and the same ``--format table|json`` on the commands that print tables (``--json`` kept, hidden)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudiag.cli.app import app

ENV = {"PATH": "/usr/bin:/bin"}


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
