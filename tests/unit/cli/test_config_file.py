"""``--config FILE`` (and ``GPUDIAG_CONFIG``, and ``$XDG_CONFIG_HOME/gpudiag/config.toml``): any option of any
command from a TOML file; the command line wins over the file; a bad file is one line naming it and the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudiag.cli.app import app


def _inventory(tmp_path: Path, name: str, hosts: str) -> Path:
    path = tmp_path / name
    path.write_text(f"groups:\n  rack:\n    hosts: [\"{hosts}\"]\n")
    return path


def invoke(tmp_path: Path, *args: str, **env: str) -> object:
    base = {"PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "GPUDIAG_CONFIG": ""}
    return CliRunner().invoke(app, list(args), env=base | env, prog_name="gpudiag")


def _hosts(done: object) -> list[str]:
    assert done.exit_code == 0, done.output  # type: ignore[attr-defined]
    return [h["name"] for h in json.loads(done.stdout)["hosts"]]  # type: ignore[attr-defined]


@pytest.fixture()
def config(tmp_path: Path) -> Path:
    a = _inventory(tmp_path, "a.yaml", "gpu[01-02]")
    path = tmp_path / "gpudiag.toml"
    path.write_text(f'[defaults]  # every command that has the option\ninventory = "{a}"\n\n'
                    '[inventory]\nformat = "json"\nexclude = ["gpu02"]\n')
    return path


def test_the_file_sets_options_and_the_command_line_wins(tmp_path: Path, config: Path) -> None:
    assert _hosts(invoke(tmp_path, "inventory", "--config", str(config))) == ["gpu01"]
    b = _inventory(tmp_path, "b.yaml", "node[1-3]")
    # The command line over the file: another inventory, another --exclude (a repeatable option is replaced).
    assert _hosts(invoke(tmp_path, "inventory", "--config", str(config), "-i", str(b), "--exclude", "node1")) == [
        "node2", "node3"]
    table = invoke(tmp_path, "inventory", "--config", str(config), "--format", "table")
    assert table.exit_code == 0 and not table.stdout.lstrip().startswith("{")  # type: ignore[attr-defined]


def test_the_environment_and_the_default_path_name_the_file(tmp_path: Path, config: Path) -> None:
    assert _hosts(invoke(tmp_path, "inventory", GPUDIAG_CONFIG=str(config))) == ["gpu01"]
    default = tmp_path / "xdg" / "gpudiag" / "config.toml"
    default.parent.mkdir(parents=True)
    default.write_text(config.read_text().replace('exclude = ["gpu02"]', "exclude = []"))
    assert _hosts(invoke(tmp_path, "inventory")) == ["gpu01", "gpu02"]
    assert _hosts(invoke(tmp_path, "inventory", GPUDIAG_CONFIG=str(config))) == ["gpu01"]  # over the default


@pytest.mark.parametrize(("text", "error"), [
    ('[sweep]\nsamples = 2\nhistroy = "h.sqlite"\n', "{path}:3: [sweep] histroy: unknown key"),
    ('[sweep]\nsamples = "five"\n', "{path}:2: [sweep] samples: expected an integer, not 'five'"),
    ('[sweep]\nquiet = "yes"\n', "{path}:2: [sweep] quiet: expected a boolean, not 'yes'"),
    ('[sweep]\nformat = "xml"\n', "{path}:2: [sweep] format: expected one of table, json, html, not 'xml'"),
    ('[sweep]\nlog = "/var/log/syslog"\n', "{path}:2: [sweep] log: expected an array of strings"),
    ('nonsense = 1\n', "{path}:1: nonsense: a key outside any table (put it in [defaults] or a command's table)"),
    ('[defaults]\nnonsense = 1\n', "{path}:2: [defaults] nonsense: unknown key (no command has such an option)"),
    ('[defaults]\nsamples = 2.5\n', "{path}:2: [defaults] samples: expected an integer, not 2.5"),
    ('[sweeep]\nsamples = 2\n', "{path}:1: sweeep: unknown table [sweeep] (known: defaults, sweep, local"),
    ('[sweep]\nsamples = = 2\n', "{path}: Invalid value (at line 2, column 11)"),
])
def test_a_bad_file_is_one_line_naming_the_file_and_key(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    done = invoke(tmp_path, "signatures", "--config", str(path))
    assert (done.exit_code, done.stdout) == (3, "")  # type: ignore[attr-defined]
    assert done.stderr.startswith(f"gpudiag: {error.format(path=path)}")  # type: ignore[attr-defined]
    assert done.stderr.count("\n") == 1  # type: ignore[attr-defined]


def test_a_missing_file_given_is_an_error(tmp_path: Path) -> None:
    done = invoke(tmp_path, "signatures", "--config", str(tmp_path / "none.toml"))
    assert done.exit_code == 3  # type: ignore[attr-defined]
    assert done.stderr.startswith(f"gpudiag: {tmp_path / 'none.toml'}: cannot read")  # type: ignore[attr-defined]


def test_the_example_audit_config_is_valid() -> None:
    import typer

    from gpudiag.cli import config as cfg

    path = Path(__file__).resolve().parents[3] / "contrib" / "audit.toml"
    data, text = cfg.read(path)
    found = cfg.defaults(path, data, text, typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    assert found["sweep"]["history"] == "/var/lib/gpudiag/history.sqlite"
    assert found["sweep"]["only_changes"] is True and found["sweep"]["log"] == ["@kernel"]
    assert found["watch"]["inventory"] == found["sweep"]["inventory"] == "/etc/gpudiag/inventory.yaml"
    assert "inventory" not in found["local"]  # [defaults] applies only where the option exists
