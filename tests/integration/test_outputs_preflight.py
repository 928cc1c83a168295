"""Every output of a run is checked before the first connection (issue 30 #1): ``-o`` (the HTML page
included), ``--json-file``, ``--prom-file`` and ``--history``. A missing folder, a folder where the file
should be, a file in place of a folder, or a folder gpudiag cannot create a file in: one line naming it,
exit 3, no host contacted, nothing recorded and nothing created. Before, every host was swept, then the run
exited 3 with nothing on stdout (the report lost), or the missing folder was created silently (a mistyped
``--history`` started a new history)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from counting_listener import CountingListener

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def sweep(listener: CountingListener, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpudiag", "sweep", f"127.0.0.1:{listener.port}", "--timeout", "3",
                           *extra], capture_output=True, text=True, cwd=REPO, timeout=120)


def refused(done: subprocess.CompletedProcess[str], listener: CountingListener, flag: str, path: Path,
            why: str) -> None:
    assert listener.accepted == 0, "a host was contacted"
    assert (done.returncode, done.stdout) == (3, ""), done.stderr
    assert done.stderr == f"gpudiag: {flag} {path}: {why}; nothing was swept\n"


@pytest.mark.parametrize("flag,name", [("--output", "r.json"), ("--prom-file", "g.prom"),
                                       ("--history", "h.sqlite"), ("--json-file", "a.json")])
def test_a_missing_folder_is_refused_and_not_created(listener: CountingListener, tmp_path: Path, flag: str,
                                                     name: str) -> None:
    path = tmp_path / "typo" / "deeper" / name
    refused(sweep(listener, flag, str(path)), listener, flag, path,
            f"folder {path.parent} does not exist (create it first)")
    assert not (tmp_path / "typo").exists()


@pytest.mark.parametrize("flag", ["--output", "--history", "--json-file"])
def test_a_folder_where_the_file_goes_is_refused(listener: CountingListener, tmp_path: Path, flag: str) -> None:
    refused(sweep(listener, flag, str(tmp_path)), listener, flag, tmp_path, "is a folder, not a file")


def test_a_file_in_place_of_the_folder_is_refused(listener: CountingListener, tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("")
    path = tmp_path / "plain" / "g.prom"
    refused(sweep(listener, "--prom-file", str(path)), listener, "--prom-file", path,
            f"{path.parent} is not a folder")


def test_the_html_page_into_a_missing_folder(listener: CountingListener, tmp_path: Path) -> None:
    path = tmp_path / "nope" / "r.html"
    refused(sweep(listener, "--format", "html", "-o", str(path)), listener, "--output", path,
            f"folder {path.parent} does not exist (create it first)")


@pytest.mark.skipif(os.geteuid() == 0, reason="root creates files in a mode-555 folder; the probe is a real "
                                              "create, so only a user sees the refusal")
def test_a_folder_the_user_cannot_write(listener: CountingListener, tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        path = folder / "g.prom"
        refused(sweep(listener, "--prom-file", str(path)), listener, "--prom-file", path,
                f"cannot create a file in {folder} (permission denied)")
        history = tmp_path / "h.sqlite"
        history.write_bytes(b"")
        history.chmod(0o444)
        refused(sweep(listener, "--history", str(history)), listener, "--history", history,
                "cannot write it (permission denied)")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["h.sqlite", "ro"]  # no -wal, no -shm left
    finally:
        folder.chmod(0o755)


def test_the_same_file_twice(listener: CountingListener, tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    refused(sweep(listener, "-o", str(path), "--json-file", str(path)), listener, "--json-file", path,
            "the same file as --output")
