"""The local transport (``localhost`` / ``gpudiag local``): bounded output, a deadline that ends the group."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from gpudiag.model import Host
from gpudiag.transport import CommandTimeout, LocalTransport, RemoteCommand

HOST = Host(name="localhost")


def run(command: RemoteCommand):  # type: ignore[no-untyped-def]
    return asyncio.run(LocalTransport().run(HOST, command))


def test_stdin_goes_in_and_the_exit_status_comes_back() -> None:
    result = run(RemoteCommand(command="wc -c; exit 3", stdin=b"abc"))
    assert (result.stdout.strip(), result.exit_status, result.stdout_truncated) == (b"3", 3, False)


def test_a_flood_is_cut_at_the_bound() -> None:
    result = run(RemoteCommand(command="yes gpudiag", stdout_limit_bytes=100_000, deadline_s=20))
    assert result.stdout_truncated and len(result.stdout) == 100_000 and result.exit_status is None


def test_the_deadline_ends_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    command = f"sh -c 'echo $$ > {pid_file}; exec sleep 100' & wait"
    with pytest.raises(CommandTimeout, match="no answer within 1 s"):
        run(RemoteCommand(command=command, deadline_s=1.0))
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return
        if state == "Z":
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    raise AssertionError("the grandchild outlived the deadline")
