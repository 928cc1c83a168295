"""What NVML itself costs this node's CPU, per call, in one warm process: nvmlInit, each getter the collector's
reader makes (the readings table, collectors/gpudiag_node/readings.py), the compute processes, nvmlShutdown;
and nvmlInitWithFlags(NVML_INIT_FLAG_NO_ATTACH) beside it (does every getter still answer?).

    python3 bench/nvml_call_cost.py [--rounds 20]        # needs the nvidia-ml-py binding and a GPU

The one-shot collector pays one init, the static and per-sample getters and one shutdown; this says how much of
its CPU that floor is (the rest is Python: bench/collector_phases.py). Prints numbers only.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable

import pynvml

from gpudiag_node.nvml import Reader
from gpudiag_node.readings import READINGS, STRUCT_GETTERS


def cpu_ms(fn: Callable[[], object]) -> tuple[float, str]:
    started = time.process_time()
    try:
        fn()
        outcome = "ok"
    except pynvml.NVMLError as exc:
        outcome = type(exc).__name__
    return 1000 * (time.process_time() - started), outcome


def getters(handle: object) -> list[tuple[str, Callable[[], object]]]:
    calls: dict[str, Callable[[], object]] = {}
    for reading in READINGS:
        if reading.nvml is None:
            continue
        names, args, _ = reading.nvml
        name = next((n for n in names if hasattr(pynvml, n)), None)
        if name is None:
            continue
        values = [getattr(pynvml, a) for a in args]
        if name in STRUCT_GETTERS:  # by reference, with its version: called bare it crashed the interpreter
            calls[name] = functools.partial(Reader(pynvml).struct, name, handle)
        elif name == "nvmlDeviceGetFieldValues":
            calls[f"{name}({args[0]})"] = functools.partial(getattr(pynvml, name), handle, values)
        else:
            calls[f"{name}{tuple(args) if args else ''}"] = functools.partial(getattr(pynvml, name), handle, *values)
    calls["nvmlDeviceGetComputeRunningProcesses"] = functools.partial(pynvml.nvmlDeviceGetComputeRunningProcesses,
                                                                      handle)
    return list(calls.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    for flags, label in ((0, "nvmlInit"), (2, "nvmlInitWithFlags(NO_ATTACH)")):
        per_call: dict[str, list[float]] = {}
        outcomes: dict[str, str] = {}
        for _ in range(args.rounds):
            ms, outcome = cpu_ms(functools.partial(pynvml.nvmlInitWithFlags, flags))
            per_call.setdefault(label, []).append(ms)
            outcomes[label] = outcome
            try:
                handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            except pynvml.NVMLError as exc:  # NO_ATTACH on driver 580: no handle, so no getter answers
                outcomes["nvmlDeviceGetHandleByIndex"] = type(exc).__name__
                per_call.setdefault("nvmlDeviceGetHandleByIndex", []).append(0.0)
                cpu_ms(pynvml.nvmlShutdown)
                continue
            for name, call in getters(handle):
                ms, outcome = cpu_ms(call)
                per_call.setdefault(name, []).append(ms)
                outcomes[name] = outcome
            ms, _ = cpu_ms(pynvml.nvmlShutdown)
            per_call.setdefault("nvmlShutdown", []).append(ms)
        print(f"{label}: median CPU ms per call over {args.rounds} rounds (GPU 0)")
        total = 0.0
        for name, values in per_call.items():
            total += statistics.median(values)
            print(f"  {name:<70} {statistics.median(values):6.2f}  {outcomes.get(name, 'ok')}")
        print(f"  {'one round, init to shutdown':<70} {total:6.2f}")


if __name__ == "__main__":
    main()
