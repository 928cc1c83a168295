"""The one command line a node runs: the collector, wrapped in ``timeout``, every argument quoted.

The node's sshd hands the line to the user's shell, so everything variable in it goes through
``shlex.quote``; the Python collector itself travels on stdin (``python3 -``). When the node has no
python3 the POSIX-shell collector runs instead; it receives the field table as quoted arguments.
``timeout`` (coreutils) ends the whole remote process group at the deadline: closing the channel from
this side alone would leave a hung nvidia-smi running on the node.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from collectors import bundle, fallback_source
from collectors.probe import FIELDS

# Exit statuses of `timeout`: 124 after TERM at the deadline, 137 when the -k KILL was needed.
TIMEOUT_EXIT_STATUSES = (124, 137)
KILL_AFTER_S = 3

# python3 reads the bundle (collector, configuration, NVML binding) on stdin. Without python3:
# $1 = the shell collector, $2 samples, $3 interval, $4... the field table.
_DISPATCH = (
    'if command -v python3 >/dev/null 2>&1; then exec python3 -; fi; '
    'script=$1; shift; exec sh -c "$script" gpudiag "$@"'
)
SOURCES = ("auto", "nvidia-smi")


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectorCall:
    """The command line and stdin for one collection."""

    command: str
    stdin: bytes


def collector_call(*, samples: int, interval_s: float, deadline_s: float, source: str = "auto",
                   logs: Sequence[Mapping[str, object]] = (), context: bool = False,
                   gpus: bool = True, topology_if: Mapping[str, float] | None = None) -> CollectorCall:
    """Build the remote command that collects ``samples`` readings ``interval_s`` apart.

    ``source``: "auto" reads through NVML where the node's driver lets the bundled binding load, else
    nvidia-smi; "nvidia-smi" never sends the binding (a smaller bundle). ``logs``: log sources to scan
    (``LogPlan.node_config()``), ``context``: read the topology and virtualization, ``gpus``: read the GPUs,
    ``topology_if``: {"busy_pct", "low_power_pct"}: read the topology only when a GPU read busy at low power.
    All of it travels as data inside the bundle, never in the command line. The shell collector can do
    none of it: it says so in the document's problems when logs were asked for.
    """
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r} (known: {', '.join(SOURCES)})")
    fields = [f"{logical}={'|'.join(names)}" for logical, names in FIELDS]
    notes = ["@note=the logs were not scanned: the log scan needs python3, which this node lacks"] if logs else []
    args = [fallback_source(), str(samples), f"{interval_s:g}", *notes, *fields]
    command = " ".join(
        ["timeout", "-k", str(KILL_AFTER_S), f"{max(1, round(deadline_s))}", "sh", "-c", shlex.quote(_DISPATCH),
         "gpudiag", *(shlex.quote(a) for a in args)])
    config: dict[str, object] = {"samples": samples, "interval_s": interval_s, "source": source,
                                 "call_timeout_s": max(1.0, deadline_s)}
    if logs:
        config["logs"] = [dict(s) for s in logs]
    if context:
        config["context"] = True
        if topology_if is not None:
            config["topology_if"] = dict(topology_if)
    if not gpus:
        config.update(gpus=False, dcgm=False)
    return CollectorCall(command=command, stdin=bundle(config, with_nvml=source != "nvidia-smi"))
