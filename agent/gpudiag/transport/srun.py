"""``--via slurm``: one ``srun`` step runs the collector on every selected node through slurmd's own tree
(an allocation of the operator's when ``SLURM_JOB_ID`` is set, ``--jobid J --overlap`` on a running job's nodes
with ``--slurm-job J``, else a new allocation that must start at once: ``--immediate``). Each node's document
comes back on srun's standard output and is read as a direct sweep's; the nodes srun cannot run on (drained,
down, not responding: their Slurm state says so) and the nodes the step did not reach are swept over SSH in the
same run, and each row says which path read it (``read_via``: ``slurm`` or ``ssh (...why...)``).

The framing survives srun's interleaving: ``--label`` prefixes each line with its task's number, and srun cuts a
line longer than about 1 KiB into labelled pieces (measured: a 20 kB line came back as 1,024-byte pieces, each on
a line of its own), so a document cannot travel as its one JSON line. Each task prints ``@gpudiag-node
$SLURMD_NODENAME`` (set by slurmd in every task) and then its document in base64 (76-column lines, which srun
never cuts); the collector's exit status follows on stderr as ``@gpudiag-exit N``. The bundle travels on stdin,
as over SSH: ``--input=all`` hands srun's stdin to every task, and stdin stays open until srun ends (the
one-shot collector ends with its stdin: :mod:`gpudiag.collect.remote`). Standard library only.
"""

from __future__ import annotations

import asyncio
import binascii
import contextlib
import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpudiag.model import Host, RemoteResult
from gpudiag.transport.base import (
    STDERR_LIMIT_BYTES,
    CommandTimeout,
    RemoteCommand,
    Transport,
    TransportError,
)
from gpudiag.transport.gather import Batch, Gatherer

# Each task: its node's name, then the collector's stdout in base64, then its exit status on stderr.
WRAPPER = ('printf "@gpudiag-node %s\\n" "$SLURMD_NODENAME"; '
           '{ sh -c "$1" gpudiag; printf "@gpudiag-exit %s\\n" "$?" >&2; } | base64')
_LABELLED = re.compile(rb"^\s*(\d+): ?(.*)$")
# Slurm states (sinfo's long form) whose nodes take no new step: they are swept over SSH instead.
UNUSABLE_STATES = ("drain", "down", "fail", "maint", "power", "reboot", "future", "unknown", "not_responding")
_ROUTABLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
KILL_WAIT_S = 3.0


@dataclass(frozen=True, slots=True, kw_only=True)
class SrunOptions:
    """Where the step runs: in job ``job`` (overlapping it), else in the caller's allocation or a new one;
    ``states``: the nodes' Slurm states by name (those that take no step go over SSH)."""

    job: str | None = None
    states: Mapping[str, str] = field(default_factory=dict)
    # node -> its partition: a new allocation lies in one partition, so a step is one per partition (a job's
    # own nodes, --slurm-job, are one step whatever their partitions)
    partitions: Mapping[str, str] = field(default_factory=dict)
    srun: str = "srun"


def unusable(state: str | None) -> bool:
    """Whether a node in Slurm state ``state`` takes no step (``drained``, ``down*``...); None: not known, try."""
    if state is None:
        return False
    lowered = state.lower()
    return lowered.endswith("*") or any(word in lowered for word in UNUSABLE_STATES)


@dataclass(slots=True)
class _Task:
    node: str | None = None
    stdout: list[bytes] = field(default_factory=list)
    size: int = 0
    truncated: bool = False
    stderr: list[bytes] = field(default_factory=list)
    exit_status: int | None = None


def read_step(stdout: bytes, stderr: bytes, limit_bytes: int) -> tuple[dict[str, RemoteResult], list[str]]:
    """srun's labelled output -> each node's result (by its Slurm name), and what srun itself said on stderr
    (its unlabelled lines). Pure: tested on recorded output."""
    tasks: dict[int, _Task] = {}
    for line in stdout.splitlines():
        match = _LABELLED.match(line)
        if match is None:
            continue
        task = tasks.setdefault(int(match[1]), _Task())
        text = match[2]
        if task.node is None and text.startswith(b"@gpudiag-node "):
            task.node = text[len(b"@gpudiag-node "):].decode("utf-8", "replace").strip()
        elif task.size + len(text) > limit_bytes * 4 // 3 + 4:
            task.truncated = True
        else:
            task.stdout.append(text)
            task.size += len(text)
    said: list[str] = []
    for line in stderr.splitlines():
        match = _LABELLED.match(line)
        if match is None:
            said.append(line.decode("utf-8", "replace").strip())
            continue
        task = tasks.setdefault(int(match[1]), _Task())
        if match[2].startswith(b"@gpudiag-exit ") and match[2][14:].strip().isdigit():
            task.exit_status = int(match[2][14:])
        elif sum(len(x) for x in task.stderr) < STDERR_LIMIT_BYTES:
            task.stderr.append(match[2])
    results = {}
    for task in tasks.values():
        if not task.node:
            continue
        try:
            document = binascii.a2b_base64(b"".join(task.stdout))
        except (binascii.Error, ValueError):
            document, task.truncated = b"", True
        results[task.node] = RemoteResult(exit_status=task.exit_status, stdout=document[:limit_bytes],
                                          stderr=b"\n".join(task.stderr), via="slurm",
                                          stdout_truncated=task.truncated or len(document) > limit_bytes)
    return results, [s for s in said if s]


async def _read_bounded(stream: asyncio.StreamReader, bound: int) -> bytes:
    """Everything ``stream`` says until it ends, keeping at most ``bound`` bytes (the rest is read and dropped,
    so srun never blocks on a full pipe)."""
    kept = bytearray()
    while chunk := await stream.read(65536):
        if len(kept) < bound:
            kept += chunk[: bound - len(kept)]
    return bytes(kept)


class SrunTransport:
    """The Transport of ``--via slurm``: each host's ``run`` joins its command's batch, one srun step each;
    ``fallback`` (SSH) reads the nodes the step cannot or did not."""

    def __init__(self, options: SrunOptions, *, fallback: Transport) -> None:
        self.options, self.fallback = options, fallback
        self._gatherer = Gatherer(self._launch)
        self._steps: set[asyncio.Future[None]] = set()

    async def run(self, host: Host, command: RemoteCommand) -> RemoteResult:
        """Run ``command`` on ``host`` in the step of every host that asks for it now (or over SSH)."""
        state = self.options.states.get(host.name)
        if unusable(state):
            return await self._over_ssh(host, command, f"Slurm state {state}")
        if not _ROUTABLE.match(host.name):
            return await self._over_ssh(host, command, "not a Slurm node name")
        return await self._gatherer.run(host, command)

    async def _over_ssh(self, host: Host, command: RemoteCommand, why: str) -> RemoteResult:
        try:
            result = await self.fallback.run(host, command)
        except TransportError as exc:
            raise type(exc)(f"over SSH ({why}): {exc}", reason=exc.reason) from exc
        return dataclasses.replace(result, via=f"ssh ({why})")

    def _launch(self, batch: Batch) -> None:
        step = asyncio.ensure_future(self._step(batch))
        self._steps.add(step)
        step.add_done_callback(self._steps.discard)

    def argv(self, nodes: list[str], partition: str | None = None) -> list[str]:
        """srun's command line for one step over ``nodes``; the collector's command is its last argument."""
        argv = [self.options.srun, "--label", "--input=all", "--quiet", "--kill-on-bad-exit=0",
                "--job-name=gpudiag", f"--nodelist={','.join(nodes)}", f"--nodes={len(nodes)}",
                f"--ntasks={len(nodes)}", "--ntasks-per-node=1"]
        if self.options.job is not None:
            argv += [f"--jobid={self.options.job}", "--overlap"]
        elif not os.environ.get("SLURM_JOB_ID"):
            argv.append("--immediate=10")  # a new allocation starts at once or not at all: the rest go over SSH
            if partition is not None:
                argv.append(f"--partition={partition}")
        return [*argv, "sh", "-c", WRAPPER, "gpudiag"]

    async def _step(self, batch: Batch) -> None:
        if self.options.job is not None or os.environ.get("SLURM_JOB_ID"):
            await self._one_step(batch, batch.pending(), None)
            return
        by_partition: dict[str | None, list[str]] = {}
        for name in batch.pending():
            by_partition.setdefault(self.options.partitions.get(name), []).append(name)
        await asyncio.gather(*(self._one_step(batch, nodes, p) for p, nodes in by_partition.items()))

    async def _one_step(self, batch: Batch, nodes: list[str], partition: str | None) -> None:
        command = batch.command
        said: list[str] = []
        results: dict[str, RemoteResult] = {}
        try:
            stdout, stderr, timed_out = await self._srun(nodes, command, partition)
            results, said = read_step(stdout, stderr, command.stdout_limit_bytes)
        except OSError as exc:
            said, timed_out = [f"cannot run srun: {exc.strerror or exc}"], False
        why = f"srun: {said[-1][:120]}" if said else "srun did not reach it"
        missing = []
        for name in nodes:
            result = results.get(name)
            if result is not None and result.exit_status is not None:
                batch.settle(name, result)
            elif result is not None or timed_out:
                batch.settle(name, CommandTimeout(f"through srun: no answer within {command.deadline_s:.0f} s"))
            else:
                missing.append(name)

        async def over_ssh(name: str) -> None:
            try:
                batch.settle(name, await self._over_ssh(batch.hosts[name], command, why))
            except TransportError as exc:
                batch.settle(name, exc)

        await asyncio.gather(*(over_ssh(name) for name in missing))

    async def _srun(self, nodes: list[str], command: RemoteCommand,
                    partition: str | None) -> tuple[bytes, bytes, bool]:
        """Run the step; stdin stays open until it ends. Killed at the deadline (then ``True``)."""
        proc = await asyncio.create_subprocess_exec(
            *self.argv(nodes, partition), command.command, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(command.stdin)
        bound = (command.stdout_limit_bytes * 4 // 3 + 4096) * len(nodes)
        reads = asyncio.gather(_read_bounded(proc.stdout, bound), _read_bounded(proc.stderr, STDERR_LIMIT_BYTES))
        timed_out = False
        try:
            stdout, stderr = await asyncio.wait_for(asyncio.shield(reads), command.deadline_s)
            await asyncio.wait_for(proc.wait(), KILL_WAIT_S)
        except asyncio.TimeoutError:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()  # srun cancels the step's tasks on SIGTERM
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proc.wait(), KILL_WAIT_S)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            stdout, stderr = await reads
        finally:
            proc.stdin.close()
            if proc.returncode is None:  # cancelled (the sweep was stopped): the step ends with srun
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
        return stdout, stderr, timed_out

    async def close(self) -> None:
        """Stop the steps still running, then the SSH fallback."""
        for step in list(self._steps):
            step.cancel()
        if self._steps:
            await asyncio.wait(list(self._steps))
        await self.fallback.close()
