"""The GPUs Slurm gave each running job on the swept nodes: :func:`read_allocations` (two Slurm commands, argv
lists, no shell) and the pure :func:`parse_job_details` behind it, one :class:`~gpudiag.model.JobAllocation` per
job and node.

``scontrol show job -d -o`` prints one line per job; with ``-d`` ("provide additional details", scontrol(1))
the line carries, after ``JOB_GRES=``, one ``Nodes=<hostlist> CPU_IDs=<cpus> Mem=<MiB> GRES=<detail>`` group
per set of nodes that share one allocation (Slurm's ``src/api/job_info.c``, ``_sprint_job_info``; a hostlist
such as ``gpu[01-02]`` when several nodes got the same). ``<detail>`` is built per node by
``gres_ctld_job_build_details`` (``src/slurmctld/gres_ctld.c``): ``name[:type]:count(IDX:bitmap)`` for each
GRES, comma separated, the bitmap in Slurm's ``bit_fmt`` form (``0-1,4``); ``name[:type](CNT:n)`` where no
index is known. So: ``GRES=gpu:2(IDX:0-1)``, ``GRES=gpu:h200:2(IDX:0,2)``,
``GRES=gpu:a100:1(IDX:0),gpu:v100:1(IDX:2)``. Recorded outputs of Slurm 22.05: ``tests/data/slurm/``.

The record is read defensively, as any text a user can shape: a job's name (``-J``) and comment are free text,
may hold newlines and may imitate Slurm's fields (tried on Slurm 22.05: ``-J $'x\\nJobId=9 Nodes=...'`` is
accepted and printed as is). So a record counts only when its job id is one ``squeue`` lists as running on the
swept nodes with the same user, when each field read (``UserId``, ``JobState``, ``StartTime``, ``Partition``,
``JOB_GRES``, ``MinCPUsNode``) appears in it exactly once, and the ``Nodes=`` groups are taken only between
``JOB_GRES=`` and ``MinCPUsNode=``. A record that fails is left out and named (:attr:`JobDetails.unreadable`),
never guessed at; a job id printed twice is left out altogether.

Slurm's GPU index (the ``IDX``) is the GPU's place in the node's ``gres.conf`` ``File=`` list (or in
AutoDetect's order, by PCI bus id); gpudiag takes it as the ``nvidia-smi`` index, which is the same order
wherever ``gres.conf`` lists ``/dev/nvidia0`` upward, as it almost always does.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from gpudiag.model import JobAllocation
from gpudiag.model.ssh_target import HostPatternError
from gpudiag.sources.hostlist import expand, fold
from gpudiag.sources.slurm import Runner, SlurmError, SubprocessRunner, checked

SCONTROL_JOBS = ("scontrol", "show", "job", "-d", "-o")
SQUEUE_FORMAT = "%A|%u"  # the job's own id (an array task's too) and its user: nothing a user can shape
GPU_GRES = "gpu"

_ONCE = ("UserId", "JobState", "StartTime", "Partition", "MinCPUsNode")  # in every record, once
_JOB_ID = re.compile(r"JobId=(\d+) ")
_FIELDS = re.compile(rf"(?<!\S)({'|'.join((*_ONCE, 'JOB_GRES'))})=(\S*)")  # one pass over a record
_NODES = re.compile(r"(?<!\S)Nodes=(\S+) CPU_IDs=\S* Mem=\d+ GRES=(\S*)")
_GRES_ITEM = re.compile(r"([^:,()]+)(?::([^:,()]+))?(?::(\d+))?\((IDX|CNT):([^)]*)\)")
_NOT_KNOWN = ("", "Unknown", "None", "N/A", "(null)")


@dataclass(frozen=True, slots=True, kw_only=True)
class JobDetails:
    """What :func:`parse_job_details` read: each running job's GPUs per node, and the jobs whose record it
    could not read unambiguously (one phrase each: ``"job 5: ..."``)."""

    allocations: tuple[JobAllocation, ...] = ()
    unreadable: tuple[str, ...] = ()

    @property
    def note(self) -> str | None:
        """One line for the operator about the jobs left out (None: none was)."""
        if not self.unreadable:
            return None
        said = "; ".join(self.unreadable)
        return f"Slurm: {len(self.unreadable)} jobs' GPU allocations left out ({said[:300]})"


def gpu_indexes(detail: str) -> tuple[int, ...]:
    """The GPU indexes of one node's GRES detail: ``gpu:h200:2(IDX:0,2)`` → (0, 2); every ``gpu`` item,
    whatever its type; other GRES (``mps``, ``shard``) and a ``(CNT:n)`` item without indexes give none.
    Raises ``ValueError`` for an index list that is not Slurm's ``bit_fmt`` form."""
    found: dict[int, None] = {}
    for match in _GRES_ITEM.finditer(detail):
        name, _type, _count, kind, body = match.groups()
        if name != GPU_GRES or kind != "IDX" or body in _NOT_KNOWN:
            continue
        for part in body.split(","):
            low, _, high = part.partition("-")
            if not low.isdigit() or (high and not high.isdigit()):
                raise ValueError(f"GRES index list {body!r}")
            found.update(dict.fromkeys(range(int(low), int(high or low) + 1)))
    return tuple(sorted(found))


def _record(line: str, job_id: str) -> tuple[dict[str, str], list[tuple[str, str]]] | str:
    """The fields and (nodes, GRES detail) groups of one job's line, or why it cannot be read."""
    fields: dict[str, str] = {}
    seen: dict[str, int] = {}
    at: dict[str, tuple[int, int]] = {}
    for match in _FIELDS.finditer(line):
        key = match.group(1)
        seen[key] = seen.get(key, 0) + 1
        fields.setdefault(key, match.group(2))
        at.setdefault(key, match.span())
    for key in (*_ONCE, "JOB_GRES"):
        if seen.get(key, 0) > 1 or (key in _ONCE and key not in seen):
            return f"job {job_id}: {key} appears {seen.get(key, 0)} times in its record"
    if fields["JobState"] != "RUNNING":
        return fields, []
    start, end = at.get("JOB_GRES"), at["MinCPUsNode"]  # a running job has JOB_GRES (printed with the nodes)
    if start is None or end[0] < start[1]:
        return f"job {job_id}: its GRES details are not where Slurm prints them"
    return fields, _NODES.findall(line, start[1], end[0])


def parse_job_details(text: str, running: Mapping[str, str] | None = None,
                      nodes: Collection[str] | None = None) -> JobDetails:
    """The GPUs of each running job in ``text`` (``scontrol show job -d -o``), one allocation per job and node.

    ``running``: job id -> user as ``squeue`` lists the running jobs (None: every job whose ``JobState`` is
    RUNNING counts, for recorded outputs); ``nodes``: only these nodes (None: all). A job with no GPU on a
    node gives no allocation there; a pending or finished job gives none."""
    lines = [line for line in text.splitlines() if _JOB_ID.match(line)]
    counts: dict[str, int] = {}
    for line in lines:
        job = _JOB_ID.match(line).group(1)  # type: ignore[union-attr]
        counts[job] = counts.get(job, 0) + 1
    out: list[JobAllocation] = []
    unreadable: list[str] = []
    for line in lines:
        job_id = _JOB_ID.match(line).group(1)  # type: ignore[union-attr]
        if running is not None and job_id not in running:
            continue  # not running on the swept nodes (or a line a job's name made up)
        if counts[job_id] > 1:
            unreadable.append(f"job {job_id}: printed {counts[job_id]} times (a job name imitates it)")
            continue
        read = _record(line, job_id)
        if isinstance(read, str):
            unreadable.append(read)
            continue
        fields, groups = read
        if fields["JobState"] != "RUNNING":
            continue
        user = fields["UserId"].split("(", 1)[0]
        if running is not None and running[job_id] != user:
            unreadable.append(f"job {job_id}: its record names user {user}, squeue {running[job_id]}")
            continue
        name = line.split(" JobName=", 1)[1].split(" UserId=", 1)[0] if " JobName=" in line else None
        try:
            for nodelist, detail in groups:
                gpus = gpu_indexes(detail)
                for node in expand(nodelist) if gpus else ():
                    if nodes is None or node in nodes:
                        out.append(JobAllocation(
                            job_id=job_id, node=node, gpus=gpus, user=user if user not in _NOT_KNOWN else None,
                            started_at=_known(fields["StartTime"]), partition=_known(fields["Partition"]),
                            name=name))
        except (ValueError, HostPatternError) as exc:
            unreadable.append(f"job {job_id}: {exc}")
    return JobDetails(allocations=tuple(out), unreadable=tuple(dict.fromkeys(unreadable)))


def _known(value: str) -> str | None:
    return None if value in _NOT_KNOWN else value


def parse_squeue(text: str) -> dict[str, str]:
    """``squeue -h -o %A|%u`` → job id -> user."""
    out = {}
    for line in text.splitlines():
        job, sep, user = line.strip().partition("|")
        if sep and job.isdigit():
            out[job] = user
    return out


def read_allocations(nodes: Collection[str], run: Runner | None = None) -> JobDetails:
    """The GPUs each job running on ``nodes`` was given there: ``squeue`` lists the running jobs on the nodes,
    ``scontrol show job -d -o`` gives their GPU indexes. Raises ``SlurmError`` (one line) when Slurm says no."""
    if not nodes:
        return JobDetails()
    run = run or SubprocessRunner()
    running = parse_squeue(checked(run, ["squeue", "-h", "-t", "RUNNING", "-w", fold(nodes), "-o", SQUEUE_FORMAT],
                                    "the running jobs"))
    if not running:
        return JobDetails()
    text = checked(run, list(SCONTROL_JOBS), "the jobs' GPUs")
    return parse_job_details(text, running, set(nodes))


def allocations_or_failure(nodes: Collection[str], run: Runner | None = None) -> tuple[JobDetails, str | None]:
    """:func:`read_allocations` for a sweep, which goes on whatever Slurm says: the allocations, or none and
    the one line that says why Slurm could not be asked."""
    try:
        return read_allocations(nodes, run), None
    except (SlurmError, OSError, ValueError) as exc:  # OSError: not allowed to run; ValueError: not UTF-8
        return JobDetails(), f"Slurm's GPU allocations were not read ({exc}): this sweep cannot tell GPU_ALLOCATED_IDLE"


__all__ = ["SCONTROL_JOBS", "JobDetails", "SlurmError", "allocations_or_failure", "gpu_indexes", "parse_job_details",
           "parse_squeue", "read_allocations"]
