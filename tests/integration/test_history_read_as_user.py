"""``gpudiag history`` on a history the user may read but not write (issue 30 #4): a root-owned file in a
read-only folder, as the cron job leaves it. Before: "attempt to write a readonly database", exit 3. The run
is as an unprivileged uid when the tests run as root (setpriv needs no account for it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from history_files import recorded_history

pytestmark = pytest.mark.integration


@pytest.mark.skipif(shutil.which("setpriv") is None and os.geteuid() == 0, reason="needs a user that cannot write")
def test_a_history_in_a_folder_the_user_cannot_write(tmp_path: Path) -> None:
    folder = Path(tempfile.mkdtemp(prefix="gpudiag-ro-"))  # not under pytest's 0700 folder: another uid reads it
    try:
        history = recorded_history(folder / "h.sqlite", hosts=3)
        history.chmod(0o444)
        folder.chmod(0o555)
        # As root, run as an unprivileged uid (setpriv needs no account for it); as a user, as that user.
        as_user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
        done = subprocess.run([*as_user, sys.executable, "-m", "gpudiag", "history", str(history)],
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "HOME": str(folder), "XDG_CONFIG_HOME": str(folder)})
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[1].split()[:4] == ["1", "2025-06-01T12:00:00Z", "2", "3"]
        assert sorted(p.name for p in folder.iterdir()) == ["h.sqlite"]
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)
