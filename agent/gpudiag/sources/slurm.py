"""Slurm as a source of hosts: the nodes of a partition, of a job, of a node list, in some states.

Slurm's own commands decide, through argv lists (never a shell): ``scontrol show hostnames`` expands a node
list and ``squeue -j`` gives a job's nodes, then one ``sinfo -a -h -N -o %N|%o|%T|%P|%E`` gives each node's
address, state, partitions and reason, and ``sinfo -t`` filters by state with Slurm's own state names.

Each node becomes a :class:`~gpudiag.model.Host` named after the node. Its address is the node's
``NodeAddr`` when that differs from the name (it is where slurmctld itself reaches the node); otherwise the
name is left to ``~/.ssh/config`` and DNS. When an inventory is given too, its settings for a node of the same
name win (see :func:`hosts_for`).

The node's state and reason come back with it (:class:`SlurmNode`), so the report can say that a node
with a critical finding is already drained, and the drain actions (:mod:`gpudiag.audit.drain`) can leave alone
a node someone else drained. ``scontrol``/``sinfo`` run through a :class:`Runner`: the real one is
:class:`SubprocessRunner`; the tests also pass a function that replays recorded outputs.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from gpudiag.model import Host
from gpudiag.model.request import SlurmSelection
from gpudiag.sources.hostlist import fold

GPUDIAG_REASON = "gpudiag:"  # a node drained by gpudiag carries a reason that starts so
SINFO_FORMAT = "%N|%o|%T|%P|%E"  # name, NodeAddr, long state, partition, reason (last: it may hold "|")
_NO_REASON = ("none", "")


class SlurmError(Exception):
    """Slurm cannot give the nodes asked for (not installed, an unknown job or partition); one line."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandResult:
    """What one Slurm client command returned."""

    returncode: int
    stdout: str
    stderr: str


class Runner(Protocol):
    """Runs one Slurm client command, given as argv."""

    def __call__(self, argv: Sequence[str]) -> CommandResult: ...


class SubprocessRunner:
    """The real runner: ``subprocess.run`` without a shell, under a timeout; ``SLURM_CONF`` etc. inherited."""

    def __init__(self, timeout_s: float = 60.0, env: Mapping[str, str] | None = None) -> None:
        self.timeout_s = timeout_s
        self.env = dict(env) if env is not None else None

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        try:
            done = subprocess.run(list(argv), capture_output=True, text=True, timeout=self.timeout_s,
                                  env=self.env, check=False)
        except FileNotFoundError as exc:
            raise SlurmError(f"{argv[0]} not found: is Slurm installed on this machine?") from exc
        except subprocess.TimeoutExpired as exc:
            raise SlurmError(f"{' '.join(argv[:3])} did not answer within {self.timeout_s:.0f} s") from exc
        return CommandResult(returncode=done.returncode, stdout=done.stdout, stderr=done.stderr)



@dataclass(frozen=True, slots=True, kw_only=True)
class SlurmNode:
    """One node as Slurm sees it: sinfo's long state (``idle``, ``drained``, ``down*``) and its reason."""

    name: str
    address: str | None  # NodeAddr; None when it is the name itself
    state: str
    reason: str | None
    partitions: tuple[str, ...] = ()

    @property
    def drained(self) -> bool:
        """Whether the node is drained or draining (Slurm's DRAIN flag)."""
        return "drain" in self.state.lower()

    @property
    def drained_by_gpudiag(self) -> bool:
        return self.drained and (self.reason or "").startswith(GPUDIAG_REASON)


def split_list(values: Sequence[str]) -> tuple[str, ...]:
    """``["drain,down", "idle"]`` → ``("drain", "down", "idle")``: a repeatable flag that also takes commas."""
    return tuple(dict.fromkeys(part.strip() for value in values for part in value.split(",") if part.strip()))


def hostnames(nodelist: str, run: Runner) -> tuple[str, ...]:
    """Slurm's own expansion of a node list (``scontrol show hostnames``), in its order."""
    out = checked(run, ["scontrol", "show", "hostnames", nodelist], f"--slurm-nodelist {nodelist}")
    return tuple(dict.fromkeys(line.strip() for line in out.splitlines() if line.strip()))


def job_nodes(job: str, run: Runner) -> tuple[str, ...]:
    """The nodes allocated to ``job`` (``squeue -h -j JOB -o %N``), expanded; an error when it has none."""
    if not job.replace("_", "").isdigit():
        raise SlurmError(f"--slurm-job {job}: expected a job id such as 81723 (or 81723_4 for an array task)")
    nodelist = checked(run, ["squeue", "-h", "-j", job, "-o", "%N"], f"--slurm-job {job}").strip()
    names = [n for line in nodelist.splitlines() for n in ([line.strip()] if line.strip() else [])]
    if not names:
        raise SlurmError(f"--slurm-job {job}: the job has no nodes allocated (pending or finished)")
    return hostnames(",".join(names), run)


def parse_sinfo(text: str) -> tuple[SlurmNode, ...]:
    """Rows of ``sinfo -h -N -o %N|%o|%T|%P|%E`` as nodes: one per node, its partitions gathered in order."""
    nodes: dict[str, SlurmNode] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("|", 4)
        if len(parts) != 5:
            raise SlurmError(f"sinfo printed a line gpudiag cannot read: {line[:120]!r}")
        name, address, state, partition, reason = (p.strip() for p in parts)
        partition = partition.rstrip("*")  # sinfo marks the default partition "gpu*"
        known = nodes.get(name)
        if known is not None:
            if partition and partition not in known.partitions:
                nodes[name] = dataclasses.replace(known, partitions=known.partitions + (partition,))
            continue
        nodes[name] = SlurmNode(name=name, address=address if address and address != name else None,
                                state=state, reason=None if reason in _NO_REASON else reason,
                                partitions=(partition,) if partition else ())
    return tuple(nodes.values())


def select_nodes(selection: SlurmSelection, run: Runner | None = None) -> tuple[SlurmNode, ...]:
    """The nodes ``selection`` asks for, in sinfo's order; raises ``SlurmError`` (one line) when Slurm says no."""
    run = run or SubprocessRunner()
    wanted: tuple[str, ...] | None = None
    if selection.nodelist:
        wanted = hostnames(selection.nodelist, run)
    if selection.job:
        of_job = job_nodes(selection.job, run)
        wanted = of_job if wanted is None else tuple(n for n in wanted if n in set(of_job))
        if not wanted:
            raise SlurmError(f"--slurm-job {selection.job}: none of its nodes is in --slurm-nodelist")
    argv = ["sinfo", "-a", "-h", "-N", "-o", SINFO_FORMAT]
    if wanted is not None:
        argv += ["-n", fold(wanted)]
    nodes = parse_sinfo(checked(run, argv, "sinfo"))
    if wanted is not None:
        unknown = [n for n in wanted if n not in {node.name for node in nodes}]
        if unknown:
            raise SlurmError(f"not Slurm nodes (or in no partition): {fold(unknown)}")
    for partition in selection.partitions:
        if not any(partition in node.partitions for node in nodes):
            raise SlurmError(f"--slurm-partition {partition}: no such partition (or it has no nodes)")
    if selection.partitions:
        nodes = tuple(n for n in nodes if set(n.partitions) & set(selection.partitions))
    if selection.states:
        argv = ["sinfo", "-a", "-h", "-N", "-o", "%N", "-t", ",".join(selection.states)]
        if nodes:
            argv += ["-n", fold(n.name for n in nodes)]
        in_state = set(checked(run, argv, f"--slurm-state {','.join(selection.states)}").split())
        nodes = tuple(n for n in nodes if n.name in in_state)
    return nodes


def hosts_for(nodes: Sequence[SlurmNode], known: Sequence[Host] = (), *, user: str | None = None,
              port: int | None = None, identity_file: str | None = None) -> tuple[Host, ...]:
    """One ``Host`` per node. A host of the same name in ``known`` (the inventory) is used as it is; any
    other node gets its ``NodeAddr`` (when it differs from its name), the partitions as groups, and the
    command line's user, port and key."""
    by_name = {host.name: host for host in known}
    return tuple(
        by_name.get(node.name)
        or Host(name=node.name, address=node.address, user=user, port=port, identity_file=identity_file,
                groups=node.partitions)
        for node in nodes
    )


def checked(run: Runner, argv: list[str], what: str) -> str:
    """stdout of ``argv``; a non-zero exit is a ``SlurmError`` quoting the first line Slurm wrote."""
    result = run(argv)
    if result.returncode != 0:
        said = next((line.strip() for line in (result.stderr + "\n" + result.stdout).splitlines()
                     if line.strip() and "valid states:" not in line), f"exit status {result.returncode}")
        raise SlurmError(f"{what}: {argv[0]} says: {said}")
    return result.stdout
