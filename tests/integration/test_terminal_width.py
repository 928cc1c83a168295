"""Every command's text output at an 80-column terminal: the real CLI run in a pseudo-terminal with
``COLUMNS=80`` on the demo cluster, the loopback sshd and recorded data, and no line of what it prints
(escape sequences stripped) passes 80 display cells. Wider terminals get more columns.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len

from pty_screen import PtyRun, run_in_pty, strip_escapes

# Its tests share a module-scoped fixture: one worker runs them all, else each worker builds it again
# (with --dist loadgroup; the default, --dist loadfile, keeps a file on one worker).
pytestmark = pytest.mark.xdist_group("test_terminal_width")

GPUDIAG = [sys.executable, "-m", "gpudiag"]


def _env(columns: int | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    return {**env, "TERM": "xterm-256color", **({"COLUMNS": str(columns)} if columns else {})}


def _run(args: list[str], columns: int) -> PtyRun:
    return run_in_pty([*GPUDIAG, *args], columns=columns, env=_env(columns))


def _too_wide(run: PtyRun, columns: int) -> list[str]:
    """The lines wider than ``columns`` cells, as printed (the screen's rows, escapes applied)."""
    return [line for line in run.screen if cell_len(strip_escapes(line)) > columns]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One demo sweep, kept as JSON and in a history file: the source for the commands that read them."""
    folder = tmp_path_factory.mktemp("demo")
    history = folder / "history.sqlite"
    out = subprocess.run([*GPUDIAG, "sweep", "--demo", "--format", "json", "--history", str(history)],
                         capture_output=True, text=True, env=_env(None), timeout=300)
    assert out.returncode == 2, out.stderr  # the demo has a dead host: critical
    report = folder / "demo.json"
    report.write_text(out.stdout)
    return report, history


def test_sweep_demo_fits_80_columns_in_a_terminal() -> None:
    run = _run(["sweep", "--demo"], 80)

    assert run.exit_code == 2, run.text
    assert _too_wide(run, 80) == []
    assert "Findings" in run.text and "exit 2: critical findings" in run.text
    if any(line.startswith("host ") for line in run.screen):  # (on a loaded machine the demo's hosts may time out)
        assert "(not shown at 80 columns:" in run.text  # the columns left out are said


@pytest.mark.parametrize("columns", [80, 100, 120, 200])
def test_the_sweep_report_fits_each_width_and_shows_more_when_wider(demo, columns: int) -> None:
    report, _ = demo
    run = _run(["merge", str(report)], columns)

    assert _too_wide(run, columns) == []
    header = next(line for line in run.screen if line.startswith("host "))
    shown = {name for name in ("name", "cc/SM", "PCIe", "SM MHz", "SM clock", "reasons") if name in header}
    # chosen from the width alone (issue 19): the same whatever the demo's values this run
    expected = {80: {"name", "reasons"}, 100: {"name", "SM MHz", "reasons"},
                120: {"name", "cc/SM", "PCIe", "SM MHz", "reasons"},
                200: {"name", "cc/SM", "PCIe", "SM clock", "reasons"}}[columns]
    assert shown == expected
    # Narrow: each finding's sentence under its code; wide: beside it.
    assert any(line.startswith("      ") and "GPUs; gpu 0" in line for line in run.screen) is (columns < 120)


def test_quiet_prints_only_the_findings(demo) -> None:
    report, _ = demo
    run = _run(["merge", "--quiet", str(report)], 80)

    assert run.exit_code == 2
    assert run.screen[0] == "Findings" and "Summary" not in run.text
    assert not any(line.startswith("host ") for line in run.screen)  # no GPU table
    assert run.screen[-1] == "exit 2: critical findings" and _too_wide(run, 80) == []


def test_a_pipe_gets_whole_lines_whatever_columns_says(demo) -> None:
    report, _ = demo
    for columns in (None, 80):
        piped = subprocess.run([*GPUDIAG, "merge", str(report)], capture_output=True, text=True, env=_env(columns))

        assert max(cell_len(line) for line in piped.stdout.splitlines()) > 80  # the wide layout, for grep
        assert "cc/SM" in piped.stdout and "\x1b[" not in piped.stdout


@pytest.mark.parametrize("args", [["signatures"], ["grep", "--demo", "-s", "kernel_xid"],
                                  ["grep", "--demo", "-s", "custom_allreduce_disabled"]],
                         ids=["signatures", "grep-xid", "grep-allreduce"])
def test_log_commands_fit_80_columns(args: list[str]) -> None:
    run = _run(args, 80)

    assert run.exit_code in (0, 1, 2), run.text
    assert _too_wide(run, 80) == []
    assert len(run.screen) > 5


@pytest.mark.parametrize("host", [None, "spare-h200-03"])
def test_history_fits_80_columns(demo, host: str | None) -> None:
    _, history = demo
    run = _run(["history", str(history), *(["--host", host] if host else [])], 80)

    assert run.exit_code == 0, run.text
    assert _too_wide(run, 80) == []
    assert run.screen[0].startswith("run ")


def test_inventory_fits_80_columns_and_says_logs_as_written(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("defaults:\n  user: gpuops\n  identity_file: ~/.ssh/id_ed25519\n"
                         "groups:\n  rack1:\n    hosts: ['gpu[01-04]']\n    vars:\n      logs:\n"
                         "        - {path: /var/log/sglang.log, server: sglang}\n        - '@kernel'\n"
                         "  rack2:\n    hosts: ['gpu[05-06]']\n    vars:\n      jump: bastion.example.com\n")

    folded = _run(["inventory", "-i", str(inventory)], 80)
    every = _run(["inventory", "-i", str(inventory), "--no-fold"], 80)

    assert _too_wide(folded, 80) == [] and _too_wide(every, 80) == []
    assert "sglang:/var/log/sglang.log," in folded.text and "@kernel" in folded.text and "{" not in folded.text
    assert folded.screen[-1] == "6 hosts, 2 rows" and every.screen[-1] == "6 hosts"
    assert sum(line.startswith("gpu0") for line in every.screen) == 6


def test_inventory_says_one_host(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("hosts:\n  gpu01: {}\n")

    assert _run(["inventory", "-i", str(inventory)], 80).screen[-1] == "1 host"


def test_fifty_dead_hosts_fold_into_one_line_at_80_columns() -> None:
    # Port 1 on loopback: nothing listens, every host refuses at once.
    run = _run(["sweep", "127.0.0.[2-51]", "-p", "1", "--concurrency", "5"], 80)

    assert run.exit_code == 2, run.text
    assert _too_wide(run, 80) == []
    assert any(line.startswith("127.0.0.[2-51] (50 hosts): unreachable: ") for line in run.screen), run.text
    assert len([line for line in run.screen if line.strip()]) < 20  # not 150


def test_watch_fits_80_columns(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(sshd_cluster.inventory_defaults() + "hosts:\n  case-study-node: {address: 127.0.0.3}\n"
                         "  power-reduced-node: {address: 127.0.0.6}\n")
    run = _run(["watch", "-i", str(inventory), "--count", "1", "--plain", "--every", "0", "--interval", "0.1"], 80)

    assert run.exit_code in (1, 2), run.text
    assert _too_wide(run, 80) == []
    assert any(line.startswith("case-study-node") for line in run.screen)
