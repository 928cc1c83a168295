"""Node-side NVML reader (imported by probe.py as ``gpudiag_nvml``; runs on the node's python3).

Reads the same readings as the nvidia-smi path, with the same logical names and units, straight from
``libnvidia-ml.so.1`` through the pure-Python nvidia-ml-py binding (``pynvml``), which travels in the
bundle: the node needs nothing installed. A reading the GPU does not support is ``None``, never an error;
a lost GPU is marked lost while the others report. The total-energy counter (mJ), read at the start and
the end of the window, gives the exact average power over it.

NVML reference: https://docs.nvidia.com/deploy/nvml-api/ (nvmlDevice* queries).
"""

import time


class NvmlUnavailable(Exception):
    """NVML cannot be used on this node (no library, no driver, a binding newer than the driver)."""


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


class _Reader(object):
    def __init__(self, pynvml):
        self.nv = pynvml
        # Errors that mean "this GPU cannot report this": a value of None, not a failure.
        self.unsupported = tuple(getattr(pynvml, n) for n in (
            "NVMLError_NotSupported", "NVMLError_NoPermission", "NVMLError_FunctionNotFound",
            "NVMLError_InvalidArgument", "NVMLError_NoData", "NVMLError_Unknown") if hasattr(pynvml, n))
        self.lost = tuple(getattr(pynvml, n) for n in ("NVMLError_GpuIsLost",) if hasattr(pynvml, n))

    def get(self, name, *args):
        """pynvml.<name>(*args), or None when unsupported; GpuIsLost propagates."""
        fn = getattr(self.nv, name, None)
        if fn is None:
            return None
        try:
            return fn(*args)
        except self.lost:
            raise
        except self.unsupported:
            return None

    def reasons(self, handle):
        # Renamed from "throttle" to "event" reasons in newer bindings; both return the same bit mask.
        value = self.get("nvmlDeviceGetCurrentClocksEventReasons", handle)
        if value is None:
            value = self.get("nvmlDeviceGetCurrentClocksThrottleReasons", handle)
        return value


def _watts(milliwatts):
    return None if milliwatts is None else milliwatts / 1000.0


def _mib(num_bytes):
    return None if num_bytes is None else num_bytes / (1024.0 * 1024.0)


def _static(r, index, handle):
    nv = r.nv
    cc = r.get("nvmlDeviceGetCudaComputeCapability", handle)
    pci = r.get("nvmlDeviceGetPciInfo", handle)
    memory = r.get("nvmlDeviceGetMemoryInfo", handle)
    ecc = r.get("nvmlDeviceGetTotalEccErrors", handle, nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_VOLATILE_ECC)
    return {
        "index": index,
        "name": _text(r.get("nvmlDeviceGetName", handle)),
        "uuid": _text(r.get("nvmlDeviceGetUUID", handle)),
        "pci_bus_id": _text(pci.busId) if pci is not None else None,
        "compute_cap": "%d.%d" % tuple(cc) if cc else None,
        "enforced_power_limit": _watts(r.get("nvmlDeviceGetEnforcedPowerLimit", handle)),
        "default_power_limit": _watts(r.get("nvmlDeviceGetPowerManagementDefaultLimit", handle)),
        "max_sm_clock": r.get("nvmlDeviceGetMaxClockInfo", handle, nv.NVML_CLOCK_SM),
        "pcie_gen_max": r.get("nvmlDeviceGetMaxPcieLinkGeneration", handle),
        "pcie_width_max": r.get("nvmlDeviceGetMaxPcieLinkWidth", handle),
        "ecc_uncorrected": ecc,
        "memory_total": _mib(memory.total) if memory is not None else None,
    }


def _sample(r, index, handle):
    nv = r.nv
    util = r.get("nvmlDeviceGetUtilizationRates", handle)
    memory = r.get("nvmlDeviceGetMemoryInfo", handle)
    pstate = r.get("nvmlDeviceGetPerformanceState", handle)
    return {
        "index": index,
        "utilization_gpu": util.gpu if util is not None else None,
        "utilization_memory": util.memory if util is not None else None,
        "power_draw": _watts(r.get("nvmlDeviceGetPowerUsage", handle)),
        "sm_clock": r.get("nvmlDeviceGetClockInfo", handle, nv.NVML_CLOCK_SM),
        "clock_event_reasons": r.reasons(handle),
        "temperature": r.get("nvmlDeviceGetTemperature", handle, nv.NVML_TEMPERATURE_GPU),
        "pstate": "P%d" % pstate if pstate is not None and 0 <= pstate < 32 else None,
        "pcie_gen": r.get("nvmlDeviceGetCurrPcieLinkGeneration", handle),
        "pcie_width": r.get("nvmlDeviceGetCurrPcieLinkWidth", handle),
        "memory_used": _mib(memory.used) if memory is not None else None,
    }


def _energy(r, handle):
    value = r.get("nvmlDeviceGetTotalEnergyConsumption", handle)  # mJ since the driver loaded
    return None if value is None else (time.monotonic(), value)


def collect(pynvml, samples, interval_s):
    """Read every GPU ``samples`` times, ``interval_s`` apart. Raises :class:`NvmlUnavailable`."""
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # any init failure means "use nvidia-smi instead", with the reason
        raise NvmlUnavailable("%s: %s" % (type(exc).__name__, exc)) from exc
    r = _Reader(pynvml)
    try:
        cuda = r.get("nvmlSystemGetCudaDriverVersion")
        out = {
            "driver_version": _text(r.get("nvmlSystemGetDriverVersion")),
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
                out["gpus"].append(_static(r, index, handle))
                handles[index] = handle
            except r.lost + r.unsupported as exc:
                out["gpus"].append({"index": index, "lost": True, "error": str(exc)})
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
                    rows.append(_sample(r, index, handle))
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
        return out
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
