"""gpudiag's node-side collector: runs ON the GPU node, standard library only, prints one JSON document.

The controller sends this file over the SSH channel and runs it as ``python3 - ARGS``, so nothing is
installed on the node. It does every piece of collection in one process, one round trip:

* which ``--query-gpu`` fields this driver knows (``nvidia-smi --help-query-gpu``): old drivers reject
  ``compute_cap`` and spell the clock reasons ``clocks_throttle_reasons.*``;
* several samples of those fields over a window (default 5 over ~2 s), every sample kept raw;
* hostname, kernel, driver and CUDA versions;
* nvidia-smi's failures (not installed, exit 9 driver not loaded, exit 6 no devices, a lost GPU) as data.

The document carries raw text; the controller parses it (``agent/parse.py``), so the parser can be unit
tested on recorded output and this script stays small. Schema: ``gpudiag.probe/1``.
"""

import argparse
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import time
from typing import Any, Dict  # noqa: F401 - for the type comment (3.6 has no dict[str, Any])

SCHEMA = "gpudiag.probe/1"

# Logical reading -> the --query-gpu names that mean it, newest spelling first.
# https://docs.nvidia.com/deploy/nvidia-smi/ ("clocks_throttle_reasons" was renamed "clocks_event_reasons").
FIELDS = (
    ("index", ("index",)),
    ("name", ("name",)),
    ("uuid", ("uuid",)),
    ("pci_bus_id", ("pci.bus_id",)),
    ("driver_version", ("driver_version",)),
    ("compute_cap", ("compute_cap",)),
    ("utilization_gpu", ("utilization.gpu",)),
    ("utilization_memory", ("utilization.memory",)),
    ("power_draw", ("power.draw",)),
    ("enforced_power_limit", ("enforced.power.limit", "power.limit")),
    ("default_power_limit", ("power.default_limit",)),
    ("sm_clock", ("clocks.sm", "clocks.current.sm")),
    ("max_sm_clock", ("clocks.max.sm",)),
    ("clock_event_reasons", ("clocks_event_reasons.active", "clocks_throttle_reasons.active")),
    ("temperature", ("temperature.gpu",)),
    ("pstate", ("pstate",)),
    ("pcie_gen", ("pcie.link.gen.current", "pcie.link.gen.gpucurrent")),
    ("pcie_gen_max", ("pcie.link.gen.max",)),
    ("pcie_width", ("pcie.link.width.current",)),
    ("pcie_width_max", ("pcie.link.width.max",)),
    ("ecc_uncorrected", ("ecc.errors.uncorrected.volatile.total",)),
    ("memory_used", ("memory.used",)),
    ("memory_total", ("memory.total",)),
)

# Where nvidia-smi lives when a non-interactive SSH session's PATH is minimal.
EXTRA_SMI_DIRS = ("/usr/bin", "/usr/local/bin", "/usr/local/nvidia/bin", "/usr/lib/wsl/lib", "/opt/nvidia/bin")

MAX_TEXT = 64 * 1024  # bound every captured stream: a runaway nvidia-smi must not flood the channel


def _run(argv, timeout_s):
    """Run argv; return (exit code, stdout, stderr) as text. Exit 127 when it cannot start."""
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=timeout_s,
            env=dict(os.environ, LC_ALL="C"),
        )
    except FileNotFoundError as exc:
        return 127, "", str(exc)
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after %.0f s" % timeout_s
    except OSError as exc:
        return 126, "", str(exc)
    out = done.stdout[:MAX_TEXT].decode("utf-8", "replace")
    err = done.stderr[:MAX_TEXT].decode("utf-8", "replace")
    return done.returncode, out, err


def find_nvidia_smi():
    found = shutil.which("nvidia-smi")
    if found:
        return found
    for folder in EXTRA_SMI_DIRS:
        candidate = os.path.join(folder, "nvidia-smi")
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def known_fields(help_text):
    """Every field name the driver's --help-query-gpu lists (both spellings of aliased fields)."""
    names = set()
    for line in help_text.splitlines():
        if line.startswith('"'):
            names.update(re.findall(r'"([^"]+)"', line))
    return names


def choose_fields(known):
    """(logical name, query name) for every reading this driver can give."""
    chosen = []
    for logical, candidates in FIELDS:
        for candidate in candidates:
            if candidate in known:
                chosen.append((logical, candidate))
                break
    return chosen


def cuda_version_from_libcuda():
    """The CUDA driver version from libcuda's cuDriverGetVersion (no GPU initialisation, a few ms), or None."""
    try:
        import ctypes
        lib = ctypes.CDLL("libcuda.so.1")
        version = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(version)) == 0 and version.value > 0:
            return "%d.%d" % (version.value // 1000, (version.value % 1000) // 10)
    except Exception:  # no libcuda here, or an odd one: ask nvidia-smi instead
        pass
    return None


def cuda_version(smi, timeout_s):
    """The CUDA version: from libcuda when it loads, else plain nvidia-smi's header ("CUDA Version: 13.0");
    no --query-gpu field has it."""
    found = cuda_version_from_libcuda()
    if found:
        return found
    code, out, _ = _run([smi], timeout_s)
    match = re.search(r"CUDA Version:\s*([0-9.]+)", out)
    return match.group(1) if match else None


def new_document():
    return {  # type: Dict[str, Any]
        "schema": SCHEMA,
        "collector": "python",
        "source": "nvidia-smi",
        "host": {"hostname": socket.gethostname(), "kernel": platform.release()},
        "nvidia_smi": None,
        "fields": [],
        "samples": [],
        "cuda_version": None,
        "problems": [],
    }


def collect(samples, interval_s, call_timeout_s, doc=None):
    """Read the GPUs through nvidia-smi into ``doc`` (a new document when None)."""
    doc = new_document() if doc is None else doc
    smi = find_nvidia_smi()
    if smi is None:
        doc["nvidia_smi"] = {"path": None, "status": "missing"}
        return doc
    doc["nvidia_smi"] = {"path": smi}
    # Ask with the newest field names first; only a driver that rejects one of them costs a look at
    # --help-query-gpu (old drivers lack compute_cap and spell the reasons clocks_throttle_reasons.*).
    chosen = [(logical, candidates[0]) for logical, candidates in FIELDS]
    query = _query(smi, chosen)
    first = _run(query, call_timeout_s)
    if first[0] == 2 and "not a valid field" in first[1] + first[2]:
        code, help_text, err = _run([smi, "--help-query-gpu"], call_timeout_s)
        doc["nvidia_smi"]["help_exit"] = code
        known = known_fields(help_text)
        if code != 0 or not known:
            doc["problems"].append("nvidia-smi --help-query-gpu: exit %s %s" % (code, (err or help_text)[:400]))
            known = {name for _, candidates in FIELDS for name in candidates[-1:]}
        chosen = choose_fields(known)
        query = _query(smi, chosen)
        first = None
    doc["fields"] = [[logical, name] for logical, name in chosen]
    cuda = _in_thread(doc, lambda: doc.__setitem__("cuda_version", cuda_version(smi, call_timeout_s)))
    start = time.monotonic()
    for i in range(samples):
        due = start + i * interval_s
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        t = time.monotonic() - start
        code, out, err = first if (i == 0 and first is not None) else _run(query, call_timeout_s)
        doc["samples"].append({"t_s": round(t, 3), "exit": code, "stdout": out, "stderr": err})
        if code in (6, 9, 12, 127):
            break  # no devices / no driver / no NVML: asking again says nothing new
    cuda.join()
    if not doc["samples"] or doc["samples"][0]["exit"] in (6, 9, 12, 127):
        doc["cuda_version"] = None  # what a failing driver's header says is not a version
    return doc


def _query(smi, chosen):
    return [smi, "--query-gpu=" + ",".join(name for _, name in chosen), "--format=csv,noheader,nounits"]


def _in_thread(doc, fn):
    """Run ``fn()`` beside the sampling (a failure goes to the document's problems). The waits are
    subprocesses and sleeps, so threads overlap them instead of adding them up."""
    import threading

    def run():
        try:
            fn()
        except Exception as exc:  # an extra must not cost the readings
            doc["problems"].append("%s: %s" % (type(exc).__name__, exc))

    thread = threading.Thread(target=run)
    thread.daemon = True
    thread.start()
    return thread


def collect_nvml(doc, samples, interval_s):
    """Read the GPUs through NVML into ``doc``; False (and the reason in the document) when NVML cannot
    be used here, so the caller falls back to nvidia-smi."""
    try:
        import ctypes
        ctypes.CDLL("libnvidia-ml.so.1")  # fail fast, before compiling the 300 KB binding for nothing
    except OSError as exc:
        doc["nvml_unavailable"] = "NVMLError_LibraryNotFound: NVML Shared Library Not Found (%s)" % exc
        return False
    try:
        import gpudiag_nvml
        import pynvml  # the bundle carries it; a node's own copy is not needed
    except ImportError as exc:
        doc["nvml_unavailable"] = "the NVML binding did not travel with the collector (%s)" % exc
        return False
    except Exception as exc:  # a broken binding on the node must not stop the collection
        doc["nvml_unavailable"] = "%s: %s" % (type(exc).__name__, exc)
        return False
    try:
        doc["nvml"] = gpudiag_nvml.collect(pynvml, samples, interval_s)
    except gpudiag_nvml.NvmlUnavailable as exc:
        doc["nvml_unavailable"] = str(exc)
        return False
    doc["source"] = "nvml"
    doc["cuda_version"] = doc["nvml"].get("cuda_version")
    return True


def _start_dcgm(doc, samples, interval_s, timeout_s):
    """Read DCGM's profiling fields in a thread, over the same window as the GPU samples."""
    try:
        import gpudiag_dcgm
    except ImportError:
        return None  # running alone, not from a bundle
    import threading

    def run():
        doc["dcgm"] = gpudiag_dcgm.collect(samples, interval_s, timeout_s)

    thread = threading.Thread(target=run)
    thread.daemon = True
    thread.start()
    return thread


def collect_context(doc, call_timeout_s, with_topology=True):
    """The node's GPU topology and virtualization (collectors/context.py) into ``doc["context"]``."""
    try:
        import gpudiag_context
        doc["context"] = gpudiag_context.collect(find_nvidia_smi(), call_timeout_s, with_topology)
    except Exception as exc:  # context enriches the verdict; its failure must not cost the readings
        doc["problems"].append("node context: %s: %s" % (type(exc).__name__, exc))


def collect_logs(doc, sources, call_timeout_s):
    """Scan the log ``sources`` (collectors/logscan.py) into ``doc["logs"]``, one entry per source."""
    try:
        import gpudiag_logscan
        doc["logs"] = gpudiag_logscan.scan_all(sources, call_timeout_s)
    except Exception as exc:
        doc["problems"].append("log scan: %s: %s" % (type(exc).__name__, exc))


def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _rows_read(doc):
    """Every GPU row read, as {logical name: value}, from either path (NVML rows, or nvidia-smi CSV)."""
    if doc.get("source") == "nvml":
        nvml = doc.get("nvml") or {}
        static = {g.get("index"): g for g in nvml.get("gpus", [])}
        for sample in nvml.get("samples", []):
            for row in sample.get("rows", []):
                merged = dict(static.get(row.get("index"), {}))
                merged.update(row)
                yield merged
        return
    names = [logical for logical, _ in doc.get("fields", [])]
    for sample in doc.get("samples", []):
        for line in sample.get("stdout", "").splitlines():
            cells = [c.strip() for c in line.split(",")]
            if len(cells) == len(names):
                yield dict(zip(names, cells))


def looks_starved(doc, busy_pct, low_power_pct):
    """Whether any sample of any GPU read busy (>= busy_pct) at a low share of its enforced power limit."""
    for row in _rows_read(doc):
        util, power = _number(row.get("utilization_gpu")), _number(row.get("power_draw"))
        limit = _number(row.get("enforced_power_limit"))
        if util is not None and power is not None and limit and util >= busy_pct \
                and 100.0 * power / limit <= low_power_pct:
            return True
    return False


def main_with_config(config):
    """Run the collection ``config`` asks for and print the document. Keys: samples, interval_s,
    call_timeout_s, source ("auto": NVML where it loads, else nvidia-smi; "nvidia-smi": never NVML),
    gpus (false: do not read the GPUs, for a log search), context (read the GPU topology and whether this
    is a VM), logs (log sources to scan, see collectors/logscan.py)."""
    samples = max(1, int(config.get("samples", 5)))
    interval_s = max(0.0, float(config.get("interval_s", 0.5)))
    call_timeout_s = float(config.get("call_timeout_s", 60.0))
    source = config.get("source", "auto")
    doc = new_document()
    extras = []  # run beside the sampling window, which is mostly waiting
    if config.get("dcgm", True):
        extras.append(_start_dcgm(doc, samples, interval_s, call_timeout_s))
    # The topology explains a starved GPU; where "topology_if" gives the thresholds, it is read (one more
    # nvidia-smi call) only when some GPU read busy at low power.
    gate = config.get("topology_if") if config.get("context") else None
    if config.get("context"):
        extras.append(_in_thread(doc, lambda: collect_context(doc, call_timeout_s, with_topology=gate is None)))
    if config.get("logs"):
        extras.append(_in_thread(doc, lambda: collect_logs(doc, config["logs"], call_timeout_s)))
    if not config.get("gpus", True):
        doc["nvidia_smi"] = {"path": None, "status": "skipped"}
    elif source == "nvidia-smi" or not collect_nvml(doc, samples, interval_s):
        collect(samples, interval_s, call_timeout_s, doc)
    for thread in extras:
        if thread is not None:
            thread.join()
    if gate is not None and isinstance(doc.get("context"), dict):
        if looks_starved(doc, gate.get("busy_pct", 90.0), gate.get("low_power_pct", 60.0)):
            import gpudiag_context
            doc["context"]["topology"] = gpudiag_context.topology(find_nvidia_smi(), call_timeout_s)
        else:
            doc["context"]["topology_skipped"] = "no GPU read busy at low power"
    sys.stdout.write(json.dumps(doc, separators=(",", ":")))
    sys.stdout.write("\n")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="gpudiag-probe")
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--call-timeout", type=float, default=60.0)
    parser.add_argument("--source", choices=("auto", "nvidia-smi"), default="auto")
    args = parser.parse_args(argv)
    return main_with_config({"samples": args.samples, "interval_s": args.interval,
                             "call_timeout_s": args.call_timeout, "source": args.source})


if __name__ == "__main__":
    # In a bundle (collectors.bundle) the configuration travels as data in _CONFIG; alone, as arguments.
    _bundled = globals().get("_CONFIG")
    sys.exit(main_with_config(json.loads(_bundled)) if _bundled else main())
