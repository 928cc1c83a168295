"""gpudiag's node-side collector: runs ON the GPU node, standard library only, prints one JSON document.

The controller sends this file over the SSH channel, bundled with its helpers (``gpudiag.collect.bundle``:
the table of readings, the NVML reader, ...), so nothing is installed on the node. It does every piece of
collection in one process, one round trip:

* the readings of the table (``readings.py``) through NVML where the bundled binding loads, else nvidia-smi;
* which ``--query-gpu`` fields this driver knows (``nvidia-smi --help-query-gpu``): old drivers reject
  ``compute_cap`` and spell the clock reasons ``clocks_throttle_reasons.*``;
* several samples of those fields over a window (default 5 over ~2 s), every sample kept raw;
* hostname, kernel, driver and CUDA versions;
* nvidia-smi's failures (not installed, exit 9 driver not loaded, exit 6 no devices, a lost GPU) as data.

The document carries raw text; the controller parses it (``gpudiag.collect.parse``), so the parser can be unit
tested on recorded output and this script stays small. Schema: ``gpudiag.probe/2``.
"""

# Only what every run needs is imported here: argparse, ctypes and re where they are used, threads through
# proc.Thread (not the threading module), JSON through jsoncodec (not the json package, which imports re). The
# collector starts once per node per sweep, and its start-up is most of its own cost.
import os
import sys
import time

from . import jsoncodec, links, proc, readings

SCHEMA = "gpudiag.probe/2"  # 2: NVML rows keyed by the readings' names (readings.py)

# Reading name -> the --query-gpu names that mean it, newest spelling first (from the table of readings).
FIELDS = readings.smi_fields()
ONCE = frozenset(r.name for r in readings.ONCE)

# Where nvidia-smi lives when a non-interactive SSH session's PATH is minimal.
EXTRA_SMI_DIRS = ("/usr/bin", "/usr/local/bin", "/usr/local/nvidia/bin", "/usr/lib/wsl/lib", "/opt/nvidia/bin")


def find_nvidia_smi():
    return proc.find_tool("nvidia-smi", EXTRA_SMI_DIRS)


def known_fields(help_text):
    """Every field name the driver's --help-query-gpu lists (both spellings of aliased fields)."""
    import re

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


# The CUDA version each driver branch supports (NVIDIA's "CUDA Toolkit and Corresponding Driver Versions"
# table): what nvmlSystemGetCudaDriverVersion, and so nvidia-smi's header, reports when libcuda is not found
# ("a known supported version number", NVML reference). It spares a node without libcuda (a container
# given only the "utility" capability, a simulated node) a second nvidia-smi call; a newer branch than
# this table knows still asks nvidia-smi.
CUDA_BY_DRIVER_BRANCH = {
    450: "11.0", 455: "11.1", 460: "11.2", 465: "11.3", 470: "11.4", 495: "11.5", 510: "11.6", 515: "11.7",
    520: "11.8", 525: "12.0", 530: "12.1", 535: "12.2", 545: "12.3", 550: "12.4", 555: "12.5", 560: "12.6",
    565: "12.7", 570: "12.8", 575: "12.9", 580: "13.0",
}


def cuda_version(smi, driver_version, timeout_s):
    """(CUDA version, where it came from): libcuda when it loads, else the driver branch's known version,
    else plain nvidia-smi's header ("CUDA Version: 13.0"; no --query-gpu field has it)."""
    found = cuda_version_from_libcuda()
    if found:
        return found, "libcuda"
    branch = (driver_version or "").split(".")[0]
    if branch.isdigit() and int(branch) in CUDA_BY_DRIVER_BRANCH:
        return CUDA_BY_DRIVER_BRANCH[int(branch)], "driver branch"
    import re

    code, out, _ = proc.run([smi], timeout_s)
    match = re.search(r"CUDA Version:\s*([0-9.]+)", out)
    return (match.group(1), "nvidia-smi") if match else (None, None)


def new_document():
    uname = os.uname()  # nodename is what gethostname(2) returns on Linux
    return {
        "schema": SCHEMA,
        "collector": "python",
        "source": "nvidia-smi",
        "host": {"hostname": uname.nodename, "kernel": uname.release},
        "nvidia_smi": None,
        "fields": [],
        "samples": [],
        "cuda_version": None,
        "cuda_version_from": None,
        "problems": [],
    }


APPS_QUERY = "--query-compute-apps=gpu_uuid,pid,used_memory"


def smi_processes(smi, doc, call_timeout_s):
    """The compute processes nvidia-smi lists, by GPU index (mapped through the uuids of the rows read):
    {index: [{"pid", "used_memory_mib"}]}; its failure goes in the document's problems."""
    code, out, err = proc.run([smi, APPS_QUERY, "--format=csv,noheader,nounits"], call_timeout_s)
    if code != 0:
        doc["problems"].append("nvidia-smi %s: exit %s %s" % (APPS_QUERY, code, (err or out).strip()[:200]))
        return {}
    by_uuid = {}
    for row in _rows_read(doc):
        if row.get("uuid") and row.get("index") is not None:
            by_uuid[row["uuid"]] = int(_number(row["index"]) or 0)
    per_gpu = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 3 or cells[0] not in by_uuid or not cells[1].isdigit():
            continue
        per_gpu.setdefault(by_uuid[cells[0]], []).append(
            {"pid": int(cells[1]), "used_memory_mib": _number(cells[2]), "sm_util_pct": None})
    return per_gpu


def collect(samples, interval_s, call_timeout_s, doc=None, watcher=None):
    """Read the GPUs through nvidia-smi into ``doc`` (a new document when None); ``watcher``
    (processes.Watcher) is told the GPUs' processes after the first sample."""
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
    first = proc.run(query, call_timeout_s)
    if first[0] == 2 and "not a valid field" in first[1] + first[2]:
        code, help_text, err = proc.run([smi, "--help-query-gpu"], call_timeout_s)
        doc["nvidia_smi"]["help_exit"] = code
        known = known_fields(help_text)
        if code != 0 or not known:
            doc["problems"].append("nvidia-smi --help-query-gpu: exit %s %s" % (code, (err or help_text)[:400]))
            known = {name for _, candidates in FIELDS for name in candidates[-1:]}
        chosen = choose_fields(known)
        query = _query(smi, chosen)
        first = None
    doc["fields"] = [[logical, name] for logical, name in chosen]
    # The readings read once (health, configuration) are asked for in the first call only: the later calls
    # of the window ask for the rest ("later_fields"), so each costs what it did before them.
    later = [(logical, name) for logical, name in chosen if logical not in ONCE]
    later_query = _query(smi, later)
    if len(later) < len(chosen):
        doc["later_fields"] = [[logical, name] for logical, name in later]
    cuda = None
    nvlink_start, has_links = None, False
    start = time.monotonic()
    for i in range(samples):
        due = start + i * interval_s
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        t = time.monotonic() - start
        code, out, err = first if (i == 0 and first is not None) else proc.run(query if i == 0 else later_query,
                                                                               call_timeout_s)
        doc["samples"].append({"t_s": round(t, 3), "exit": code, "stdout": out, "stderr": err})
        if code in (6, 9, 12, 127, proc.TIMED_OUT):
            # no devices / no driver / no NVML: asking again says nothing new (nor would the header); a hung
            # call (recorded in proc.HUNG) would hang again and cost the rest of the deadline.
            break
        if i == 0 and code == 0 and _nvlink_fabric(doc):
            # NVLink through nvidia-smi costs a call (~25 ms of CPU, a fifth of the collector), paid only on
            # the NVLink-fabric nodes (NVSwitches, or a GPU that reports a fabric state: HGX, GB200). NVML, the
            # usual path, reads the links of every node for next to nothing.
            nvlink_start, has_links = links.smi_start(smi, call_timeout_s)
        if i == 0 and watcher is not None and code == 0:
            found = smi_processes(smi, doc, call_timeout_s)
            doc["processes_from"] = "nvidia-smi"
            if found:
                watcher.start(found)
        # After the first answer, which names the driver, and beside the rest of the window. Not after a
        # failed or hung call: the header would fail (or hang) the same way.
        driver = next((row.get("driver_version") for row in _rows_read(doc)), None) if cuda is None else None
        if cuda is None and (driver is not None or code == 0):
            cuda = _in_thread(doc, lambda found=driver: _set_cuda_version(doc, smi, found, call_timeout_s))
    if cuda is not None:
        cuda.join()
    if nvlink_start is not None and has_links:  # only a node whose GPUs list links pays the end's calls
        doc["nvlink_smi"] = links.smi_end(smi, nvlink_start, call_timeout_s)
    return doc


# The fabric states of a GPU that sits on an NVLink fabric (not "not_supported", nor nvidia-smi's N/A).
_ON_FABRIC = frozenset(readings.ENUMS["fabric_state"][1:])


def _nvlink_fabric(doc):
    """Whether the node's GPUs sit on an NVLink fabric: NVSwitches found, or a GPU reporting a fabric state."""
    if doc.get("fabric_manager"):
        return True
    return any(readings.enum_from_words(str(row.get("fabric_state") or "")) in _ON_FABRIC for row in _rows_read(doc))


def _set_cuda_version(doc, smi, driver_version, timeout_s):
    doc["cuda_version"], doc["cuda_version_from"] = cuda_version(smi, driver_version, timeout_s)


def _query(smi, chosen):
    return [smi, "--query-gpu=" + ",".join(name for _, name in chosen), "--format=csv,noheader,nounits"]


def _in_thread(doc, fn):
    """Run ``fn()`` beside the sampling (a failure goes to the document's problems). The waits are
    subprocesses and sleeps, so threads overlap them instead of adding them up."""
    def run():
        try:
            fn()
        except Exception as exc:  # an extra must not cost the readings
            doc["problems"].append("%s: %s" % (type(exc).__name__, exc))

    return proc.Thread(run).start()


def collect_nvml(doc, samples, interval_s, watcher=None):
    """Read the GPUs through NVML into ``doc``; False (and the reason in the document) when NVML cannot
    be used here, so the caller falls back to nvidia-smi."""
    try:
        import ctypes
        ctypes.CDLL("libnvidia-ml.so.1")  # fail fast, before compiling the 300 KB binding for nothing
    except OSError as exc:
        doc["nvml_unavailable"] = "NVMLError_LibraryNotFound: NVML Shared Library Not Found (%s)" % exc
        return False
    try:
        import pynvml  # the bundle carries it; a node's own copy is not needed

        from . import nvml as nvml_reader
    except ImportError as exc:
        doc["nvml_unavailable"] = "the NVML binding did not travel with the collector (%s)" % exc
        return False
    except Exception as exc:  # a broken binding on the node must not stop the collection
        doc["nvml_unavailable"] = "%s: %s" % (type(exc).__name__, exc)
        return False
    try:
        doc["nvml"] = nvml_reader.collect(pynvml, samples, interval_s, watcher)
        doc["processes_from"] = "nvml"
    except nvml_reader.NvmlUnavailable as exc:
        doc["nvml_unavailable"] = str(exc)
        return False
    doc["source"] = "nvml"
    doc["cuda_version"] = doc["nvml"].get("cuda_version")
    doc["cuda_version_from"] = "nvml" if doc["cuda_version"] else None
    return True


def _nvml_bounded(doc, samples, interval_s, bound_s, watcher=None):
    """:func:`collect_nvml` in a thread, given the sampling window and ``bound_s`` more: NVML calls cannot be
    killed, and one into a wedged driver never returns. Past that, the call is recorded as hung and False
    sends the caller to nvidia-smi, whose calls are bounded one by one. The thread fills a document of its own,
    merged only when it finishes in time, so a late answer cannot change what is being written."""
    own = {"problems": []}
    done = []
    started = time.monotonic()
    thread = _in_thread(own, lambda: done.append(collect_nvml(own, samples, interval_s, watcher)))
    thread.join(samples * interval_s + bound_s)
    if thread.is_alive():
        proc.HUNG.append({"call": "NVML", "after_s": round(time.monotonic() - started, 1)})
        doc["nvml_unavailable"] = "NVML did not answer in %.0f s" % (time.monotonic() - started)
        return False
    doc["problems"].extend(own.pop("problems"))
    doc.update(own)
    return bool(done and done[0])


def _start_dcgm(doc, samples, interval_s, timeout_s):
    """Read DCGM's profiling fields in a thread, over the same window as the GPU samples."""
    if proc.find_tool("dcgmi") is None:  # the common case: no module to load, no thread to start
        doc["dcgm"] = {"available": False, "why": "dcgmi is not installed"}
        return None
    try:
        from . import dcgm
    except ImportError:
        return None  # running alone, not from a bundle
    def run():
        doc["dcgm"] = dcgm.collect(samples, interval_s, timeout_s)

    return proc.Thread(run).start()


def collect_context(doc, call_timeout_s, with_topology=True):
    """The node's GPU topology and virtualization (collectors/gpudiag_node/context.py) into ``doc["context"]``."""
    try:
        from . import context as node_context
        doc["context"] = node_context.collect(find_nvidia_smi(), call_timeout_s, with_topology)
    except Exception as exc:  # context enriches the verdict; its failure must not cost the readings
        doc["problems"].append("node context: %s: %s" % (type(exc).__name__, exc))


# The log scan's share of the collector's deadline: the GPU readings must come back whatever a log costs
# (a huge tail, a slow regex, a file that blocks), so the scan stops at its share and says "cut".
LOG_SHARE = 0.5


def _logscan():
    from . import logscan
    return logscan


def collect_logs(doc, sources, call_timeout_s, deadline=None, into=None):
    """Scan the log ``sources`` (collectors/gpudiag_node/logscan.py) into ``into`` (else ``doc["logs"]``), one entry
    per source, each appended as it is done."""
    try:
        found = _logscan().scan_all(sources, call_timeout_s, deadline, into)
        if into is None:
            doc["logs"] = found
    except Exception as exc:
        doc["problems"].append("log scan: %s: %s" % (type(exc).__name__, exc))


class _Lines(object):
    """Where the forked scan puts each source's result: one JSON line on a pipe, as soon as it is done."""

    def __init__(self, fd):
        self.fd = fd

    def append(self, item):
        data = (jsoncodec.dumps(item) + "\n").encode()
        while data:
            data = data[os.write(self.fd, data):]


def _start_logs(doc, sources, call_timeout_s, share_s=None):
    """Start the log scan in a child process with its own share of the deadline: a regex that never ends
    or a read that blocks costs that child, which is ended at the deadline, never the GPU readings."""
    share_s = max(1.0, LOG_SHARE * call_timeout_s) if share_s is None else share_s
    deadline = time.monotonic() + share_s
    _logscan()  # imported before the fork, so the child needs no import lock
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: scan, write, and leave without running the parent's exit handlers
        try:
            os.close(read_fd)
            problems = {"problems": []}
            collect_logs(problems, sources, call_timeout_s, deadline, _Lines(write_fd))
            for problem in problems["problems"]:
                _Lines(write_fd).append({"problem": problem})
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks = []

    def drain():  # beside the sampling, so the child never waits on a full pipe
        while True:
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                return
            chunks.append(chunk)

    reader = proc.Thread(drain).start()
    return pid, read_fd, reader, chunks, share_s, deadline


def _finish_logs(doc, sources, started):
    """Wait for the log scan until its share of the deadline (and a second to write), end it, and put what
    it finished in the document; a source it did not finish is "unreadable", and says why."""
    import signal

    pid, read_fd, reader, chunks, share_s, deadline = started
    reader.join(max(0.0, deadline + 1.0 - time.monotonic()))
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    os.waitpid(pid, 0)
    reader.join(1.0)
    try:
        os.close(read_fd)
    except OSError:
        pass
    done = []
    for line in b"".join(chunks).split(b"\n"):
        try:
            item = jsoncodec.loads(line.decode("utf-8")) if line else None
        except ValueError:
            continue  # the last line, cut when the child was ended
        if isinstance(item, dict) and "problem" in item:
            doc["problems"].append(str(item["problem"]))
        elif isinstance(item, dict):
            done.append(item)
    for source in sources[len(done):]:
        done.append({"path": source.get("path"), "status": "unreadable", "cut": True,
                     "error": "the log scan did not finish within its share of the deadline (%.0f s): the "
                              "log blocks, or a pattern is too slow for it" % share_s})
    doc["logs"] = done


def _processes_module():
    from . import processes
    return processes


class _Watcher(object):
    """processes.Watcher, imported only when a GPU has processes: an idle node pays nothing for it."""

    def __init__(self, doc, nccl_ras=True):
        self.doc = doc
        self.watcher = None
        self.t0 = None
        self.nccl_ras = nccl_ras
        self.ras = None  # (thread, result list, when it started)

    def start(self, per_gpu):
        try:
            self.watcher = _processes_module().Watcher()
            self.watcher.start(per_gpu)
            self.t0 = self.watcher.t0
        except Exception as exc:  # who is on the GPU enriches the verdict; it must not cost the readings
            self.doc["problems"].append("processes: %s: %s" % (type(exc).__name__, exc))
        if self.nccl_ras and per_gpu:
            self._start_ras(per_gpu)

    def _start_ras(self, per_gpu):
        """Ask the node's NCCL job (if any) for its RAS status, beside the sampling window: one connection per
        node, whatever the number of processes (collectors/gpudiag_node/nccl_ras.py)."""
        pids = []
        for index in sorted(per_gpu):
            for p in per_gpu[index]:
                if p.get("pid") not in pids:
                    pids.append(p.get("pid"))
        from . import nccl_ras
        found = []
        ras_thread = _in_thread(self.doc, lambda: found.append(
            nccl_ras.collect(pids, _processes_module().proc_root())))
        self.ras = (ras_thread, found, time.monotonic(), nccl_ras.DEADLINE_S)

    def finish(self):
        return self.watcher.finish()

    def finish_ras(self):
        """The RAS answer, waited for at most its own deadline (and a half second) from when it started."""
        if self.ras is None:
            return None
        ras_thread, found, started, deadline_s = self.ras
        ras_thread.join(max(0.0, started + deadline_s + 0.5 - time.monotonic()))
        return found[0] if found else {"asked": True, "error": "no answer within the deadline"}


def scan_server_logs(doc, discover, call_timeout_s, started, processes=None):
    """The logs of the inference servers on the GPUs, found through their stdout and stderr (``discover``:
    {"servers": [{"server", "regex"}], "source": a log source without its path}), scanned like configured
    logs, each with ``found``: the process and descriptor it was found through. ``processes``: the
    processes to look at, when not the GPUs' (``doc["processes"]``)."""
    found = _processes_module().server_logs(doc["processes"] if processes is None else processes,
                                            discover.get("servers"))
    # A log the inventory names is not scanned twice ("resolved": its path with "~" expanded, on the node).
    configured = {os.path.realpath(s.get("resolved") or os.path.expanduser(s["path"]))
                  for s in doc.get("logs") or () if isinstance(s.get("path"), str)}
    found = [(path, how) for path, how in found if os.path.realpath(path) not in configured]
    if not found:
        return
    # What is left of the logs' share of the deadline (the configured logs may have used some): the GPU
    # readings must come back within the deadline whatever the logs cost.
    left_s = LOG_SHARE * call_timeout_s - (time.monotonic() - started)
    if left_s < 1.0:
        doc["problems"].append("the logs of %d server(s) found on the GPUs were not scanned: no time left in "
                               "the logs' share of the deadline" % len(found))
        return
    sources = [dict(discover.get("source") or {}, path=path) for path, _ in found]
    scratch = {"problems": doc["problems"]}
    _finish_logs(scratch, sources, _start_logs(scratch, sources, call_timeout_s, left_s))
    for item, (_, how) in zip(scratch.get("logs", []), found):
        item["found"] = how
    doc.setdefault("logs", []).extend(scratch.get("logs", []))


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
    later = [logical for logical, _ in doc.get("later_fields", [])] or names
    for i, sample in enumerate(doc.get("samples", [])):
        for line in sample.get("stdout", "").splitlines():
            cells = [c.strip() for c in line.split(",")]
            if len(cells) == len(names if i == 0 else later):
                yield dict(zip(names if i == 0 else later, cells))


def looks_starved(doc, busy_pct, low_power_pct):
    """Whether any sample of any GPU read busy (>= busy_pct) at a low share of its enforced power limit."""
    for row in _rows_read(doc):
        util, power = _number(row.get("utilization_pct")), _number(row.get("power_w"))
        limit = _number(row.get("enforced_power_limit_w"))
        if util is not None and power is not None and limit and util >= busy_pct \
                and 100.0 * power / limit <= low_power_pct:
            return True
    return False


def collect_round(config, kept):
    """One document for the collection ``config`` asks for. ``kept``: what a streaming collector keeps
    from one round to the next (the node's context and, once a GPU looked starved, its topology: neither
    changes between refreshes); an empty dict for a single collection."""
    samples = max(1, int(config.get("samples", 5)))
    interval_s = max(0.0, float(config.get("interval_s", 0.5)))
    call_timeout_s = float(config.get("call_timeout_s", 60.0))
    source = config.get("source", "auto")
    started = time.monotonic()
    doc = new_document()
    del proc.HUNG[:]  # a streaming collector's previous round said its own
    # First, while this process has no other thread: the log scan forks (see _start_logs).
    logs = _start_logs(doc, config["logs"], call_timeout_s) if config.get("logs") else None
    extras = []  # run beside the sampling window, which is mostly waiting
    if config.get("dcgm", True):
        extras.append(_start_dcgm(doc, samples, interval_s, call_timeout_s))
    # The topology and the hypervisor explain a starved GPU; where "topology_if" gives the thresholds, they
    # are read (nvidia-smi topo -m, systemd-detect-virt) only when some GPU read busy at low power.
    gate = config.get("topology_if") if config.get("context") else None
    if config.get("context") and "context" in kept:
        doc["context"] = dict(kept["context"])
    elif config.get("context"):
        extras.append(_in_thread(doc, lambda: collect_context(doc, call_timeout_s, with_topology=gate is None)))
    watcher = _Watcher(doc, config.get("nccl_ras", True)) if config.get("gpus", True) \
        and config.get("processes", True) else None
    fabric_manager = links.fabric_manager() if config.get("gpus", True) else None
    if fabric_manager is not None:
        doc["fabric_manager"] = fabric_manager
    if not config.get("gpus", True):
        doc["nvidia_smi"] = {"path": None, "status": "skipped"}
    elif source == "nvidia-smi" or not _nvml_bounded(doc, samples, interval_s, call_timeout_s, watcher):
        collect(samples, interval_s, call_timeout_s, doc, watcher)
    if watcher is not None and watcher.t0 is not None:
        doc["processes"] = watcher.finish()
    ras = watcher.finish_ras() if watcher is not None else None
    if ras is not None:
        doc["nccl_ras"] = ras
    for thread in extras:
        if thread is not None:
            thread.join()
    if logs is not None:
        _finish_logs(doc, config["logs"], logs)
    if config.get("discover_logs") and isinstance(doc.get("processes"), dict):
        scan_server_logs(doc, config["discover_logs"], call_timeout_s, started)
    elif config.get("discover_logs") and not config.get("gpus", True):
        # A log search reads no GPU, so no GPU lists its processes: the servers are found by command line.
        servers = _processes_module().servers_running(config["discover_logs"].get("servers"))
        scan_server_logs(doc, config["discover_logs"], call_timeout_s, started, processes=servers)
    if config.get("active"):  # issue 31: the test of the idle GPUs, last (it needs the window's verdict)
        from . import active
        doc["active"] = active.run(config["active"], doc, _rows_read(doc), started)
    if proc.HUNG:  # each call that outlived its bound and was killed: which one, after how long
        doc["hung"] = list(proc.HUNG)
    if isinstance(doc.get("context"), dict):
        kept.setdefault("context", dict(doc["context"]))
    if gate is not None and isinstance(doc.get("context"), dict):
        if looks_starved(doc, gate.get("busy_pct", 90.0), gate.get("low_power_pct", 60.0)):
            if "starved" not in kept:
                from . import context as node_context
                kept["starved"] = {"topology": node_context.topology(find_nvidia_smi(), call_timeout_s),
                                   "virt": node_context.detect_virt(call_timeout_s)}
            doc["context"].update(kept["starved"])
        else:
            doc["context"]["topology_skipped"] = "no GPU read busy at low power"
    return doc


def _emit(doc):
    sys.stdout.write(jsoncodec.dumps(doc))
    sys.stdout.write("\n")
    sys.stdout.flush()


def main_with_config(config):
    """Run the collection ``config`` asks for and print the document. Keys: samples, interval_s,
    call_timeout_s, source ("auto": NVML where it loads, else nvidia-smi; "nvidia-smi": never NVML),
    gpus (false: do not read the GPUs, for a log search), context (read the GPU topology and whether this
    is a VM), logs (log sources to scan, see collectors/gpudiag_node/logscan.py), stream (see below).

    ``stream`` (gpudiag watch): the process stays and answers one round per line read on stdin, one
    document per line on stdout, until its input ends (the connection closed) or no line came for
    ``idle_s`` (a connection reset leaves stdin open until TCP gives up, hours later). A refresh then costs
    the readings alone: no SSH session, no interpreter start-up, no compiling. A round that runs past
    ``round_deadline_s`` ends everything else in the process group and exits 124, as `timeout` does (the
    controller reads that as a timeout), so a stuck call cannot outlive its round."""
    if not config.get("stream"):
        _emit(collect_round(config, {}))
        return 0
    import signal

    signal.signal(signal.SIGALRM, _end_round)
    deadline_s = max(1, int(round(float(config.get("round_deadline_s", 60.0)))))
    # Without a word from the controller (which knows its refresh interval), a few round deadlines.
    idle_s = float(config.get("idle_s") or 3 * deadline_s + 60)
    kept = {}  # type: dict[str, object]
    rounds = 0
    for _ in _requests(idle_s):
        rounds += 1
        signal.alarm(deadline_s)
        doc = collect_round(config, kept)
        doc["stream"] = {"round": rounds, "pid": os.getpid()}
        _emit(doc)
        signal.alarm(0)
    return 0


# The line a transport that keeps the process writes after the first round's (gpudiag.collect.remote sends it):
# from then on the end of stdin means that the channel closed (watch stopped, the connection dropped), and the
# whole process group ends at once, mid-round too, as the one-shot loader's watcher does. Without it (the
# command run once, its stdin closed after the first line) the round in progress still answers.
KEPT_LINE = b"kept"


def _requests(idle_s):
    """Yield once per empty line on stdin; stop at its end, or when no line came for ``idle_s`` seconds.

    A thread reads stdin the whole time, between rounds and during them, so that its end is seen at once:
    after :data:`KEPT_LINE` it SIGKILLs the process group (a hung nvidia-smi and the collector with it; before,
    a kept collector outlived its channel by up to a call bound, ~12 s). What the loader's buffered read of the
    bundle took in past it (the first round's line) is taken from the buffer first."""
    import signal
    import threading

    fd = sys.stdin.fileno()
    pending = bytearray()
    os.set_blocking(fd, False)
    try:
        pending += sys.stdin.buffer.read1(1 << 16) or b""
    except (BlockingIOError, ValueError, OSError):
        pass
    finally:
        os.set_blocking(fd, True)
    state = {"asked": 0, "ended": False, "kept": False}
    changed = threading.Condition()

    def take_lines():
        while True:
            end = pending.find(b"\n")
            if end < 0:
                return
            line = bytes(pending[:end]).strip()
            del pending[:end + 1]
            if line == KEPT_LINE:
                state["kept"] = True
            else:
                state["asked"] += 1

    def read():
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            with changed:
                if not chunk:
                    if state["kept"]:
                        os.killpg(0, signal.SIGKILL)
                    state["ended"] = True
                    changed.notify()
                    return
                pending.extend(chunk)
                take_lines()
                changed.notify()

    with changed:
        take_lines()
    threading.Thread(target=read, daemon=True).start()
    while True:
        with changed:
            changed.wait_for(lambda: state["asked"] or state["ended"], idle_s)
            if not state["asked"]:
                return  # stdin ended, or nobody asked for a while: the controller is gone (a reset connection)
            state["asked"] -= 1
        yield


def _end_round(*_):
    """SIGALRM past a round's deadline: SIGKILL everything else in this process group (a hung nvidia-smi,
    the log scan's child; sshd gives each command its own group) and exit 124, as `timeout` does. The
    parent is spared: it may be the user's shell in the same group, whose exit status is the session's."""
    import signal

    spared = (os.getpid(), os.getppid())
    group = os.getpgid(0)
    for _ in range(2):  # twice: a child may have forked while the first pass ran
        try:
            pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        except OSError:  # no /proc: the whole group, this process too (the round then reads as cut off)
            os.killpg(0, signal.SIGKILL)
            pids = []
        for pid in pids:
            if pid in spared:
                continue
            try:
                if os.getpgid(pid) == group:
                    os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    os._exit(124)


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(prog="gpudiag-probe")
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--call-timeout", type=float, default=60.0)
    parser.add_argument("--source", choices=("auto", "nvidia-smi"), default="auto")
    args = parser.parse_args(argv)
    return main_with_config({"samples": args.samples, "interval_s": args.interval,
                             "call_timeout_s": args.call_timeout, "source": args.source})


if __name__ == "__main__":
    # Alone (``python3 -m gpudiag_node.probe``) the configuration comes as arguments; in the bundle
    # (gpudiag.collect.bundle) it travels as data and the bundle calls main_with_config itself.
    sys.exit(main())
