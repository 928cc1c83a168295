"""Node-side NVML reader (``gpudiag_node.nvml``; runs on the node's python3).

Reads the readings of the table (``readings.py``) straight from ``libnvidia-ml.so.1`` through the pure-Python
nvidia-ml-py binding (``pynvml``), which travels in the bundle: the node needs nothing installed. Values are
in the units of the readings' names. A reading the GPU cannot give (NotSupported, NoPermission, a function
this driver lacks) is ``None``: not applicable. A reading whose call *failed* (NVMLError_Unknown, any other
error) is ``None`` too, and its error goes in the row's ``errors``: a missing reading, which the checks call
UNKNOWN. A lost GPU is marked lost while the others report. The total-energy counter (mJ), read at the start
and the end of the window, gives the exact average power over it.

NVML reference: https://docs.nvidia.com/deploy/nvml-api/ (nvmlDevice* queries).
"""

import time

from . import gpm, links, readings


class NvmlUnavailable(Exception):
    """NVML cannot be used on this node (no library, no driver, a binding newer than the driver)."""


# Errors that mean "this GPU cannot report this": not applicable, not a failure.
NOT_APPLICABLE = ("NVMLError_NotSupported", "NVMLError_NoPermission", "NVMLError_FunctionNotFound",
                  "NVMLError_InvalidArgument", "NVMLError_NoData")
# nvmlReturn_t codes of a field value that mean the same (nvml.h): INVALID_ARGUMENT (a field id this driver
# does not know), NOT_SUPPORTED, NO_PERMISSION, FUNCTION_NOT_FOUND.
_FIELD_NOT_APPLICABLE = (2, 3, 4, 13)
_FIELD_VALUES = "nvmlDeviceGetFieldValues"


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


class _Failed(Exception):
    """A reading's call failed (not merely unsupported): its message goes in the row's errors."""


class Reader(object):
    """NVML calls as the collector makes them: not applicable is None, a failure is :class:`_Failed`, a struct
    getter is given its struct (bench/nvml_call_cost.py times the same calls)."""

    def __init__(self, pynvml):
        self.nv = pynvml
        self.not_applicable = tuple(getattr(pynvml, n) for n in NOT_APPLICABLE if hasattr(pynvml, n))
        self.lost = tuple(getattr(pynvml, n) for n in ("NVMLError_GpuIsLost",) if hasattr(pynvml, n))
        self.error = getattr(pynvml, "NVMLError", Exception)

    def call(self, name, *args):
        """pynvml.<name>(*args); None when not applicable; :class:`_Failed` on any other NVML error;
        GpuIsLost propagates."""
        fn = getattr(self.nv, name, None)
        if fn is None:
            return None
        try:
            return fn(*args)
        except self.lost:
            raise
        except self.not_applicable:
            return None
        except self.error as exc:
            raise _Failed("%s: %s" % (type(exc).__name__, exc)) from exc

    def field(self, handle, name):
        """One NVML field value (nvmlDeviceGetFieldValues), as a number, or None."""
        field_id = getattr(self.nv, name, None)
        if field_id is None:
            return None
        values = self.call("nvmlDeviceGetFieldValues", handle, [field_id])
        return _field_value(name, values[0]) if values else None

    def fields(self, handle, names):
        """{name: (number or None, error or None)} of several field values in ONE nvmlDeviceGetFieldValues call
        (each field has its own return code), as :meth:`field` reads each: a name the binding lacks is None.
        Where the call fails as a whole, each field is asked alone, so that no field costs another its value."""
        ids = [(name, getattr(self.nv, name)) for name in names if getattr(self.nv, name, None) is not None]
        out = dict.fromkeys(names, (None, None))
        try:
            values = self.call(_FIELD_VALUES, handle, [i for _, i in ids]) if ids else ()
        except _Failed:
            values = None
        for n, (name, _) in enumerate(ids):
            try:
                out[name] = (_field_value(name, values[n]) if values is not None and len(values) == len(ids)
                             else self.field(handle, name), None)
            except _Failed as exc:
                out[name] = (None, str(exc))
        return out

    def struct(self, name, handle):
        """A getter of ``readings.STRUCT_GETTERS``: the struct it fills, in the newest version the driver
        takes; None when not applicable (a GPU that needs no fabric)."""
        fn = getattr(self.nv, name, None) if hasattr(self.nv, "byref") else None  # pynvml's ctypes byref
        mismatch = getattr(self.nv, "NVMLError_ArgumentVersionMismatch", None)
        if fn is None:
            return None
        for cls_name, version in readings.STRUCT_GETTERS[name]:
            cls = getattr(self.nv, cls_name, None)
            if cls is None or (version is not None and not hasattr(self.nv, version)):
                continue
            filled = cls()
            if version is not None:
                filled.version = getattr(self.nv, version)
            try:
                # By reference: the C function fills the struct it points to. Passing none (or the struct by
                # value) crashes the interpreter with SIGSEGV on driver 580 (captured on the H200).
                fn(handle, self.nv.byref(filled))
            except self.lost:
                raise
            except self.not_applicable:
                return None
            except self.error as exc:
                if mismatch is not None and isinstance(exc, mismatch):
                    continue  # a driver older than this struct: try the previous version
                raise _Failed("%s: %s" % (type(exc).__name__, exc)) from exc
            return _Fabric(filled)
        return None

    def read(self, handle, reading, cache):
        """The reading's value in its unit, or None; ``cache`` holds this device's results of this round, so a
        getter two readings share (utilization, memory info) is called once."""
        getters, args, attribute = reading.nvml
        result = None
        for getter in getters:
            key = (getter, args)
            if key not in cache:
                try:
                    if getter == _FIELD_VALUES:
                        cache[key] = (self.field(handle, args[0]), None)
                    elif getter in readings.STRUCT_GETTERS:
                        cache[key] = (self.struct(getter, handle), None)
                    elif all(hasattr(self.nv, a) for a in args):
                        cache[key] = (self.call(getter, handle, *[getattr(self.nv, a) for a in args]), None)
                    else:  # a binding older than the constant: not reported, never a crash
                        cache[key] = (None, None)
                except _Failed as exc:
                    cache[key] = (None, str(exc))
            result, error = cache[key]
            if error is not None:
                raise _Failed(error)
            if result is not None:
                break
        if result is not None and isinstance(attribute, int):
            result = result[attribute] if len(result) > attribute else None
        elif result is not None and attribute is not None:
            result = getattr(result, attribute, None)
        return _convert(reading, result)


def _field_value(name, value):
    """A filled nvmlFieldValue_t as a number; None when not applicable; :class:`_Failed` on another error."""
    if value.nvmlReturn in _FIELD_NOT_APPLICABLE:
        return None
    if value.nvmlReturn != 0:
        raise _Failed("nvmlDeviceGetFieldValues(%s): return code %d" % (name, value.nvmlReturn))
    union = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")
    kind = value.valueType
    return getattr(value.value, union[kind]) if 0 <= kind < len(union) else None


class _Fabric(object):
    """A filled nvmlGpuFabricInfo struct, with its status in words: valid only once the state is completed
    (nvml.h), "Success" for NVML_SUCCESS."""

    def __init__(self, filled):
        self.state = filled.state
        self.healthSummary = getattr(filled, "healthSummary", None)
        completed = filled.state == 3  # NVML_GPU_FABRIC_STATE_COMPLETED
        self.status_text = None if not completed else "Success" if filled.status == 0 else \
            "NVML error %d" % filled.status


def _convert(reading, value):
    if value is None:
        return None
    if reading.kind == "enum":
        return readings.enum_name(reading.name, int(value))
    if reading.kind == "flag":
        return 1 if value else 0
    if reading.kind == "text":
        return _text(value)
    if reading.kind == "cc":
        return "%d.%d" % tuple(value)
    if reading.kind == "pstate":
        return "P%d" % value if 0 <= value < 32 else None  # 32: NVML_PSTATE_UNKNOWN
    if reading.scale != 1.0:
        return value * reading.scale
    return value


def _row(r, index, handle, table):
    """{name: value} of ``table``'s readings for one device, plus ``errors`` {name: why} for failed calls."""
    row = {"index": index}
    errors = {}
    # The table's field values in one call where the driver takes it (2 calls a round instead of 6).
    fields = [reading.nvml[1][0] for reading in table
              if reading.nvml is not None and reading.nvml[0] == (_FIELD_VALUES,)]
    cache = {(_FIELD_VALUES, (name,)): found for name, found in r.fields(handle, fields).items()} if fields else {}
    for reading in table:
        if reading.nvml is None:
            continue
        try:
            row[reading.name] = r.read(handle, reading, cache)
        except _Failed as exc:
            row[reading.name] = None
            errors[reading.name] = str(exc)
    if errors:
        row["errors"] = errors
    return row


def _energy(r, handle):
    try:
        value = r.call("nvmlDeviceGetTotalEnergyConsumption", handle)  # mJ since the driver loaded
    except _Failed:
        return None
    return None if value is None else (time.monotonic(), value)


def _processes(r, handle):
    """The compute processes on one GPU: [{"pid", "used_memory_mib"}] (None: the driver cannot list them)."""
    found = r.call("nvmlDeviceGetComputeRunningProcesses", handle)
    if found is None:
        return None
    out = []
    for p in found:
        used = getattr(p, "usedGpuMemory", None)
        out.append({"pid": int(p.pid), "used_memory_mib": round(used * readings.MIB, 1) if used else None})
    return out


def _process_utilization(r, handle, since_s):
    """{pid: median SM utilization %} of the driver's per-process samples since ``since_s`` (epoch), or {}."""
    try:
        found = r.call("nvmlDeviceGetProcessUtilization", handle, int(since_s * 1e6))
    except _Failed:
        return {}
    per_pid = {}
    for sample in found or ():
        per_pid.setdefault(int(sample.pid), []).append(sample.smUtil)
    return {pid: sorted(v)[(len(v) - 1) // 2] for pid, v in per_pid.items()}


class _Watch(object):
    """What is read only for the GPUs that have processes, over the window: their processes (with the
    per-process utilization and, through ``watcher``, /proc), and GPM, one GPU at a time."""

    def __init__(self, r, handles, watcher):
        self.r = r
        self.watcher = watcher
        self.per_gpu = {}
        self.errors = {}
        self.gpm_started = {}
        self.gpm = {}
        for index, handle in handles.items():
            try:
                found = _processes(r, handle)
            except (_Failed,) + r.lost as exc:
                self.errors[str(index)] = str(exc)
                continue
            if found:
                self.per_gpu[index] = found
        self.t0 = time.time()

    def start(self, handles, rows):
        """``rows``: the GPUs' static rows, whose MIG mode GPM needs (not read twice)."""
        if self.watcher is not None and self.per_gpu:
            self.watcher.start(self.per_gpu)
        mig = {row.get("index"): row.get("mig_mode_enabled") for row in rows}
        for index in sorted(self.per_gpu):
            try:
                self.gpm_started[index] = (gpm.begin(self.r.nv, handles[index], mig.get(index)), time.monotonic())
            except gpm.Unavailable as exc:
                self.gpm[str(index)] = {"why": str(exc)}
            except self.r.lost:
                pass

    def finish(self, handles, out):
        for index, (first, t0) in sorted(self.gpm_started.items()):
            wait = gpm.MIN_WINDOW_S - (time.monotonic() - t0)
            if wait > 0:
                time.sleep(wait)  # a single sample's window is shorter than GPM's least
            try:
                self.gpm[str(index)] = gpm.end(self.r.nv, handles[index], first) if index in handles \
                    else {"why": "the GPU was lost"}
            except gpm.Unavailable as exc:
                self.gpm[str(index)] = {"why": str(exc)}
        since = min(self.t0, time.time() - 1.0)  # the driver keeps a sample about every 1/6 s
        for index, procs in self.per_gpu.items():
            try:
                util = _process_utilization(self.r, handles[index], since) if index in handles else {}
            except self.r.lost:
                util = {}
            for p in procs:
                p["sm_util_pct"] = util.get(p["pid"])
        out["processes"] = {str(i): p for i, p in sorted(self.per_gpu.items())}
        if self.errors:
            out["processes_errors"] = self.errors
        out["gpm"] = self.gpm


def _topology(r, handles, out):
    """The GPU pairs' links into ``out["topology"]``, or why not into ``out["topology_unreadable"]``."""
    from . import topology

    bus_ids = {g.get("index"): g.get("pci_bus_id") for g in out["gpus"]}
    active = {int(i): g.get("active") for i, g in ((out.get("nvlink") or {}).get("end") or {}).items()}
    try:
        out["topology"] = topology.read(r, handles, bus_ids, active)
    except topology.Unreadable as exc:
        out["topology_unreadable"] = str(exc)[:300]


def collect(pynvml, samples, interval_s, watcher=None, topology_if=None, shutdown=True):
    """Read every GPU ``samples`` times, ``interval_s`` apart. Raises :class:`NvmlUnavailable`.
    ``watcher`` (processes.Watcher) is told the GPUs' processes when the window opens. ``topology_if``: a
    function of the rows read (this function's answer so far) that says whether to read the GPU pairs' links
    too (topology.py): ``topology`` in the answer, or why not (``topology_unreadable``). ``shutdown=False``:
    NVML is left initialized, for a process that ends right after (its exit does the same, 3 ms less on an H200)."""
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # any init failure means "use nvidia-smi instead", with the reason
        raise NvmlUnavailable("%s: %s" % (type(exc).__name__, exc)) from exc
    r = Reader(pynvml)
    try:
        try:
            cuda = r.call("nvmlSystemGetCudaDriverVersion")
            driver = _text(r.call("nvmlSystemGetDriverVersion"))
        except _Failed:
            cuda = driver = None
        out = {
            "driver_version": driver,
            "cuda_version": "%d.%d" % (cuda // 1000, (cuda % 1000) // 10) if cuda else None,
            "gpus": [],
            "samples": [],
            "energy": [],
        }
        count = pynvml.nvmlDeviceGetCount()
        handles = {}
        for index in range(count):
            try:
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                out["gpus"].append(_row(r, index, handle, readings.STATIC))
                handles[index] = handle
            except r.lost + r.not_applicable + (r.error,) as exc:
                out["gpus"].append({"index": index, "lost": True, "error": str(exc)})
        watch = _Watch(r, handles, watcher)
        watch.start(handles, out["gpus"])
        nvlink_end = links.nvml_window(r, handles)  # the links' counters now, and again at the end
        start_energy = {}
        # One sample has no window to average over (and the counter reads cost an H200 4 ms each).
        for index, handle in list(handles.items()) if samples > 1 else ():
            try:
                start_energy[index] = _energy(r, handle)
            except r.lost:
                pass
        start = time.monotonic()
        for i in range(samples):
            delay = start + i * interval_s - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            rows = []
            for index, handle in list(handles.items()):
                try:
                    rows.append(_row(r, index, handle, readings.PER_SAMPLE))
                except r.lost as exc:
                    rows.append({"index": index, "lost": True, "error": str(exc)})
                    del handles[index]
            out["samples"].append({"t_s": round(time.monotonic() - start, 3), "rows": rows})
        for index, handle in handles.items() if start_energy else ():
            try:
                end = _energy(r, handle)
            except r.lost:
                continue
            begin = start_energy.get(index)
            if begin is not None and end is not None and end[0] > begin[0]:
                out["energy"].append({"index": index, "window_s": round(end[0] - begin[0], 3),
                                      "energy_mj": end[1] - begin[1]})
        nvlink = nvlink_end(handles)
        if nvlink:
            out["nvlink"] = nvlink
        watch.finish(handles, out)
        if topology_if is not None and topology_if(out):
            _topology(r, handles, out)
        return out
    finally:
        try:
            if shutdown:
                pynvml.nvmlShutdown()
        except Exception:
            pass
