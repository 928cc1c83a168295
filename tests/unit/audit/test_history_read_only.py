"""``gpudiag history`` only reads (issue 30 #4): a history the user may read but not write (a root-owned file
from the cron job, a read-only folder) is shown, not "attempt to write a readonly database", exit 3; and a
host the history never recorded is one line, exit 3, not an empty table with exit 0."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from gpudiag.cli.app import app
from history_files import recorded_history


def test_a_host_the_history_never_recorded_is_an_error(tmp_path: Path) -> None:
    history = recorded_history(tmp_path / "h.sqlite", hosts=3)
    done = CliRunner().invoke(app, ["history", str(history), "--host", "nosuch"], prog_name="gpudiag")
    assert (done.exit_code, done.stdout) == (3, "")
    assert done.stderr == f"gpudiag: {history}: no recorded run swept host nosuch\n"
    found = CliRunner().invoke(app, ["history", str(history), "--host", "gpu0001"], prog_name="gpudiag")
    assert found.exit_code == 0 and "ECC_UNCORRECTED" in found.stdout
