"""Capture the active test (issue 31) on a real GPU node: the exact command a sweep sends over SSH
(gpudiag.collect.remote.collector_call, `timeout` and the watched loader included), run through `sh -c` with
the bundle on stdin, as sshd would run it, by the node's system python3 (PATH=/usr/bin:/bin: no pynvml there,
the binding travels in the bundle).

    PYTHONPATH=agent:collectors python3 bench/active_capture.py OUTDIR [--workload-python PY]

Writes OUTDIR/<case>.json (the collector's document) and OUTDIR/cases.txt (what each case shows, wall times,
and what was left running after it). Cases: idle_1..3 (the figures), plain (the same sweep without --active:
the wall time the test adds), busy (bench/gpu_workloads.py gemm running: skipped), recheck (gemm running, the
window's verdict forced to idle: the test's own re-check skips it), deadline (the test slowed 30x: ended at its
budget), sweep_deadline (the same past the sweep's deadline: `timeout` ends the group), cut (the channel
closes mid-test, as on Ctrl-C of a sweep: the loader ends the group). Before each case the GPU is let settle
to 0% (NVML's utilization averages the last second: a test just ended still reads busy)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from gpudiag.collect.remote import collector_call
from gpudiag_node import active

NODE_ENV = dict(os.environ, PATH="/usr/bin:/bin")
NODE_ENV.pop("PYTHONPATH", None)


def leftovers() -> str:
    """Processes of the test (its command line names <gpudiag:active>) or of the collector still running, and
    the GPU's compute processes."""
    mine = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            line = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if (b"<gpudiag:active>" in line or b"_main(b[" in line) and int(pid) != os.getpid():
            mine.append(f"{pid} {line[:80]!r}")
    apps = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,process_name", "--format=csv,noheader"],
                          capture_output=True, text=True).stdout.strip()
    return f"processes left: {mine or 'none'}; GPU compute processes: {apps or 'none'}"


def settle(most_s: float = 10.0) -> None:
    """Wait until the GPUs read 0% busy (at most ``most_s``)."""
    until = time.monotonic() + most_s
    while time.monotonic() < until:
        out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True).stdout.split()
        if out and all(u == "0" for u in out):
            return
        time.sleep(0.5)


def sweep_once(*, deadline_s: float = 30.0, active_budget_s: float | None = 10.0, scale: float = 1.0,
               cut_after_s: float | None = None, uncapped: bool = False) -> tuple[dict, float, int]:
    """(document, wall seconds, exit status) of one collection through the sweep's own command line.
    ``uncapped``: the node is not told the deadline (as if its own bound failed): only `timeout` ends it."""
    import gpudiag.collect.remote as remote

    real_bundle = remote.bundle

    def slowed(config: dict, **kw: object) -> bytes:  # the deadline cases: each part `scale` times longer
        if "active" in config:
            active = dict(config["active"], scale=scale)
            if uncapped:
                active.pop("deadline_s", None)
            config = dict(config, active=active)
        return real_bundle(config, **kw)

    remote.bundle = slowed
    try:
        call = collector_call(samples=5, interval_s=0.5, deadline_s=deadline_s, active_budget_s=active_budget_s)
    finally:
        remote.bundle = real_bundle
    stdin = call.stdin
    started = time.monotonic()
    proc = subprocess.Popen(["sh", "-c", call.command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=NODE_ENV, start_new_session=True)
    assert proc.stdin is not None
    proc.stdin.write(stdin)
    proc.stdin.flush()
    if cut_after_s is not None:
        time.sleep(cut_after_s)
        proc.stdin.close()  # the channel closed: what sshd does to the command when the sweep is cancelled
    # stdin stays open until the command ends, as the SSH transport keeps it (its end means "cancelled")
    import threading

    got: dict[str, bytes] = {}
    readers = [threading.Thread(target=lambda n=n, f=f: got.__setitem__(n, f.read()))
               for n, f in (("out", proc.stdout), ("err", proc.stderr))]
    for reader in readers:
        reader.start()
    proc.wait()
    for reader in readers:
        reader.join()
    if not proc.stdin.closed:
        proc.stdin.close()
    out, err = got["out"], got["err"]
    wall = time.monotonic() - started
    try:
        doc = json.loads(out.decode() or "{}")
    except ValueError:
        doc = {"unparsed": out.decode(errors="replace")[-2000:]}
    if err.strip():
        doc["_stderr"] = err.decode(errors="replace")[-2000:]
    return doc, wall, proc.returncode


def summary(doc: dict) -> str:
    section = doc.get("active") or {}
    parts = [f"error={section.get('error')}"] if section.get("error") else []
    for g in section.get("gpus", []):
        figures = ", ".join(f"{p} {g[p].get('tflops', g[p].get('gb_s'))}" for p in ("compute", "memory", "h2d", "d2h")
                            if p in g)
        extra = ""
        if "compute" in g:
            c = g["compute"]
            extra = (f" sm {c.get('sm_clock_mhz_median')}/{c.get('sm_clock_mhz_max')} MHz power "
                     f"{c.get('power_w_median')}/{c.get('power_w_max')} W reasons {c.get('clock_event_reasons_mask')}")
        if "h2d" in g:
            extra += f" link gen{g['h2d'].get('pcie_gen_min')} x{g['h2d'].get('pcie_width_min')}"
        parts.append(f"gpu {g['index']} {g['state']} {g.get('why') or ''} {figures}{extra} after={g.get('after')}")
    return f"elapsed {section.get('elapsed_s')} s budget {section.get('budget_s')} s; " + "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--workload-python", default="/opt/torch/.venv/bin/python3")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    log = open(args.out / "cases.txt", "w")

    def record(case: str, doc: dict, wall: float, code: int) -> None:
        (args.out / f"{case}.json").write_text(json.dumps(doc, indent=1) + "\n")
        line = f"{case}: exit {code}, wall {wall:.2f} s; {summary(doc)}\n    after it: {leftovers()}\n"
        print(line, end="", flush=True)
        log.write(line)
        log.flush()

    settle()
    doc, wall, code = sweep_once(active_budget_s=None)
    record("plain", doc, wall, code)
    for i in (1, 2, 3):
        settle()
        record(f"idle_{i}", *sweep_once())
    workload = subprocess.Popen([args.workload_python, "bench/gpu_workloads.py", "gemm"])
    try:
        time.sleep(8)
        record("busy", *sweep_once())
        # The window's verdict forced to idle while gemm runs: only the test's own re-check stands in the way.
        rows = [{"index": 0, "utilization_pct": "0", "pci_bus_id": subprocess.run(
            ["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader", "-i", "0"],
            capture_output=True, text=True).stdout.strip()}]
        started = time.monotonic()
        section = active.run({"budget_s": 10}, {}, rows, started)
        record("recheck", {"active": section}, time.monotonic() - started, 0)
        print("gemm still running:", workload.poll() is None, flush=True)
        log.write(f"gemm still running after the re-check: {workload.poll() is None}\n")
    finally:
        workload.kill()
        workload.wait()
    settle()
    record("deadline", *sweep_once(active_budget_s=4.0, scale=30.0))
    settle()
    # The sweep's deadline is shorter than the test's budget less its margin: `timeout` ends the group.
    record("sweep_deadline", *sweep_once(deadline_s=9.0, active_budget_s=20.0, scale=30.0, uncapped=True))
    settle()
    record("cut", *sweep_once(scale=30.0, cut_after_s=6.0))
    time.sleep(2)
    log.write(f"2 s after the cut: {leftovers()}\n")
    log.close()


if __name__ == "__main__":
    sys.exit(main())
