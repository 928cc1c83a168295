"""The scheduled audit as cron runs it, ``gpudiag sweep --config FILE --quiet`` (contrib/crontab's line), in a
child process on the demo cluster: the file alone says what to record and write, and the history has the run."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from cli_run import run_cli

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GPUDIAG_CONFIG"} | {"HOME": str(home),
                                                                          "XDG_CONFIG_HOME": str(home / ".config")}
    return run_cli(*args, cwd=REPO, env=env)  # in this process: the process is not the point


def _cron_args(config: Path) -> list[str]:
    """contrib/crontab's gpudiag command line, with ``config`` for /etc/gpudiag/audit.toml."""
    line = next(ln for ln in (REPO / "contrib" / "crontab").read_text().splitlines()
                if ln and not ln.startswith("#") and "gpudiag sweep" in ln)
    argv = shlex.split(line.split("gpudiag", 1)[1])
    return [str(config) if a == "/etc/gpudiag/audit.toml" else a for a in argv]


def test_the_cron_line_runs_the_audit_from_its_config_file(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = tmp_path / "audit.toml"
    config.write_text(f"""
[sweep]
demo = true
samples = 1
interval = 0
history = "{state / 'history.sqlite'}"
keep-days = 30
only-changes = true
prom-file = "{state / 'gpudiag.prom'}"
format = "json"
output = "{state / 'last.json'}"
""")
    args = _cron_args(config)
    assert args == ["sweep", "--config", str(config), "--quiet"]
    done = cli(*args, home=tmp_path)
    assert done.returncode == 2, done.stderr  # the demo cluster has a critical finding (an unreachable node)
    runs = cli("history", str(state / "history.sqlite"), "--format", "json", home=tmp_path)
    assert runs.returncode == 0, runs.stderr
    assert len(json.loads(runs.stdout)) == 1
    assert json.loads((state / "last.json").read_text())["schema"].startswith("gpudiag.sweep/")
    assert "gpudiag_host_up" in (state / "gpudiag.prom").read_text()
    # The command line wins over the file: --format table replaces its json (the report file is a table).
    again = cli(*args, "--format", "table", home=tmp_path)
    assert again.returncode == 2, again.stderr
    assert not (state / "last.json").read_text().lstrip().startswith("{")
    assert len(json.loads(cli("history", str(state / "history.sqlite"), "--format", "json",
                              home=tmp_path).stdout)) == 2


def test_a_bad_key_in_the_cron_config_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "audit.toml"
    config.write_text('[sweep]\ndemo = true\nhistroy = "h.sqlite"\n')
    done = cli(*_cron_args(config), home=tmp_path)
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr == f"gpudiag: {config}:3: [sweep] histroy: unknown key\n"
