"""How many hosts this process can have in flight: the open-file limit, raised toward the hard limit where
it can be, and the window lowered to what fits where it cannot (``ulimit -n 256`` with 256 hosts in flight
made 45 of 300 healthy hosts "unreachable: Too many open files": the controller's limit, not theirs).

Standard library only; on a platform without :mod:`resource` the window is what was asked.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

# Each host in flight holds one TCP socket (measured: 50 loopback hosts in flight, 59 descriptors in all; a
# local host's pipes and accept-new's second connection are brief): what this misses, the runner waits out.
FILES_PER_HOST = 1
# Beside the hosts: files read during the sweep (known_hosts, keys, ssh_config, the passwd lookup, --raw-dir),
# what a log search opens, a local host's pipes.
FILES_RESERVED = 16


def files_in_use() -> int:
    """The file descriptors this process holds now (Linux: /proc/self/fd; elsewhere /dev/fd, or a guess)."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return max(0, len(os.listdir(folder)) - 1)  # less the one listdir itself held open
        except OSError:
            continue
    return 16


def _raised_soft(needed: int) -> tuple[int, int]:
    """The soft open-file limit, first raised toward ``needed`` (up to the hard limit), and the hard one."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return soft, hard
    raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
        soft = raised
    except (ValueError, OSError):  # a platform that caps it lower (macOS: OPEN_MAX) keeps the soft limit
        pass
    return soft, hard


def window_for(concurrency: int) -> tuple[int, str | None]:
    """The hosts to keep in flight for ``concurrency`` asked, and one line to tell the operator when it is
    fewer: the soft open-file limit is first raised toward what ``concurrency`` needs (up to the hard limit)."""
    try:
        import resource
    except ImportError:  # not on this platform
        return concurrency, None
    in_use = files_in_use()
    needed = in_use + FILES_RESERVED + concurrency * FILES_PER_HOST
    soft, hard = _raised_soft(needed)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return concurrency, None
    window = max(1, (soft - in_use - FILES_RESERVED) // FILES_PER_HOST)
    if window >= concurrency:
        return concurrency, None
    return window, (f"the open-file limit ({soft}, hard {hard}) fits {window} hosts in flight, not {concurrency}: "
                    f"sweeping {window} at a time (ulimit -n {needed} lets all {concurrency} run)")


@dataclass(frozen=True, slots=True, kw_only=True)
class KeptFit:
    """How many of watch's (or the exporter's) connections stay open between refreshes within the open-file
    limit, and how many hosts a refresh has in flight; ``note``: one line for the operator when not all fit."""

    kept: int
    window: int
    note: str | None = None


def kept_for(hosts: int, concurrency: int) -> KeptFit:
    """The kept connections that fit for ``hosts`` (each holds a descriptor for the whole run, beside what a
    refresh has in flight), the soft limit first raised toward what all of them need. When they do not all fit,
    a quarter of what is free is left to the hosts that connect afresh each refresh, a few at a time, and the
    rest is kept: ``ulimit -n 256`` with 300 hosts made watch die of EMFILE and the exporter's /metrics hang."""
    try:
        import resource
    except ImportError:  # not on this platform
        return KeptFit(kept=hosts, window=concurrency)
    in_use = files_in_use()
    needed = in_use + FILES_RESERVED + hosts * FILES_PER_HOST
    soft, hard = _raised_soft(needed)
    free = (soft - in_use - FILES_RESERVED) // FILES_PER_HOST
    if soft == resource.RLIM_INFINITY or free >= hosts:
        return KeptFit(kept=hosts, window=concurrency)
    window = max(1, min(concurrency, free // 4))
    kept = max(0, free - window)
    return KeptFit(kept=kept, window=window, note=(
        f"the open-file limit ({soft}, hard {hard}) keeps {kept} of {hosts} connections open: the other "
        f"{hosts - kept} hosts connect afresh each refresh, {window} at a time (ulimit -n {needed} keeps all)"))
