"""SIGINT and SIGTERM at any moment of a sweep's start (issue 23, item 2): while Python imports gpudiag, while
the inventory is read, while many handshakes with the loopback sshd are under way, and as they complete.

Whatever the moment, gpudiag ends (a cancellation that lands as a connection completes was once swallowed by
``asyncio.wait_for`` inside asyncssh's connect, and that host's collector then ran to its end), prints no
traceback and no "never awaited" warning, and leaves nothing of its collectors running on the nodes.

The collectors here sample for 60 s, so a host whose cancellation is lost keeps gpudiag running far past the
bound below; the bound itself is generous (a loaded CI machine): it tells "ended" from "still running".
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gpudiag.sweep.runner import SweepOptions, collector_command
from gpudiag.transport.ssh import SshOptions, SshTransport
from loopback import commands_of

# Many SSH handshakes (or a browser) at once: one worker runs the "bursts" group, one test after another
# (pyproject.toml: --dist loadgroup), so no two bursts share the two cores and read as timeouts.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("bursts")]
REPO = Path(__file__).resolve().parents[2]
ENDED_S = 20.0  # after the signal: gpudiag has ended (a lost cancellation holds it ~60 s, the collectors' time)
NODE_CLEAN_S = 2.0  # after gpudiag ended: nothing it started is left on the nodes
HOSTS = 50
# From the start of gpudiag's own code (before it, in site, runpy or the search for gpudiag.__main__, a signal
# is the interpreter's, which prints its traceback whatever the program runs): gpudiag's imports (0.2-1 s on a
# loaded machine), the inventory and keys.
STARTUP_OFFSETS_S = (0.0, 0.03, 0.1, 0.2, 0.4)
# From the first session seen on a node: the other handshakes under way and completing, the first collectors.
HANDSHAKE_OFFSETS_S = (0.0, 0.01, 0.03, 0.1, 0.3, 1.0, 2.0)


class Started:
    """``gpudiag sweep`` started under ``-X importtime``, its stderr read as it comes: each module's import time
    is a line, and the one for ``gpudiag.cli`` (the first module ``gpudiag.__main__`` imports) says that
    Python's own start-up is over and gpudiag's code runs."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-X", "importtime", *argv], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, cwd=REPO, env=env)
        self.lines: list[str] = []
        self.python_started = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            if line.rsplit("|", 1)[-1].strip() == "gpudiag.cli":
                self.python_started.set()

    def stderr(self) -> str:
        """What it said, less the import times."""
        self.reader.join(timeout=5)
        if self.proc.stderr is not None and not self.reader.is_alive():
            self.proc.stderr.close()
        return "".join(line for line in self.lines if not line.startswith("import time:"))

    def fail(self, why: str) -> None:
        self.proc.kill()
        self.proc.wait()
        pytest.fail(f"{why}: {self.stderr()[-2000:]}")


def first_session(cluster, before: set[int], run: Started) -> None:  # type: ignore[no-untyped-def]
    """Return once a session of this run is seen on a node (gpudiag has logged in somewhere)."""
    deadline = time.monotonic() + 60
    while not cluster.session_pids() - before:
        if run.proc.poll() is not None or time.monotonic() > deadline:
            run.fail(f"no session reached a node (exit {run.proc.poll()})")
        time.sleep(0.005)


@pytest.mark.parametrize(("after", "offset_s"), [*(("start", o) for o in STARTUP_OFFSETS_S),
                                                 *(("login", o) for o in HANDSHAKE_OFFSETS_S)],
                         ids=[*(f"start+{o:g}s" for o in STARTUP_OFFSETS_S),
                              *(f"login+{o:g}s" for o in HANDSHAKE_OFFSETS_S)])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_a_signal_at_any_moment_ends_every_host(sshd_cluster, tmp_path: Path, signum: int,  # type: ignore[no-untyped-def]
                                                 after: str, offset_s: float) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(sshd_cluster.inventory_defaults() + "hosts:\n" + "".join(
        f"  h{i:02d}: {{address: {a}}}\n" for i, a in enumerate(sshd_cluster.extra_addresses[:HOSTS])))
    before = sshd_cluster.session_pids()
    env = {**os.environ, "PYTHONWARNINGS": "default"}  # a "never awaited" RuntimeWarning is printed, not hidden
    run = Started(["-m", "gpudiag", "sweep", "-i", str(inventory), "--format", "json", "--samples", "120",
                   "--interval", "0.5", "--timeout", "150", "--no-progress"], env)
    if after == "login":
        first_session(sshd_cluster, before, run)
    elif not run.python_started.wait(60):
        run.fail("Python did not start")
    time.sleep(offset_s)
    run.proc.send_signal(signum)
    try:
        run.proc.wait(timeout=ENDED_S)
    except subprocess.TimeoutExpired:
        run.fail(f"gpudiag had not ended {ENDED_S:g} s after {signal.Signals(signum).name} at {after}+{offset_s} s")
    err = run.stderr()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "never awaited" not in err, err
    assert run.proc.returncode in (128 + signum, -signum), err  # a signal before its handler: the default action
    left = sshd_cluster.sessions_left(before, wait_s=NODE_CLEAN_S)
    assert not left, f"{len(left)} processes still run on the nodes: {commands_of(left)}"


def _is_asyncssh_connect(task: asyncio.Task[object]) -> bool:
    """asyncssh's own connect task: the one its ``connect`` awaits through ``asyncio.wait_for``."""
    code = getattr(task.get_coro(), "cr_code", None)
    return code is not None and code.co_name == "_connect" and code.co_filename.endswith(
        os.path.join("asyncssh", "connection.py"))


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="from Python 3.12 asyncio.wait_for awaits in the caller's "
                    "own task (asyncio.timeout): there is no connect task, and no moment to lose a cancellation in")
def test_a_cancellation_as_the_connection_completes_is_not_lost(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    """The moment of the lost cancellations, made exact: the host's task is cancelled by a callback of asyncssh's
    connect task as that task completes (nothing of asyncssh is replaced: the callback only watches it). Before
    the fix ``wait_for`` returned the connection to the cancelled task, which ran the 60 s collector."""
    host = sshd_cluster.extra_hosts(1)[0]
    before = sshd_cluster.session_pids()
    command = collector_command(SweepOptions(samples=120, interval_s=0.5, deadline_s=150))

    async def scenario() -> tuple[bool, bool]:
        transport = SshTransport(SshOptions(ssh_config=[], connect_timeout_s=10))
        run = asyncio.ensure_future(transport.run(host, command))
        deadline = asyncio.get_running_loop().time() + 30
        while not (inner := [t for t in asyncio.all_tasks() if _is_asyncssh_connect(t)]):
            assert asyncio.get_running_loop().time() < deadline and not run.done(), "no connect was seen"
            await asyncio.sleep(0.001)
        inner[0].add_done_callback(lambda _: run.cancel())
        await asyncio.wait({run}, timeout=ENDED_S)
        ended, cancelled = run.done(), run.cancelled()
        run.cancel()  # before the fix: the collector runs, and this ends it
        await asyncio.wait({run})
        await transport.close()
        return ended, cancelled

    ended, cancelled = asyncio.run(scenario())
    assert ended and cancelled, "the cancelled host carried on with its collector"
    left = sshd_cluster.sessions_left(before, wait_s=NODE_CLEAN_S)
    assert not left, f"{len(left)} processes still run on the node: {commands_of(left)}"
