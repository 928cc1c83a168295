"""A partial run's Prometheus textfile, merged with the one it replaces. Pure: text in, text out.

A run of some of the hosts (``--limit``, ``--exclude``, ``--shard``) knows nothing new of the others; writing
only its own hosts would make every other host's findings and its ``gpudiag_host_up 0`` vanish from
Prometheus until the next full run, and an alert on a dead node would resolve by itself. So the other hosts'
samples are kept as the file had them, each marked: ``gpudiag_host_carried 1`` and the time of the sweep
that read it (``gpudiag_host_last_swept_timestamp_seconds``, from the old file; from its
``gpudiag_run_timestamp_seconds`` for a file written before that metric), so that ``time() - ...`` says how
old it is. The run-wide metrics (``gpudiag_run_*``) are the new run's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# A sample line of a per-host family: gpudiag writes ``host`` as the first label of each (escaped as the
# text format says: \\, \" and \n inside the quotes).
_HOST_SAMPLE = re.compile(r'^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)\{host="(?P<host>(?:[^"\\]|\\.)*)"')
_RUN_TIME = re.compile(r"^gpudiag_run_timestamp_seconds (?P<value>\S+)$")
LAST_SWEPT = "gpudiag_host_last_swept_timestamp_seconds"
CARRIED = "gpudiag_host_carried"


def _escaped(host: str) -> str:
    from gpudiag.report.prometheus import escape_label

    return escape_label(host)


def _kept(old_text: str, swept: frozenset[str]) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The old file's sample lines of hosts not swept, by family; and each such host's last-swept time."""
    swept_labels = {_escaped(host) for host in swept}
    by_family: dict[str, list[str]] = {}
    last_swept: dict[str, str] = {}
    run_time: str | None = None
    for line in old_text.splitlines():
        if line.startswith("#"):
            continue
        run = _RUN_TIME.match(line)
        if run is not None:
            run_time = run.group("value")
            continue
        match = _HOST_SAMPLE.match(line)
        if match is None or match.group("host") in swept_labels:
            continue
        name, host = match.group("name"), match.group("host")
        if name == LAST_SWEPT:
            last_swept[host] = line.rsplit(" ", 1)[-1]
        elif name != CARRIED:
            by_family.setdefault(name, []).append(line)
    hosts = {m.group("host") for lines in by_family.values() for line in lines
             if (m := _HOST_SAMPLE.match(line)) is not None}
    when = {host: last_swept[host] for host in hosts if host in last_swept}
    if run_time is not None:
        when.update({host: run_time for host in hosts if host not in when})
    return by_family, when


def merge_textfile(new_text: str, old_text: str, *, swept: frozenset[str]) -> str:
    """``new_text`` (a partial run's, of the hosts ``swept``) with the samples of every other host that
    ``old_text`` held, marked as carried. Families the new text lacks (an older gpudiag's) are dropped."""
    by_family, when = _kept(old_text, swept)
    for host, value in when.items():
        by_family.setdefault(LAST_SWEPT, []).append(f'{LAST_SWEPT}{{host="{host}"}} {value}')
        by_family.setdefault(CARRIED, []).append(f'{CARRIED}{{host="{host}"}} 1')
    out: list[str] = []
    family: str | None = None

    def flush() -> Iterable[str]:
        return by_family.pop(family, []) if family is not None else []

    for line in new_text.splitlines():
        if line.startswith("# HELP "):
            out += flush()
            family = line.split(" ", 3)[2]
        out.append(line)
    out += flush()
    return "\n".join(out) + "\n"
