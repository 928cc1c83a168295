"""What one collection costs ON a node, next to the one ``nvidia-smi --query-gpu`` that pdsh and clush run.

Prints numbers only. Run from the repository root::

    python3 bench/node_cost.py                # on a GPU node: the real nvidia-smi, NVML, libcuda
    python3 bench/node_cost.py --stub         # anywhere: the simulated node of the loopback benchmark
    python3 bench/node_cost.py --stub --call-ms 60

Each command runs ``--runs`` times (default 20) one after the other, as a node's sshd would start it (the
gpudiag collector as ``sh -c COMMAND`` with its bundle on stdin). Per command: the median wall time, and the
mean CPU (user + system of it and everything it started: sh, timeout, python3, nvidia-smi), from
``getrusage(RUSAGE_CHILDREN)``. The commands:

- ``pdsh/clush query``: ``nvidia-smi --query-gpu=index,name,utilization.gpu,...`` (``bench/sweep_loopback.py``'s
  QUERY), what the peers run per host;
- ``nvidia-smi, gpudiag's fields``: the one query the collector makes when NVML is not there (23 fields);
- ``nvidia-smi (plain)``: the table whose header carries the CUDA version;
- ``python3 -I -S -c pass``: the interpreter alone, the collector's floor;
- ``gpudiag collector``: what ``gpudiag sweep --samples 1`` runs on the node (NVML where it loads, the topology
  only for a starved GPU), and the same with ``--source nvidia-smi``. Its document's ``source`` and
  ``cuda_version_from`` are printed too;
- ``gpudiag watch, a later round``: what one more refresh of ``gpudiag watch --samples 1`` costs the node once
  its streaming collector runs: the CPU of a collector that answers ``--runs`` + 1 rounds, less one that
  answers 1, divided by ``--runs`` (the wall time is the median of those rounds).

On a GPU node the first rows are what a simulated node should cost: ``--call-ms`` of the loopback benchmark
comes from the median wall time of the peers' query here. With ``--stub`` the fake ``nvidia-smi`` answers
as a healthy 8-GPU H200 node (``agent/simulate/fake_nvidia_smi``), each call lasting at least ``--call-ms``.
"""

from __future__ import annotations

import argparse
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
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the loopback sshd cluster (tests/loopback.py)

from loopback import install_fake_bin  # noqa: E402
from sweep_loopback import QUERY  # noqa: E402 - the peers' command, as the loopback benchmark runs it

from gpudiag.collectors.node.probe import FIELDS  # noqa: E402
from gpudiag.remote import collector_call  # noqa: E402
from gpudiag.runner import SweepOptions, collector_command  # noqa: E402


def measure(argv: Sequence[str], *, env: dict[str, str], stdin: bytes, runs: int) -> tuple[float, float, bytes, int]:
    """(median wall ms, mean CPU ms, last stdout, last exit status) of ``runs`` sequential runs."""
    walls = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = None
    for _ in range(runs):
        started = time.monotonic()
        done = subprocess.run(list(argv), input=stdin, capture_output=True, env=env, check=False)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--stub", action="store_true", help="use the simulated node's fake nvidia-smi")
    parser.add_argument("--call-ms", type=float, default=0.0, help="with --stub: each call lasts at least this")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="gpudiag-node-cost-") as tmp:
        env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": tmp, "LC_ALL": "C"}
        if args.stub:
            stub = install_fake_bin(Path(tmp) / "bin", {"*": "healthy"}, Path(tmp) / "state")
            env.update(PATH=f"{stub.parent}:/usr/bin:/bin", SSH_CONNECTION="127.0.0.1 40000 127.0.1.1 22")
            if args.call_ms > 0:
                env["GPUDIAG_FAKE_CALL_MS"] = f"{args.call_ms:g}"
        smi = shutil.which("nvidia-smi", path=env["PATH"])
        if smi is None:
            print("no nvidia-smi here: run on a GPU node, or with --stub")
            sys.exit(1)
        python = shutil.which("python3", path=env["PATH"]) or "python3"
        node = "this machine"
        if args.stub:
            node = "simulated (fake nvidia-smi" + (f", {args.call_ms:g} ms a call)" if args.call_ms else ")")
        print(f"node: {node}; {args.runs} runs each; python3 = {python}")

        all_fields = ",".join(names[0] for _, names in FIELDS)
        sweep_one = collector_command(SweepOptions(samples=1, interval_s=0.0))
        smi_only = collector_call(samples=1, interval_s=0.0, deadline_s=SweepOptions().deadline_s, source="nvidia-smi",
                                  context=True, topology_if={"busy_pct": 90.0, "low_power_pct": 60.0})
        commands: list[tuple[str, list[str], bytes]] = [
            ("pdsh/clush query", [smi, *shlex.split(QUERY)[1:]], b""),
            ("nvidia-smi, gpudiag's fields", [smi, f"--query-gpu={all_fields}", "--format=csv,noheader,nounits"],
             b""),
            ("nvidia-smi (plain)", [smi], b""),
            ("python3 -I -S -c pass", [python, "-I", "-S", "-c", "pass"], b""),
            ("gpudiag collector", ["sh", "-c", sweep_one.command], sweep_one.stdin),
            ("gpudiag collector, --source nvidia-smi", ["sh", "-c", smi_only.command], smi_only.stdin),
        ]
        width = max(len(label) for label, _, _ in commands)
        print(f"{'command':<{width}}  {'wall ms':>8}  {'CPU ms':>7}  notes")
        for label, argv, stdin in commands:
            wall, cpu, out, code = measure(argv, env=env, stdin=stdin, runs=args.runs)
            note = "" if code == 0 else f"exit {code}"
            if label.startswith("gpudiag"):
                try:
                    doc = json.loads(out)
                    note = (f"source {doc.get('source')}, CUDA {doc.get('cuda_version')} from "
                            f"{doc.get('cuda_version_from')}, {len(doc.get('samples') or [])} smi sample(s)")
                except json.JSONDecodeError:
                    note = f"exit {code}, no document"
            print(f"{label:<{width}}  {wall:8.1f}  {cpu:7.1f}  {note}")
        watch_one = collector_command(SweepOptions(samples=1, interval_s=0.0, stream=True))
        _, first_cpu, _ = stream_rounds(watch_one.command, watch_one.stdin, env=env, rounds=1)
        walls, all_cpu, code = stream_rounds(watch_one.command, watch_one.stdin, env=env, rounds=args.runs + 1)
        later_ms = 1000 * max(0.0, all_cpu - first_cpu) / args.runs
        print(f"{'gpudiag watch, a later round':<{width}}  {1000 * statistics.median(walls[1:]):8.1f}  "
              f"{later_ms:7.1f}  {'exit ' + str(code) if code else 'one collector process for every round'}")


if __name__ == "__main__":
    main()
