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
    ('[sweeep]\nsamples = 2\n', "{path}:1: sweeep: unknown table [sweeep] (known: defaults, fleet, sweep, local"),
    ('[sweep]\nsamples = = 2\n', "{path}:2: not TOML: invalid value at column 11"),
    ('[fleet]\naction = "x"\n', "{path}:2: [fleet] action: expected one of none, watch, restart_workload"),
    ('[fleet."NVIDIA H200"]\ndrivr = "580"\n',
     '{path}:2: [fleet."NVIDIA H200"] drivr: unknown key (known: driver, cuda, vbios)'),
    ('[fleet."NVIDIA H200"]\ndriver = 580\n', '{path}:2: [fleet."NVIDIA H200"] driver: expected a string, not 580'),
    ('[fleet]\nmodel = "x"\n', "{path}:2: [fleet] model: unknown key (known: action, and a table per GPU model"),
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


def test_the_fleet_table_fills_expect_for_every_command_that_has_it(tmp_path: Path) -> None:
    """[fleet."MODEL"] and action become --expect and --expect-action (sweep's request reads them)."""
    from gpudiag.cli import config

    path = tmp_path / "fleet.toml"
    path.write_text('[fleet]\naction = "drain_and_inspect"\n\n[fleet."NVIDIA H200"]\ndriver = "580.159.04"\n'
                    'cuda = "13.0"\n\n[fleet."NVIDIA B200"]\nvbios = "97.00.0B.00.01"\n')
    data, text = config.read(path)
    from typer.main import get_command

    commands = get_command(app).commands  # type: ignore[attr-defined]
    found = config.defaults(path, data, text, commands)
    assert found["sweep"]["expect"] == ["NVIDIA H200:driver=580.159.04", "NVIDIA H200:cuda=13.0",
                                        "NVIDIA B200:vbios=97.00.0B.00.01"]
    assert found["sweep"]["expect_action"] == "drain_and_inspect" and "expect" not in found["signatures"]
