"""What one collection costs ON a node, next to the one ``nvidia-smi --query-gpu`` that pdsh and clush run.

Prints numbers only. Run from the repository root::

    python3 bench/node_cost.py                # on a GPU node: the real nvidia-smi, NVML, libcuda
    python3 bench/node_cost.py --stub         # anywhere: the simulated node of the loopback benchmark
    python3 bench/node_cost.py --stub --call-ms 60

Each command runs ``--runs`` times (default 20) one after the other, as a node's sshd would start it (the
gpudiag collector as ``sh -c COMMAND`` with its bundle on stdin). Per command: the median wall time, and the
mean CPU (user + system of it and everything it started: sh, timeout, python3, nvidia-smi), from
``getrusage(RUSAGE_CHILDREN)``. The commands:

- ``pdsh/clush query``: ``nvidia-smi --query-gpu=index,name,utilization.gpu,...`` (:data:`QUERY`,
  also what ``bench/sweep_loopback.py`` has pdsh and clush run), what the peers run per host;
- ``nvidia-smi, gpudiag's fields``: the one query the collector makes when NVML is not there (23 fields);
- ``nvidia-smi (plain)``: the table whose header carries the CUDA version;
- ``python3 -I -S -c pass``: the interpreter alone, the collector's floor;
- ``gpudiag collector``: what ``gpudiag sweep --samples 1`` runs on the node (its processes, GPM and the logs
  of inference servers found through them included; then the same without the log discovery, and without
  reading processes and GPM at all: what that part costs; NVML where it loads, the topology
  only for a starved GPU), and the same with ``--source nvidia-smi``. Its document's ``source``,
  ``cuda_version_from`` and the nvidia-smi calls it made are printed too. The bundle carries this
  interpreter's bytecode, which the node's python3 uses when it is the same version (here it is);
  ``another python3`` is the same sweep for a node whose python3 is another version: it compiles the
  modules from their sources;
- ``gpudiag watch, a later round``: what one more refresh of ``gpudiag watch --samples 1`` costs the node once
  its streaming collector runs: the CPU of a collector that answers ``--runs`` + 1 rounds, less one that
  answers 1, divided by ``--runs`` (the wall time is the median of those rounds).

On a GPU node the first rows are what a simulated node should cost: ``--call-ms`` of the loopback benchmark
comes from the median wall time of the peers' query here. With ``--stub`` the fake ``nvidia-smi`` answers
as a healthy 8-GPU H200 node (``agent/gpudiag/demo/fake_nvidia_smi``), each call lasting at least ``--call-ms``;
it is a Python script, so each of its calls costs a Python start-up and more: the collector's own share is its
CPU less its nvidia-smi calls at the price of ``nvidia-smi, gpudiag's fields``.

Last, the ratios issue 22 sets targets for, each from this one run: the collector (and a watch round) against
the peers' query.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the loopback sshd cluster (tests/loopback.py)

from gpudiag.collect.remote import collector_call  # noqa: E402
from gpudiag.logs.plan import build_plans  # noqa: E402
from gpudiag.model import Host  # noqa: E402
from gpudiag.model.choices import Source  # noqa: E402
from gpudiag.sweep.runner import SweepOptions, collector_command  # noqa: E402
from gpudiag_node.smi import FIELDS  # noqa: E402
from loopback import install_fake_bin  # noqa: E402

# What pdsh and clush run per host in the benchmarks: one nvidia-smi query, the readings they can compare.
QUERY = ("nvidia-smi --query-gpu=index,name,utilization.gpu,utilization.memory,power.draw,enforced.power.limit "
         "--format=csv,noheader,nounits")
PEERS_QUERY = "pdsh/clush query"
SMI_FIELDS = "nvidia-smi, gpudiag's fields"
COLLECTOR = "gpudiag collector"
ANOTHER_PYTHON = f"{COLLECTOR}, another python3"
WATCH_ROUND = "gpudiag watch, a later round"


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeCost:
    """One command's cost on the node: median wall ms and mean CPU ms of ``runs`` sequential runs."""

    label: str
    wall_ms: float
    cpu_ms: float
    note: str = ""
    smi_calls: int = 0  # the nvidia-smi calls a collector made (its document says which)


def _run_held(argv: Sequence[str], *, stdin: bytes, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` as sshd runs gpudiag's command: ``stdin`` written and held open until the command ends (a
    one-shot collector ends its process group when its stdin ends: gpudiag.collect.remote)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=out, stderr=err, env=env)
        assert proc.stdin is not None
        try:
            proc.stdin.write(stdin)
            proc.stdin.flush()
        except BrokenPipeError:  # a command that does not read its stdin
            pass
        code = proc.wait()
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(list(argv), code, out.read(), err.read())


def measure(argv: Sequence[str], *, env: dict[str, str], stdin: bytes, runs: int) -> tuple[float, float, bytes, int]:
    """(median wall ms, mean CPU ms, last stdout, last exit status) of ``runs`` sequential runs."""
    walls = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = None
    for _ in range(runs):
        started = time.monotonic()
        done = _run_held(argv, stdin=stdin, env=env)
        walls.append(time.monotonic() - started)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / runs
    assert done is not None
    return 1000 * statistics.median(walls), 1000 * cpu, done.stdout, done.returncode


def stream_rounds(command: str, stdin: bytes, *, env: dict[str, str], rounds: int) -> tuple[list[float], float, int]:
    """Run a streaming collector for ``rounds`` rounds: (each round's wall s, the whole run's CPU s, exit)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(["sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    walls = []
    for n in range(rounds):
        started = time.monotonic()
        proc.stdin.write(stdin if n == 0 else b"\n")  # the bundle and the first line, then a line a round
        proc.stdin.flush()
        proc.stdout.readline()
        walls.append(time.monotonic() - started)
    proc.stdin.close()
    code = proc.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return walls, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, code


def stub_env(folder: Path, call_ms: float) -> dict[str, str]:
    """The environment of a simulated node of the loopback benchmark (a healthy 8-GPU H200), in ``folder``."""
    stub = install_fake_bin(folder / "bin", {"*": "healthy"}, folder / "state")
    env = {"PATH": f"{stub.parent}:/usr/bin:/bin", "HOME": str(folder), "LC_ALL": "C",
           "SSH_CONNECTION": "127.0.0.1 40000 127.0.1.1 22"}
    if call_ms > 0:
        env["GPUDIAG_FAKE_CALL_MS"] = f"{call_ms:g}"
    return env


def node_costs(env: dict[str, str], runs: int) -> list[NodeCost]:
    """Every command of the module docstring, measured in ``env`` (needs an ``nvidia-smi`` on its PATH)."""
    smi = shutil.which("nvidia-smi", path=env["PATH"])
    if smi is None:
        raise FileNotFoundError("no nvidia-smi on this PATH")
    python = shutil.which("python3", path=env["PATH"]) or "python3"
    all_fields = ",".join(names[0] for _, names in FIELDS)
    # As a sweep runs it: with the logs of inference servers found through the GPUs' processes.
    sweep_one = collector_command(SweepOptions(samples=1, interval_s=0.0), build_plans([Host(name="n")])["n"])
    no_procs = collector_call(samples=1, interval_s=0.0, deadline_s=SweepOptions().deadline_s, processes=False)
    no_discovery = collector_command(SweepOptions(samples=1, interval_s=0.0))
    # The sweep's own call (SweepOptions' defaults, the log discovery of build_plans), without the bytecode.
    defaults = SweepOptions()
    plan = build_plans([Host(name="n")])["n"]
    compiling = collector_call(samples=1, interval_s=0.0, deadline_s=defaults.deadline_s, context=defaults.context,
                               discover_logs=plan.discover_config(), with_code=False,
                               topology_if={"busy_pct": defaults.settings.busy_utilization_pct,
                                            "low_power_pct": defaults.settings.low_power_pct})
    smi_only = collector_call(samples=1, interval_s=0.0, deadline_s=SweepOptions().deadline_s, source=Source.NVIDIA_SMI,
                              context=True, topology_if={"busy_pct": 90.0, "low_power_pct": 60.0})
    commands: list[tuple[str, list[str], bytes]] = [
        (PEERS_QUERY, [smi, *shlex.split(QUERY)[1:]], b""),
        (SMI_FIELDS, [smi, f"--query-gpu={all_fields}", "--format=csv,noheader,nounits"], b""),
        ("nvidia-smi (plain)", [smi], b""),
        ("python3 -I -S -c pass", [python, "-I", "-S", "-c", "pass"], b""),
        (COLLECTOR, ["sh", "-c", sweep_one.command], sweep_one.stdin),
        (ANOTHER_PYTHON, ["sh", "-c", compiling.command], compiling.stdin),
        (f"{COLLECTOR}, no log discovery", ["sh", "-c", no_discovery.command], no_discovery.stdin),
        (f"{COLLECTOR}, no processes nor GPM", ["sh", "-c", no_procs.command], no_procs.stdin),
        (f"{COLLECTOR}, --source nvidia-smi", ["sh", "-c", smi_only.command], smi_only.stdin),
    ]
    costs = []
    for label, argv, stdin in commands:
        wall, cpu, out, code = measure(argv, env=env, stdin=stdin, runs=runs)
        note = "" if code == 0 else f"exit {code}"
        calls = 0
        if label.startswith("gpudiag"):
            try:
                doc = json.loads(out)
                procs = (doc.get("processes") or {}).get("procs") or {}
                calls = smi_calls(doc)
                note = (f"source {doc.get('source')}, CUDA {doc.get('cuda_version')} from "
                        f"{doc.get('cuda_version_from')}, {calls} nvidia-smi call(s), "
                        f"{len(procs)} process(es), {len(doc.get('logs') or [])} log(s) scanned")
            except json.JSONDecodeError:
                note = f"exit {code}, no document"
        costs.append(NodeCost(label=label, wall_ms=wall, cpu_ms=cpu, note=note, smi_calls=calls))
    watch_one = collector_command(SweepOptions(samples=1, interval_s=0.0, stream=True))
    _, first_cpu, _ = stream_rounds(watch_one.command, watch_one.stdin, env=env, rounds=1)
    walls, all_cpu, code = stream_rounds(watch_one.command, watch_one.stdin, env=env, rounds=runs + 1)
    # A round of the sweep's default sampling (samples=1 here) reads what a one-shot collector reads: the same
    # nvidia-smi calls where NVML is not there.
    round_calls = next(c.smi_calls for c in costs if c.label == COLLECTOR)
    costs.append(NodeCost(label=WATCH_ROUND, wall_ms=1000 * statistics.median(walls[1:]),
                          cpu_ms=1000 * max(0.0, all_cpu - first_cpu) / runs, smi_calls=round_calls,
                          note=f"exit {code}" if code else "one collector process for every round"))
    return costs


def smi_calls(doc: dict[str, Any]) -> int:
    """How many nvidia-smi calls a collector document says its collector made: its query samples, the
    --help-query-gpu of an old driver, the compute apps, the plain table for the CUDA version, topo -m (a
    topology read through NVML has no exit status: no call)."""
    smi, context = doc.get("nvidia_smi") or {}, doc.get("context") or {}
    return (len(doc.get("samples") or []) + int("help_exit" in smi) + int(doc.get("processes_from") == "nvidia-smi")
            + int(doc.get("cuda_version_from") == "nvidia-smi") + int("exit" in (context.get("topology") or {})))


def ratios(costs: Sequence[NodeCost]) -> list[str]:
    """The figures issue 22 sets targets for, as ratios to the peers' query of the same run."""
    by_label = {c.label: c for c in costs}
    peers = by_label[PEERS_QUERY].cpu_ms
    call = by_label[SMI_FIELDS].cpu_ms
    lines = [f"ratios to the peers' query ({peers:.1f} ms of CPU), this run:"]
    for label, target in ((COLLECTOR, 2.0), (ANOTHER_PYTHON, 2.0), (WATCH_ROUND, 1.2)):
        cost = by_label[label]
        lines.append(f"  {label:<34} {cost.cpu_ms / peers:5.2f}x  (target <= {target:g}x)")
        if cost.smi_calls:  # the stub's calls are Python start-ups: what is the collector's own
            own = cost.cpu_ms - cost.smi_calls * call
            lines.append(f"    its own share, less {cost.smi_calls} nvidia-smi call(s) at {call:.1f} ms: "
                         f"{own:.1f} ms = {own / peers:.2f}x")
    return lines


def cost_table(costs: Sequence[NodeCost]) -> str:
    width = max(len(c.label) for c in costs)
    lines = [f"{'command':<{width}}  {'wall ms':>8}  {'CPU ms':>7}  notes"]
    lines += [f"{c.label:<{width}}  {c.wall_ms:8.1f}  {c.cpu_ms:7.1f}  {c.note}" for c in costs]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--stub", action="store_true", help="use the simulated node's fake nvidia-smi")
    parser.add_argument("--call-ms", type=float, default=0.0, help="with --stub: each call lasts at least this")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="gpudiag-node-cost-") as tmp:
        env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": tmp, "LC_ALL": "C"}
        if args.stub:
            env = stub_env(Path(tmp), args.call_ms)
        if shutil.which("nvidia-smi", path=env["PATH"]) is None:
            print("no nvidia-smi here: run on a GPU node, or with --stub")
            sys.exit(1)
        node = "this machine"
        if args.stub:
            node = "simulated (fake nvidia-smi" + (f", {args.call_ms:g} ms a call)" if args.call_ms else ")")
        python = shutil.which("python3", path=env["PATH"]) or "python3"
        print(f"node: {node}; {args.runs} runs each; python3 = {python}")
        costs = node_costs(env, args.runs)
        print(cost_table(costs))
        print("\n".join(ratios(costs)))


if __name__ == "__main__":
    main()
