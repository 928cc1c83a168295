"""What the SMs really do: NVML's GPU Performance Monitoring metrics (``gpudiag_node.gpm``; Hopper and newer).

utilization.gpu is the share of time *a* kernel was resident; GPM counts what the SMs did over the same
time, from two samples of the device's counters (no DCGM needed): the share of SMs busy (SM activity), of
warps resident against the maximum (occupancy), of SM time in tensor instructions, and of the DRAM bandwidth.
Standard library only; called by nvml.py with the bundled binding, one GPU at a time (parallel GPM calls on
several devices have crashed other tools). NVML reference: "GPM Functions" (nvmlGpmQueryDeviceSupport,
nvmlGpmSampleAlloc, nvmlGpmSampleGet, nvmlGpmMetricsGet).
"""

# reading name -> the pynvml constant of its GPM metric (all in percent, 0-100)
METRICS = (
    ("sm_active_pct", "NVML_GPM_METRIC_SM_UTIL"),
    ("sm_occupancy_pct", "NVML_GPM_METRIC_SM_OCCUPANCY"),
    ("tensor_active_pct", "NVML_GPM_METRIC_ANY_TENSOR_UTIL"),
    ("dram_active_pct", "NVML_GPM_METRIC_DRAM_BW_UTIL"),
)
MIN_WINDOW_S = 0.1  # NVML needs the two samples at least this far apart to give a metric


class Unavailable(Exception):
    """This GPU gives no GPM metrics; the message says why in a few words."""


def _why(exc):
    return "%s: %s" % (type(exc).__name__, exc)


def begin(nv, handle, mig_enabled=None):
    """The first sample, or :class:`Unavailable` (an older GPU, a driver or binding without GPM, MIG).
    ``mig_enabled``: the GPU's MIG mode as its row already read it (1/0), or None: read here."""
    if not hasattr(nv, "nvmlGpmQueryDeviceSupport") or not hasattr(nv, "c_nvmlGpmMetricsGet_t"):
        raise Unavailable("the NVML binding has no GPM functions")
    try:
        support = nv.nvmlGpmQueryDeviceSupport(handle)
    except Exception as exc:  # NotSupported, FunctionNotFound (an older driver)
        raise Unavailable("nvmlGpmQueryDeviceSupport: " + _why(exc)) from exc
    if not support.isSupportedDevice:
        raise Unavailable("the GPU does not support GPM (Hopper and newer do)")
    mig = mig_enabled
    if mig is None:
        try:
            mig = nv.nvmlDeviceGetMigMode(handle)[0] if hasattr(nv, "nvmlDeviceGetMigMode") else 0
        except Exception:
            mig = 0
    if mig:
        raise Unavailable("MIG is enabled: GPM is read per GPU instance, not per GPU")
    sample = nv.nvmlGpmSampleAlloc()
    try:
        nv.nvmlGpmSampleGet(handle, sample)
    except Exception as exc:
        nv.nvmlGpmSampleFree(sample)
        raise Unavailable("nvmlGpmSampleGet: " + _why(exc)) from exc
    return sample


def end(nv, handle, first):
    """The metrics between ``first`` and now: {reading name: percent or None}; frees both samples."""
    second = nv.nvmlGpmSampleAlloc()
    try:
        nv.nvmlGpmSampleGet(handle, second)
        request = nv.c_nvmlGpmMetricsGet_t()
        request.version = nv.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(METRICS)
        request.sample1 = first
        request.sample2 = second
        for i, (_, constant) in enumerate(METRICS):
            request.metrics[i].metricId = getattr(nv, constant)
        nv.nvmlGpmMetricsGet(request)
        out = {}
        for i, (name, _) in enumerate(METRICS):
            metric = request.metrics[i]
            out[name] = round(metric.value, 2) if metric.nvmlReturn == 0 else None
        return out
    except Exception as exc:
        raise Unavailable(_why(exc)) from exc
    finally:
        for sample in (first, second):
            try:
                nv.nvmlGpmSampleFree(sample)
            except Exception:
                pass
