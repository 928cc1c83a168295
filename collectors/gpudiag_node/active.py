"""The active test of idle GPUs (``gpudiag sweep --active``), the collector's side: which GPUs may be tested,
the test's process, its budget. Runs on the node; standard library only, Python 3.6, imports nothing of gpudiag.

Only a GPU that the window found idle (no process, 0% busy in every sample) is named to the test; the test's
own process (``active_test.py``, run by the node's python3 from its text) checks each again just before it
makes a context, so a GPU in use is never touched. The collector ends that process at the test's budget,
which ends its CUDA contexts (the driver frees them with the process); it is in the collector's process group,
so Ctrl-C (the channel closes: the loader ends the group) and the sweep's deadline (`timeout` ends the group)
end it too.
"""

import os
import sys
import time

from . import active_test

BUDGET_S = 10.0  # the whole test, start-up included, unless the config says less
MARGIN_S = 2.0  # of the collector's deadline, kept to finish and send the document
KILL_WAIT_S = 1.0  # for the test's process to go once killed (a process inside a driver call may not at once)


def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def idle_gpus(rows, processes):
    """(index -> PCI bus id of each GPU the window found idle, index -> why each other GPU is not tested).
    ``rows``: every GPU row read over the window ({reading name: value}); ``processes``: the document's
    ``processes`` ({"gpus": {index: [...]}}) or None when no GPU had one."""
    busy_pct, bus, unknown = {}, {}, set()
    for row in rows:
        index = _number(row.get("index"))
        if index is None:
            continue
        index = int(index)
        util = _number(row.get("utilization_pct"))
        if util is None:
            unknown.add(index)
        else:
            busy_pct[index] = max(util, busy_pct.get(index, 0.0))
        if row.get("pci_bus_id"):
            bus[index] = str(row["pci_bus_id"])
    listed = (processes or {}).get("gpus") or {}
    idle, why = {}, {}
    for index in sorted(set(busy_pct) | unknown):
        pids = [p.get("pid") for p in listed.get(str(index)) or listed.get(index) or () if isinstance(p, dict)]
        if pids:
            why[index] = "in use: a process on it"  # the reports name it (the processes section)
        elif index in unknown:
            why[index] = "its utilization was not read, so it is not known to be idle"
        elif busy_pct[index] > 0:
            why[index] = "in use: busy in the window"  # its utilization is in the readings
        else:
            idle[index] = bus.get(index)
    return idle, why


def run(plan, doc, rows, started):
    """The document's ``active`` section: the test of the GPUs the window found idle (``rows``: every GPU row
    read, {reading name: value}; ``doc``: the collector's document, for its processes and nvidia-smi), in a
    process of its own ended at the budget: ``plan["budget_s"]``, cut to what the collector's deadline
    (``plan["deadline_s"]`` from ``started``, less a margin to send the document) leaves."""
    budget_s = float(plan.get("budget_s") or BUDGET_S)
    if plan.get("deadline_s"):
        budget_s = min(budget_s, float(plan["deadline_s"]) - MARGIN_S - (time.monotonic() - started))
    started = time.monotonic()
    processes = doc.get("processes") if isinstance(doc.get("processes"), dict) else None
    idle, why = idle_gpus(rows, processes)
    out = {"budget_s": round(budget_s, 1), "gpus": [{"index": i, "state": "skipped", "why": w}
                                                    for i, w in sorted(why.items())]}
    if not idle:
        return out
    if budget_s < 3.0:
        out["error"] = "not run: the deadline leaves %.1f s, the test needs at least 3" % max(0.0, budget_s)
        return out
    import json
    import subprocess

    child_config = {"gpus": [[i, b] for i, b in sorted(idle.items())], "budget_s": budget_s,
                    "smi": (doc.get("nvidia_smi") or {}).get("path"), "scale": plan.get("scale", 1.0)}
    env = dict(os.environ, CUDA_DEVICE_ORDER="PCI_BUS_ID")
    env.pop("CUDA_VISIBLE_DEVICES", None)  # the GPUs are named by PCI bus id
    bootstrap = "import sys; exec(compile(sys.stdin.read(), '<gpudiag:active>', 'exec'), {'__name__': 'active'})"
    try:
        child = subprocess.Popen([sys.executable or "python3", "-I", "-S", "-c", bootstrap,
                                  json.dumps(child_config)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=env)
    except OSError as exc:
        out["error"] = "the test's process did not start: %s" % exc
        return out
    deadline = started + budget_s
    lines, err = _lines_until(child, _source(active_test), deadline)
    try:  # its output ended: it is exiting (a moment), unless it closed its streams and hangs
        child.wait(max(0.1, deadline - time.monotonic()))
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
        child.kill()  # its CUDA contexts end with it
        try:
            child.wait(KILL_WAIT_S)
        except subprocess.TimeoutExpired:  # stuck in the driver: the group's end at the deadline takes it
            out["error"] = "the test's process did not end at SIGKILL within %g s (stuck in the driver)" % (
                KILL_WAIT_S)
    child.stdout.close()
    child.stderr.close()
    out["elapsed_s"] = round(time.monotonic() - started, 2)
    _assemble(out, lines, sorted(idle), timed_out, budget_s, child.returncode, err)
    return out


def _source(module):
    """A module's text, to run in the test's process: from the bundle's importer (``get_source``), else its file."""
    loader = getattr(module, "__loader__", None)
    try:
        text = loader.get_source(module.__name__) if loader is not None else None
    except Exception:  # an importer without sources: the file
        text = None
    if text is None:
        with open(module.__file__, "rb") as handle:
            text = handle.read()
    return text.encode("utf-8") if isinstance(text, str) else text


def _lines_until(child, source, deadline):
    """Send the test its source, then read its JSON lines until it exits or ``deadline`` passes."""
    import json
    import select

    try:
        child.stdin.write(source)
        child.stdin.close()
    except OSError:
        pass
    buffered, lines, err = b"", [], b""
    streams = [child.stdout, child.stderr]
    while streams:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select(streams, [], [], left)
        for stream in ready:
            chunk = os.read(stream.fileno(), 1 << 16)
            if not chunk:
                streams.remove(stream)
            elif stream is child.stderr:
                err = (err + chunk)[-4096:]
            else:
                buffered += chunk
                while b"\n" in buffered:
                    line, buffered = buffered.split(b"\n", 1)
                    try:
                        lines.append(json.loads(line.decode("utf-8")))
                    except ValueError:
                        pass
    return lines, err.decode("utf-8", "replace")


def _assemble(out, lines, asked, timed_out, budget_s, code, err):
    by_gpu = {i: {"index": i, "state": "tested"} for i in asked}
    for item in lines:
        if not isinstance(item, dict):
            continue
        if "error" in item and "gpu" not in item:
            out["error"] = str(item["error"])
            continue
        gpu = by_gpu.get(item.get("gpu"))
        if gpu is None:
            continue
        if "skipped" in item:
            gpu.update(state="skipped", why=str(item["skipped"]))
        elif "failed" in item:
            gpu.update(state="failed", why=str(item["failed"]))
        elif item.get("part"):
            gpu[str(item["part"])] = {k: v for k, v in item.items() if k not in ("gpu", "part")}
        elif item.get("done"):
            gpu["done"] = True
            gpu.update({k: v for k, v in item.items() if k not in ("gpu", "done")})
    for gpu in by_gpu.values():
        if gpu["state"] == "tested" and not gpu.pop("done", False):
            if timed_out:
                gpu.update(state="timed_out", why="the test did not finish in %.0f s and was ended" % budget_s)
            elif "error" in out:
                gpu.update(state="not_run", why=out["error"])
            else:
                gpu.update(state="failed", why="the test's process ended (exit %s) %s" % (code, err.strip()[-300:]))
        gpu.pop("done", None)
    out["gpus"] = sorted(out["gpus"] + list(by_gpu.values()), key=lambda g: g["index"])
