"""Where a one-shot collector's own CPU goes on this node: the bundle of ``gpudiag sweep --samples 1`` run by a fresh
``python3 -I -S`` per run, with the CPU time (time.process_time) of each phase, median of ``--runs``.

    python3 bench/collector_phases.py [--runs 30] [--another-python] [--python PATH]

Phases: the bundle's code (compiled and run, as the loader does), the index of its payload, each import
the NVML path makes (os, the JSON codec, the probe with proc and readings, ctypes, the dlopen of libnvidia-ml,
the binding cut, the reader with GPM and the node context), then the collection itself (NVML's init and
queries, /proc, the document). The interpreter's start-up (``python3 -I -S -c pass``) and the shell and
``timeout`` around it are not in these: bench/node_cost.py measures the whole command.
``--another-python``: the bundle without this interpreter's bytecode, as a node with another python3 gets it
(it compiles the sources). Prints numbers only.
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
from pathlib import Path

from gpudiag.collect.bundle import payload_span
from gpudiag.collect.remote import collector_call
from gpudiag.logs.plan import build_plans
from gpudiag.model import Host
from gpudiag.sweep.runner import SweepOptions

# Runs the bundle's code as the loader does (its payload uncompiled), then each import and the collection, noting
# the CPU between.
DRIVER = r'''
import time, sys
marks = [("start", time.process_time())]
def mark(name):
    marks.append((name, time.process_time()))
script = sys.stdin.buffer.read()
code_end, start, end = map(int, sys.argv[1:4])
scope = {"__name__": "bundle"}
exec(script[:code_end], scope); mark("the bundle's code (compile, run)")
sys.meta_path.insert(0, scope["_BundleImporter"](script[start:end])); mark("the payload's index")
import os; mark("import os")
from gpudiag_node import jsoncodec; mark("gpudiag_node.jsoncodec (_json)")
from gpudiag_node import probe; mark("gpudiag_node.probe (+ proc, readings)")
import ctypes; mark("import ctypes")
try:
    ctypes.CDLL("libnvidia-ml.so.1")
except OSError:
    pass
mark("dlopen libnvidia-ml.so.1")
import pynvml; mark("the binding cut (pynvml)")
from gpudiag_node import context, gpm, nvml; mark("gpudiag_node.nvml, gpm, context")
config = jsoncodec.loads(scope["_CONFIG"]); mark("the configuration (JSON)")
out, sys.stdout = sys.stdout, open(os.devnull, "w")
probe.main_with_config(config); mark("the collection (NVML or nvidia-smi, /proc, the document)")
sys.stdout = out
print(repr([(name, now - then) for (name, now), (_, then) in zip(marks[1:], marks)]))
'''


def phases(script: bytes, python: str, runs: int) -> list[tuple[str, float]]:
    """(phase, median CPU ms) of ``runs`` fresh runs of ``script`` (a collector bundle) under ``python``."""
    per_phase: dict[str, list[float]] = {}
    span = [str(n) for n in payload_span(script)]
    for _ in range(runs):
        done = subprocess.run([python, "-I", "-S", "-c", DRIVER, *span], input=script, capture_output=True,
                              timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.decode(errors="replace")[-2000:])
        for name, seconds in ast.literal_eval(done.stdout.decode().strip().splitlines()[-1]):
            per_phase.setdefault(name, []).append(1000 * seconds)
    return [(name, statistics.median(values)) for name, values in per_phase.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--another-python", action="store_true", help="no bytecode: the node compiles")
    parser.add_argument("--python", default="python3", help="the node's interpreter (default: python3)")
    args = parser.parse_args()
    options = SweepOptions(samples=1, interval_s=0.0)
    plan = build_plans([Host(name="n")])["n"]
    call = collector_call(samples=1, interval_s=0.0, deadline_s=options.deadline_s, context=options.context,
                          discover_logs=plan.discover_config(), with_code=not args.another_python,
                          topology_if={"busy_pct": options.settings.busy_utilization_pct,
                                       "low_power_pct": options.settings.low_power_pct})
    found = phases(call.stdin, args.python, args.runs)
    kind = "sources (another python3)" if args.another_python else "this interpreter's bytecode"
    print(f"collector phases, {args.runs} runs of {args.python} -I -S (median CPU ms; bundle with {kind}, "
          f"{len(call.stdin) // 1024} KB; PATH {os.environ.get('PATH', '')[:60]}...)")
    for name, ms in found:
        print(f"  {name:<58} {ms:6.2f}")
    print(f"  {'total of the medians':<58} {sum(ms for _, ms in found):6.2f}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    main()
