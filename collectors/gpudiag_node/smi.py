"""The GPUs through nvidia-smi: which ``--query-gpu`` fields this driver knows, the sampling window's calls,
the compute processes it lists, the CUDA version, and the NVLink calls of the fabric nodes.

Every call is bounded (``proc.run``); its failures (not installed, exit 9 driver not loaded, exit 6 no devices,
a lost GPU) are data in the document, which carries the raw text: the controller parses it
(``gpudiag.collect.parse``), so the parser can be unit tested on recorded output.
"""

import time

from . import links, proc, readings, wire
from .proc import in_thread
from .rows import number, rows_read

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


APPS_QUERY = "--query-compute-apps=gpu_uuid,pid,used_memory"


def smi_processes(smi, doc, call_timeout_s):
    """The compute processes nvidia-smi lists, by GPU index (mapped through the uuids of the rows read):
    {index: [{"pid", "used_memory_mib"}]}; its failure goes in the document's problems."""
    code, out, err = proc.run([smi, APPS_QUERY, "--format=csv,noheader,nounits"], call_timeout_s)
    if code != 0:
        doc["problems"].append("nvidia-smi %s: exit %s %s" % (APPS_QUERY, code, (err or out).strip()[:200]))
        return {}
    by_uuid = {}
    for row in rows_read(doc):
        if row.get("uuid") and row.get("index") is not None:
            by_uuid[row["uuid"]] = int(number(row["index"]) or 0)
    per_gpu = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 3 or cells[0] not in by_uuid or not cells[1].isdigit():
            continue
        per_gpu.setdefault(by_uuid[cells[0]], []).append(
            {"pid": int(cells[1]), "used_memory_mib": number(cells[2]), "sm_util_pct": None})
    return per_gpu


def collect(samples, interval_s, call_timeout_s, doc=None, watcher=None):
    """Read the GPUs through nvidia-smi into ``doc`` (a new document when None); ``watcher``
    (processes.Watcher) is told the GPUs' processes after the first sample."""
    doc = wire.new_document() if doc is None else doc
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
        driver = next((row.get("driver_version") for row in rows_read(doc)), None) if cuda is None else None
        if cuda is None and (driver is not None or code == 0):
            cuda = in_thread(doc, lambda found=driver: _set_cuda_version(doc, smi, found, call_timeout_s))
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
    return any(readings.enum_from_words(str(row.get("fabric_state") or "")) in _ON_FABRIC for row in rows_read(doc))


def _set_cuda_version(doc, smi, driver_version, timeout_s):
    doc["cuda_version"], doc["cuda_version_from"] = cuda_version(smi, driver_version, timeout_s)


def _query(smi, chosen):
    return [smi, "--query-gpu=" + ",".join(name for _, name in chosen), "--format=csv,noheader,nounits"]
