"""``gpudiag history`` on a history the user may read but not write (issue 30 #4): a root-owned file in a
read-only folder, as the cron job leaves it. Before: "attempt to write a readonly database", exit 3. The run
is as an unprivileged uid when the tests run as root (setpriv needs no account for it)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from history_files import recorded_history

pytestmark = pytest.mark.integration


def _imported_packages() -> list[str]:
    """The top-level packages outside the standard library that ``gpudiag history`` imports, found by importing
    its entry point in a child process."""
    probe = ("import sys, sysconfig\n"
             "from gpudiag.cli.entry import main\n"
             "import gpudiag_node, gpudiag.audit.history, gpudiag.report.history_table\n"
             "sys.argv = ['gpudiag', 'history', '--help']\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "std, site = sysconfig.get_paths()['stdlib'], sysconfig.get_paths()['purelib']\n"
             "def ours(f):\n    return f and (f.startswith(site) or not f.startswith(std))\n"
             "names = {n.split('.')[0] for n, m in list(sys.modules.items()) if ours(getattr(m, '__file__', None))}\n"
             "sys.stderr.write('\\n'.join(sorted(names)))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    return [n for n in out.stderr.split() if n and n not in sys.builtin_module_names]


@pytest.mark.skipif(shutil.which("setpriv") is None and os.geteuid() == 0, reason="needs a user that cannot write")
def test_a_history_in_a_folder_the_user_cannot_write(tmp_path: Path) -> None:
    folder = Path(tempfile.mkdtemp(prefix="gpudiag-ro-"))  # not under pytest's 0700 folder: another uid reads it
    try:
        history = recorded_history(folder / "h.sqlite", hosts=3)
        history.chmod(0o444)
        folder.chmod(0o555)
        # As root, run as an unprivileged uid (setpriv needs no account for it); as a user, as that user.
        as_user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
        # Neither the checkout nor the interpreter's site-packages need be readable by another uid (a CI clone
        # under mktemp's 0700, a pyenv under root's 0700 home): that uid imports a copy of gpudiag and of every
        # package `gpudiag history` loads, from a folder it may read.
        code = Path(tempfile.mkdtemp(prefix="gpudiag-code-"))
        for name in _imported_packages():
            source = Path(importlib.util.find_spec(name).origin or "")  # type: ignore[union-attr]
            if source.name == "__init__.py":
                shutil.copytree(source.parent, code / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(source, code / source.name)
        for path in (code, *code.rglob("*")):
            path.chmod(0o755 if path.is_dir() else 0o644)
        env = {**os.environ, "HOME": str(folder), "XDG_CONFIG_HOME": str(folder), "PYTHONPATH": str(code),
               "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            done = subprocess.run([*as_user, sys.executable, "-m", "gpudiag", "history", str(history)],
                                  capture_output=True, text=True, timeout=60, env=env)
        finally:
            shutil.rmtree(code)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[1].split()[:4] == ["1", "2025-06-01T12:00:00Z", "2", "3"]
        assert sorted(p.name for p in folder.iterdir()) == ["h.sqlite"]
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)
