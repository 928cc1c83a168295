"""Several controllers, one inventory: a stable split of the host list (``--shard I/N``) and the merge of
the JSON reports the shards write (``gpudiag merge``).

A host's shard depends only on its name (a hash), not on its position: adding or removing hosts does not
move the others between shards, so a cron host keeps sweeping the same machines.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence

from gpudiag.model import Host, SweepReport


class ShardError(ValueError):
    """A bad ``--shard`` value or reports that cannot be merged; the message is one line."""


def parse_shard(text: str, environ: Mapping[str, str] | None = None) -> tuple[int, int]:
    """``"2/4"`` → ``(2, 4)``: shard 2 of 4, counted from 1; ``"auto"``: this Slurm array task's shard."""
    if text == "auto":
        return shard_from_slurm_array(os.environ if environ is None else environ)
    index, slash, count = text.partition("/")
    if not slash or not index.isdigit() or not count.isdigit() or not 1 <= int(index) <= int(count):
        raise ShardError(f"--shard {text}: expected I/N with 1 <= I <= N, e.g. 1/4")
    return int(index), int(count)


def shard_from_slurm_array(environ: Mapping[str, str]) -> tuple[int, int]:
    """``--shard auto`` in a Slurm job array: task ``SLURM_ARRAY_TASK_ID`` of ``SLURM_ARRAY_TASK_COUNT``.

    The tasks must be numbered without gaps (``--array=0-15`` or ``1-16``; a ``%4`` limit is fine): task ``MIN``
    is shard 1. A stepped or listed array (``0-15:2``, ``1,5,9``) would leave shards no task sweeps, so it is
    refused, as is a run outside a job array.
    """
    names = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX")
    values = [environ.get(name, "") for name in names]
    if not values[0]:
        raise ShardError("--shard auto: not in a Slurm job array (SLURM_ARRAY_TASK_ID is not set); "
                         "submit with sbatch --array=0-N, or give --shard I/N")
    if not all(v.isdigit() for v in values):
        got = ", ".join(f"{n}={v!r}" for n, v in zip(names, values, strict=True))
        raise ShardError(f"--shard auto: cannot read the Slurm array variables ({got})")
    task, count, low, high = (int(v) for v in values)
    if count < 1 or high - low + 1 != count or not low <= task <= high:
        raise ShardError(f"--shard auto: the array tasks must be numbered without gaps (e.g. --array=0-15); "
                         f"got {count} tasks from {low} to {high}")
    return task - low + 1, count


def shard_of(name: str, count: int, salt: str = "") -> int:
    """The shard (1..count) that ``name`` belongs to. A ``salt`` makes a split independent of the unsalted one:
    ``--workers`` splits a ``--shard`` again, and the same hash would send all of shard 1/2 to worker 1 of 2."""
    digest = hashlib.sha256((f"{salt}\0{name}" if salt else name).encode()).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def select_shard(hosts: Sequence[Host], index: int, count: int, salt: str = "") -> tuple[Host, ...]:
    """The hosts of shard ``index`` of ``count``, in their original order."""
    return tuple(h for h in hosts if shard_of(h.name, count, salt) == index)


def merge(reports: Sequence[tuple[str, SweepReport]]) -> SweepReport:
    """One report from several ``(source name, report)``; a host in two of them is an error. The merged
    report's check settings are the shards' when they all say the same ones, else None (not one set: each
    finding's evidence still names the thresholds that decided it)."""
    from gpudiag.sweep.assemble import assemble_report

    if not reports:
        raise ShardError("nothing to merge")
    seen: dict[str, str] = {}
    for source, report in reports:
        for host in report.hosts:
            if host.host in seen:
                raise ShardError(f"host {host.host} is in both {seen[host.host]} and {source}")
            seen[host.host] = source
    return assemble_report(
        [h for _, r in reports for h in r.hosts],
        started_at=min(r.started_at for _, r in reports),
        duration_s=max(r.duration_s for _, r in reports),
        settings=settings.pop() if len(settings := {r.settings for _, r in reports}) == 1 else None,
        groups=None,  # each shard judged its own part: merged, they are not judged again
        fleet_judged=all(r.fleet_judged for _, r in reports),
        jobs=tuple(j for _, r in reports for j in r.jobs),
        notes=tuple(n for _, r in reports for n in r.notes),
    )
