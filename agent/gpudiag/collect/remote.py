"""The one command line a node runs: the collector, wrapped in ``timeout``, every argument quoted.

The node's sshd hands the line to the user's shell, so everything variable in it goes through
``shlex.quote``; the Python collector itself travels on stdin (a short loader given to ``python3 -c``
reads exactly the bundle's bytes). When the node has no python3 the POSIX-shell collector runs instead;
it receives the field table as quoted arguments. ``timeout`` (coreutils) ends the whole remote process
group at the deadline; a one-shot collector's group also ends at once when its channel closes (the sweep was
cancelled, gpudiag was killed, the connection dropped): sshd sends a pty-less session no signal, so the node
watches its stdin, which the client keeps open until the end. A streaming collector (``gpudiag watch``)
outlives one round, so it bounds each round itself.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpudiag.collect.bundle import bundle, fallback_source, payload_span
from gpudiag.model.choices import Source
from gpudiag_node.readings import smi_fields
from gpudiag_node.wire import KEPT_LINE, make_config

# Exit statuses of `timeout`: 124 after TERM at the deadline, 137 when the -k KILL was needed.
TIMEOUT_EXIT_STATUSES = (124, 137)
KILL_AFTER_S = 3

# $1: the loader, $2: the deadline of the shell fallback ("" when `timeout` already wraps everything),
# $3: the shell collector, $4 samples, $5 interval, $6... the field table. python3 runs the loader, which
# reads exactly the bundle (collector, configuration, NVML binding) from stdin and runs it, so stdin stays
# open for a streaming collector's requests. -I: nothing from the node's environment or home folder (a
# json.py there, PYTHONPATH) is imported in place of the standard library; -S: no site-packages, which the
# bundle does not need (and 2 ms less start-up). Without python3, the shell collector runs; one-shot, beside a
# watcher that ends the process group when stdin ends, as the Python loader's thread does (_WATCHED_LOADER).
_DISPATCH = (
    'loader=$1; limit=$2; shift 2; '
    'if command -v python3 >/dev/null 2>&1; then exec python3 -I -S -c "$loader"; fi; '
    'script=$1; shift; '
    'if [ -n "$limit" ]; then exec timeout -k ' + str(KILL_AFTER_S) + ' "$limit" sh -c "$script" gpudiag "$@"; fi; '
    'exec 3<&0 </dev/null; (cat <&3 >/dev/null; kill -9 0) >/dev/null 2>&1 & '
    'exec sh -c "$script" gpudiag "$@" 3<&-'
)
# Reads exactly the bundle, runs its code and hands its payload (the modules) to it uncompiled
# (gpudiag.collect.bundle.payload_span): a `python3 -` of the whole bundle does the same, less fast. exec() of
# the bytes, not compile(): the builtin compile() sets up the ast module's types at its first call (PyAST_Check),
# 2.5 ms of a node's CPU for nothing.
_RUN = "g={'__name__':'__main__'};exec(b[:%(code)d],g);g['_main'](b[%(start)d:%(end)d])"
_LOADER = "import sys;b=sys.stdin.buffer.read(%(size)d);" + _RUN
# One-shot: the same, and a thread that reads stdin to its end and then SIGKILLs the process group. The client
# keeps stdin open until the command ends, so its end means the channel closed (a cancelled sweep, a cut, a
# dropped connection, a killed gpudiag): sshd closes the command's stdin then, but sends no signal to a session
# without a pty, and `timeout` would let a hung nvidia-smi run on to the deadline. The group is the one
# `timeout` leads (or, when `timeout` is the session leader, the session's): the collector, its nvidia-smi and
# log scan, `timeout` itself; never anything outside the command. Works with every OpenSSH, unlike the
# protocol's "signal" request (sshd >= 8.1 only). The thread is a plain _thread one (what threading's daemon
# threads are underneath): the threading module would cost a collector that needs no other thread 2-4 ms.
_WATCHED_LOADER = ("import os,sys,_thread;b=sys.stdin.buffer.read(%(size)d);_thread.start_new_thread(lambda:"
                   "(all(iter(lambda:os.read(0,65536),b'')),os.killpg(0,9)),());" + _RUN)


def loader(script: bytes, *, watched: bool) -> str:
    """The ``python3 -c`` program that runs ``script`` (a bundle) from stdin; ``watched``: and ends the process
    group when stdin ends (a one-shot collector)."""
    code, start, end = payload_span(script)
    return (_WATCHED_LOADER if watched else _LOADER) % {"size": len(script), "code": code, "start": start,
                                                         "end": end}


def call_bound_s(deadline_s: float, samples: int, interval_s: float) -> float:
    """How long one call on the node (an nvidia-smi, the NVML reader past its sampling window) may take before
    it is killed and reported as hung: half of what the deadline leaves beside the sampling window. The
    sampling stops at a hung call, so the window, one hung call and the trip home fit inside the deadline and
    the host answers "ok, gpus: hung" instead of timing out; half, not less, so that a slow but working
    nvidia-smi on a loaded node (seconds) is not called hung. At least 1 s (a real one takes ~0.1-1 s)."""
    return round(max(1.0, (deadline_s - samples * interval_s) / 2), 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectorCall:
    """The command line and stdin for one collection."""

    command: str
    stdin: bytes
    # The node ends the command when its stdin ends: the transport keeps stdin open until the command ends.
    ends_with_stdin: bool = False
    # A streaming collector: what a transport that keeps it writes after ``stdin``; the node then ends it (its
    # whole process group) as soon as its stdin ends, mid-round too. Run once, it is not written.
    kept_stdin: bytes = b""


def collector_call(*, samples: int, interval_s: float, deadline_s: float, source: Source = Source.AUTO,
                   logs: Sequence[Mapping[str, object]] = (), context: bool = False,
                   gpus: bool = True, topology_if: Mapping[str, float] | None = None,
                   stream: bool = False, idle_s: float | None = None,
                   discover_logs: Mapping[str, object] | None = None, processes: bool = True,
                   with_code: bool = True, active_budget_s: float | None = None) -> CollectorCall:
    """Build the remote command that collects ``samples`` readings ``interval_s`` apart.

    ``source``: see :class:`Source` (its value as a plain string is accepted too). ``logs``: log sources to scan
    (``LogPlan.node_config()``), ``context``: read the topology and virtualization, ``gpus``: read the GPUs,
    ``topology_if``: {"busy_pct", "low_power_pct"}: read the topology only when a GPU read busy at low power.
    ``stream``: the collector stays and answers one round per line on its stdin (gpudiag watch), and leaves
    when no line came for ``idle_s`` (a reset connection leaves its stdin open until TCP gives up, hours later).
    ``with_code``: the modules' bytecode travels too, for a node with this interpreter's version (see bundle).
    ``active_budget_s``: run the active test of the idle GPUs (``gpudiag_node.active``) for at most this long,
    within the deadline; None: not run.
    All of it travels as data inside the bundle, never in the command line. The shell collector can do
    none of it: it says so in the document's problems when logs were asked for.
    """
    try:
        source = Source(source)
    except ValueError:
        raise ValueError(f"unknown source {source!r} (known: {', '.join(s.value for s in Source)})") from None
    fields = [f"{logical}={'|'.join(names)}" for logical, names in smi_fields()]
    notes = ["@note=the logs were not scanned: the log scan needs python3, which this node lacks"] if logs else []
    deadline = f"{max(1, round(deadline_s))}"
    bound = call_bound_s(deadline_s, samples, interval_s)
    # Every key declared once, with its default, on the node's side (gpudiag_node.wire.CONFIG; docs/probe.md).
    # Servers' logs are found through their processes' stdout and stderr: the GPUs' processes, or, for a log
    # search that reads no GPU, the processes whose command line is a known server's.
    config = make_config(samples=samples, interval_s=interval_s, source=source.value, call_timeout_s=bound,
                         logs=[dict(s) for s in logs] or None, processes=processes,
                         discover_logs=dict(discover_logs) if discover_logs and processes else None,
                         context=context, topology_if=dict(topology_if) if context and topology_if else None,
                         gpus=gpus, dcgm=gpus, stream=stream, round_deadline_s=max(1.0, deadline_s),
                         idle_s=max(1.0, idle_s) if stream and idle_s is not None else None,
                         active={"budget_s": active_budget_s, "deadline_s": deadline_s}
                         if active_budget_s is not None else None)
    script = bundle(config, with_nvml=source is not Source.NVIDIA_SMI, with_code=with_code)
    # One-shot: `timeout` ends the whole remote process group at the deadline. Streaming: the collector
    # lives as long as the connection and bounds each round itself; only the shell fallback gets `timeout`.
    wrapper = [] if stream else ["timeout", "-k", str(KILL_AFTER_S), deadline]
    args = [loader(script, watched=not stream), deadline if stream else "", fallback_source(), str(samples),
            f"{interval_s:g}", f"@bound={bound:g}", *notes, *fields]
    command = " ".join([*wrapper, "sh", "-c", shlex.quote(_DISPATCH), "gpudiag", *(shlex.quote(a) for a in args)])
    # A streaming collector answers one round per line: the first line rides along with the bundle, so a
    # transport that runs it once (and closes stdin) gets one document, as from a one-shot collector.
    return CollectorCall(command=command, stdin=script + (b"\n" if stream else b""), ends_with_stdin=not stream,
                         kept_stdin=KEPT_LINE + b"\n" if stream else b"")
