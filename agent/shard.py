"""Several controllers, one inventory: a stable split of the host list (``--shard I/N``) and the merge of
the JSON reports the shards write (``gpudiag merge``).

A host's shard depends only on its name (a hash), not on its position: adding or removing hosts does not
move the others between shards, so a cron host keeps sweeping the same machines.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from gpudiag.model import Host, SweepReport


class ShardError(ValueError):
    """A bad ``--shard`` value or reports that cannot be merged; the message is one line."""


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` → ``(2, 4)``: shard 2 of 4, counted from 1."""
    index, slash, count = text.partition("/")
    if not slash or not index.isdigit() or not count.isdigit() or not 1 <= int(index) <= int(count):
        raise ShardError(f"--shard {text}: expected I/N with 1 <= I <= N, e.g. 1/4")
    return int(index), int(count)


def shard_of(name: str, count: int) -> int:
    """The shard (1..count) that ``name`` belongs to."""
    digest = hashlib.sha256(name.encode()).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def select_shard(hosts: Sequence[Host], index: int, count: int) -> tuple[Host, ...]:
    """The hosts of shard ``index`` of ``count``, in their original order."""
    return tuple(h for h in hosts if shard_of(h.name, count) == index)


def merge(reports: Sequence[tuple[str, SweepReport]]) -> SweepReport:
    """One report from several ``(source name, report)``; a host in two of them is an error."""
    if not reports:
        raise ShardError("nothing to merge")
    seen: dict[str, str] = {}
    for source, report in reports:
        for host in report.hosts:
            if host.host in seen:
                raise ShardError(f"host {host.host} is in both {seen[host.host]} and {source}")
            seen[host.host] = source
    return SweepReport(
        started_at=min(r.started_at for _, r in reports),
        duration_s=max(r.duration_s for _, r in reports),
        hosts=tuple(h for _, r in reports for h in r.hosts),
    )
