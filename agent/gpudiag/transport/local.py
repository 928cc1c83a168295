"""The local transport: runs the collector on this machine with ``sh -c`` (``gpudiag local``, ``localhost`` in an
inventory), with the same limits as over SSH."""

from __future__ import annotations

import asyncio

from gpudiag.model import Host, RemoteResult
from gpudiag.transport.base import STDERR_LIMIT_BYTES, CommandTimeout, RemoteCommand
from gpudiag.transport.spawn import kill_group, settle, start_process


class _Gathered(asyncio.SubprocessProtocol):
    """What a local process prints: stdout up to its bound, the first STDERR_LIMIT_BYTES of stderr.

    ``cut`` resolves when stdout went past the bound, ``exited`` when the process ended, ``done`` when it
    ended and every pipe is closed (asyncio calls ``connection_lost`` only then)."""

    def __init__(self, limit: int) -> None:
        loop = asyncio.get_running_loop()
        self.limit = limit
        self.stdout, self.stderr = bytearray(), bytearray()
        self.cut: asyncio.Future[None] = loop.create_future()
        self.exited: asyncio.Future[None] = loop.create_future()
        self.done: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 2:
            self.stderr += data[:STDERR_LIMIT_BYTES - len(self.stderr)]
            return
        room = self.limit - len(self.stdout)
        self.stdout += data[:room]
        if len(data) > room and not self.cut.done():
            self.cut.set_result(None)

    def process_exited(self) -> None:
        self.exited.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.done.set_result(None)


class LocalTransport:
    """Runs the command on this machine with ``sh -c``: the same collection, no SSH.

    Every path (an answer, a cut, the deadline, a cancellation) ends the same way: the process group is
    killed if it still runs, its exit is awaited, and the subprocess transport with its three pipes is
    closed, so nothing is left for the garbage collector to warn about."""

    async def run(self, host: Host, command: RemoteCommand) -> RemoteResult:
        loop = asyncio.get_running_loop()
        transport, gathered = await start_process(loop.subprocess_exec(
            lambda: _Gathered(command.stdout_limit_bytes), "sh", "-c", command.command,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True), end=_end_unwanted)
        try:
            stdin = transport.get_pipe_transport(0)
            assert isinstance(stdin, asyncio.WriteTransport)
            stdin.write(command.stdin)  # buffered by the loop; a process that does not read it just exits
            if not command.ends_with_stdin:
                stdin.write_eof()
            await asyncio.wait({gathered.done, gathered.cut}, timeout=command.deadline_s,
                               return_when=asyncio.FIRST_COMPLETED)
            if gathered.cut.done():
                # Past the bound the flood is ended at once; stderr is kept for a moment more, as it may
                # stay open as long as something that left the session lives.
                kill_group(transport.get_pid())
                await asyncio.wait({gathered.done}, timeout=_SETTLE_S)
                return RemoteResult(exit_status=None, stdout=bytes(gathered.stdout), stderr=bytes(gathered.stderr),
                                    stdout_truncated=True)
            if not gathered.done.done():
                raise CommandTimeout(f"no answer within {command.deadline_s:.0f} s; the process was ended")
            return RemoteResult(exit_status=transport.get_returncode(), stdout=bytes(gathered.stdout),
                                stderr=bytes(gathered.stderr))
        finally:
            try:
                if not gathered.done.done():  # still running, or something it started holds a pipe
                    kill_group(transport.get_pid())
                if not gathered.exited.done():
                    # Awaited before close(): close() would otherwise poll() the child itself, racing the
                    # loop's child watcher for its exit status.
                    await asyncio.wait({gathered.exited}, timeout=_SETTLE_S)
            finally:
                transport.close()  # our ends of the pipes too: a process that left the session cannot hold them
            await asyncio.wait({gathered.done}, timeout=_SETTLE_S)

    async def close(self) -> None:
        await settle()  # a process a cancelled run was still creating: ended before the loop closes


_SETTLE_S = 2.0  # past a cut, or once killed: how long the process's exit and its pipes' ends are awaited


async def _end_unwanted(made: tuple[asyncio.SubprocessTransport, _Gathered]) -> None:
    """A process created after its run was cancelled: ended as :meth:`LocalTransport.run` ends one."""
    transport, gathered = made
    try:
        kill_group(transport.get_pid())
        await asyncio.wait({gathered.exited}, timeout=_SETTLE_S)  # before close(), as in run()
    finally:
        transport.close()
