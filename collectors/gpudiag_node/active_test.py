"""The active test's own process (``gpudiag_node.active`` starts it with this file's text): the CUDA driver API
through ``ctypes``, a PTX kernel written here, NVML read beside the load. Standard library only, Python 3.6,
self-contained (it runs as ``python3 -c``, not as a package module): it imports nothing of gpudiag_node.

The driver compiles the PTX text when it loads it: no nvcc, no toolkit, no torch on the node. Per GPU, all
GPUs at once (one thread each; ctypes releases the GIL in every driver call):

* compute: a fused multiply-add loop on every SM (eight independent chains per thread), TFLOP/s (fp32, two
  FLOPs per FMA), with the SM clock, power, temperature and clock-event reasons read through NVML during it;
* memory: device-to-device copies (cuMemcpyDtoD), GB/s counting the bytes read and written;
* PCIe: host-to-device and device-to-host copies from pinned memory, GB/s each, the link's generation and
  width read during the transfer;
* the GPU's Xid events (NVML events) and its volatile ECC counters across the test: what the test provoked.

Each GPU is checked again just before its context is made (NVML: no compute or graphics process, 0% busy;
nvidia-smi where NVML does not load): a GPU taken since the window is never touched. One JSON line per
result on stdout, as each is known, so whatever finished before the collector ends this process is kept.
"""

import sys
import time

# The PTX: `.version 6.0 / .target sm_50` loads on every driver since CUDA 9 and is compiled for the GPU at
# hand (compute capability 5.0 and newer). Each thread runs ITERS rounds of UNROLL x CHAINS fma.rn.f32 on
# CHAINS independent accumulators (so the FMA latency is hidden), then stores their sum (so the loop is not
# optimised away).
CHAINS = 8
UNROLL = 8
THREADS_PER_BLOCK = 256
BLOCKS_PER_SM = 4
FLOPS_PER_ROUND = 2 * CHAINS * UNROLL  # two FLOPs per FMA


def ptx():
    """The FMA kernel ``fma_loop(float *out, unsigned rounds)`` as PTX text."""
    chains = range(CHAINS)
    body = "\n".join("    fma.rn.f32 %%a%d, %%a%d, %%m, %%c;" % (i, i) for _ in range(UNROLL) for i in chains)
    init = "\n".join("    add.f32 %%a%d, %%a0, 0f%08X;" % (i, 0x3F800000 + i) for i in chains if i)
    total = "\n".join("    add.f32 %%a0, %%a0, %%a%d;" % i for i in chains if i)
    return """.version 6.0
.target sm_50
.address_size 64

.visible .entry fma_loop(.param .u64 out, .param .u32 rounds)
{
    .reg .pred %%p;
    .reg .b32 %%r<5>;
    .reg .f32 %%a<%d>;
    .reg .f32 %%m, %%c;
    .reg .b64 %%rd<4>;
    ld.param.u64 %%rd1, [out];
    cvta.to.global.u64 %%rd1, %%rd1;
    ld.param.u32 %%r1, [rounds];
    mov.u32 %%r2, %%tid.x;
    mov.u32 %%r3, %%ctaid.x;
    mov.u32 %%r4, %%ntid.x;
    mad.lo.u32 %%r2, %%r3, %%r4, %%r2;
    cvt.rn.f32.u32 %%a0, %%r2;
%s
    mov.f32 %%m, 0f3F7FFFFE;
    mov.f32 %%c, 0f3A83126F;
LOOP:
%s
    sub.u32 %%r1, %%r1, 1;
    setp.ne.u32 %%p, %%r1, 0;
    @%%p bra LOOP;
%s
    cvt.u64.u32 %%rd2, %%r2;
    shl.b64 %%rd2, %%rd2, 2;
    add.u64 %%rd3, %%rd1, %%rd2;
    st.global.f32 [%%rd3], %%a0;
    ret;
}
""" % (CHAINS, init, body, total)


# How long each part runs (s): long enough for the clocks to rise and NVML's 1 s power average to follow.
COMPUTE_S, MEMORY_S, PCIE_S = 1.5, 0.5, 0.4
MEMORY_BYTES = 1 << 30  # per buffer, at most a quarter of the free memory
PINNED_BYTES = 64 << 20
SAMPLE_S = 0.05  # NVML readings during the test

def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _emit(item):
    import json

    sys.stdout.write(json.dumps(item) + "\n")
    sys.stdout.flush()


class CudaError(Exception):
    """A driver API call failed: its name and CUresult."""


class Cuda(object):
    """libcuda.so.1's driver API, the calls the test makes."""

    def __init__(self, ctypes, lib):
        self.c, self.lib = ctypes, lib

    def __call__(self, name, *args):
        code = getattr(self.lib, name)(*args)
        if code != 0:
            raise CudaError("%s: %s" % (name, self.error_name(code)))

    def error_name(self, code):
        text = self.c.c_char_p()
        try:
            if self.lib.cuGetErrorName(code, self.c.byref(text)) == 0 and text.value:
                return "%s (%d)" % (text.value.decode(), code)
        except AttributeError:
            pass
        return "CUresult %d" % code


class Nvml(object):
    """libnvidia-ml.so.1 through ctypes, for the readings during the test; every reading None when not given."""

    def __init__(self, ctypes):
        self.c = ctypes
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        if self.lib.nvmlInit_v2() != 0:
            raise OSError("nvmlInit_v2 failed")

    def handle(self, bus_id):
        h = self.c.c_void_p()
        if bus_id and self.lib.nvmlDeviceGetHandleByPciBusId_v2(bus_id.encode(), self.c.byref(h)) == 0:
            return h
        return None

    def value(self, name, handle, *args):
        kind = self.c.c_ulonglong if name in ("nvmlDeviceGetCurrentClocksEventReasons",
                                              "nvmlDeviceGetCurrentClocksThrottleReasons",
                                              "nvmlDeviceGetTotalEccErrors") else self.c.c_uint
        got = kind()
        try:
            code = getattr(self.lib, name)(handle, *(list(args) + [self.c.byref(got)]))
        except AttributeError:
            return None
        return got.value if code == 0 else None

    def reading(self, h):
        reasons = self.value("nvmlDeviceGetCurrentClocksEventReasons", h)
        if reasons is None:
            reasons = self.value("nvmlDeviceGetCurrentClocksThrottleReasons", h)
        power = self.value("nvmlDeviceGetPowerUsage", h)
        return {"sm_clock_mhz": self.value("nvmlDeviceGetClockInfo", h, 1), "power_w": power and power / 1000.0,
                "reasons": reasons, "temperature_c": self.value("nvmlDeviceGetTemperature", h, 0),
                "pcie_gen": self.value("nvmlDeviceGetCurrPcieLinkGeneration", h),
                "pcie_width": self.value("nvmlDeviceGetCurrPcieLinkWidth", h)}

    def in_use(self, h):
        """Why the GPU is in use now (a process on it, or busy), or None when it is idle."""
        for name in ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v3"):
            count = self.c.c_uint(0)
            fn = getattr(self.lib, name, None)
            if fn is not None and fn(h, self.c.byref(count), None) in (0, 7) and count.value:  # 7: size
                return "in use at the re-check: a process on it"
        util = (self.c.c_uint * 2)()
        if self.lib.nvmlDeviceGetUtilizationRates(h, util) == 0 and util[0] > 0:
            return "in use at the re-check: busy"
        return None

    def ecc(self, h):
        """(uncorrected, corrected) volatile ECC counts, each None where not reported."""
        return (self.value("nvmlDeviceGetTotalEccErrors", h, 1, 0), self.value("nvmlDeviceGetTotalEccErrors", h, 0, 0))

    def xid_events(self, handles):
        """An NVML event set for the GPUs' critical Xid events, or None where events are not supported."""
        events = self.c.c_void_p()
        if self.lib.nvmlEventSetCreate(self.c.byref(events)) != 0:
            return None
        registered = [h for h in handles  # 0x8: nvmlEventTypeXidCriticalError; a VM may refuse it
                      if self.lib.nvmlDeviceRegisterEvents(h, self.c.c_ulonglong(0x8), events) == 0]
        return events if registered else None

    def xids(self, events):
        """The Xid events waiting in the set: [(device handle value, xid)]."""
        c = self.c  # nvmlEventData_t
        fields = [("device", c.c_void_p), ("type", c.c_ulonglong), ("data", c.c_ulonglong), ("gi", c.c_uint),
                  ("ci", c.c_uint)]
        Data = type("Data", (c.Structure,), {"_fields_": fields})
        found = []
        for _ in range(64):
            data = Data()
            if self.lib.nvmlEventSetWait_v2(events, self.c.byref(data), 0) != 0:
                break
            found.append((data.device, int(data.data)))
        return found


def _smi_in_use(smi, bus_ids):
    """Where NVML does not load: bus id -> why the GPU is in use, through nvidia-smi (one call each kind)."""
    import subprocess

    found = {}
    try:
        apps = subprocess.check_output([smi, "--query-compute-apps=gpu_bus_id,pid", "--format=csv,noheader"],
                                       timeout=5).decode()
        util = subprocess.check_output([smi, "--query-gpu=pci.bus_id,utilization.gpu",
                                        "--format=csv,noheader,nounits"], timeout=5).decode()
    except Exception as exc:
        return dict.fromkeys(bus_ids, "not re-checked (nvidia-smi: %s)" % exc)
    for line in apps.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if cells and cells[0] in bus_ids:
            found[cells[0]] = "in use at the re-check: a process on it"
    for line in util.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == 2 and cells[0] in bus_ids and cells[0] not in found and _number(cells[1]):
            found[cells[0]] = "in use at the re-check: busy"
    return found


class GpuTest(object):
    """One GPU's test, in a thread of its own: its phase is read by the sampler."""

    def __init__(self, cuda, index, device, scale):
        self.cuda, self.c, self.index, self.device, self.scale = cuda, cuda.c, index, device, scale
        self.phase = None
        self.samples = {}  # phase -> [reading]

    def _events(self):
        a, b = self.c.c_void_p(), self.c.c_void_p()
        self.cuda("cuEventCreate", self.c.byref(a), 0)
        self.cuda("cuEventCreate", self.c.byref(b), 0)
        return a, b

    def _timed(self, stream, work, seconds):
        """Run ``work()`` (which queues on ``stream``) in batches timed by events, each batch sized to ~0.1 s
        from the first, until ``seconds`` pass: (median seconds per call, calls) over the later half."""
        start, end = self._events()
        elapsed = self.c.c_float()
        rates, calls, until = [], 1, time.monotonic() + seconds * self.scale
        while True:
            self.cuda("cuEventRecord", start, stream)
            for _ in range(calls):
                work()
            self.cuda("cuEventRecord", end, stream)
            self.cuda("cuEventSynchronize", end)
            self.cuda("cuEventElapsedTime", self.c.byref(elapsed), start, end)
            per_call = max(elapsed.value, 1e-3) / 1000.0 / calls
            rates.append(per_call)
            if time.monotonic() >= until:
                break
            calls = max(1, int(0.1 / per_call))
        later = sorted(rates[len(rates) // 2:])
        return later[len(later) // 2], len(rates)

    def run(self):
        c, cuda = self.c, self.cuda
        ctx = c.c_void_p()
        cuda("cuDevicePrimaryCtxRetain", c.byref(ctx), self.device)
        cuda("cuCtxSetCurrent", ctx)
        stream = c.c_void_p()
        cuda("cuStreamCreate", c.byref(stream), 0)
        sms = c.c_int()
        cuda("cuDeviceGetAttribute", c.byref(sms), 16, self.device)  # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
        module, fma = c.c_void_p(), c.c_void_p()
        cuda("cuModuleLoadData", c.byref(module), c.c_char_p(ptx().encode()))
        cuda("cuModuleGetFunction", c.byref(fma), module, b"fma_loop")
        blocks = sms.value * BLOCKS_PER_SM
        threads = blocks * THREADS_PER_BLOCK
        out = c.c_uint64()
        cuda("cuMemAlloc_v2", c.byref(out), threads * 4)
        rounds = c.c_uint(2048)
        params = (c.c_void_p * 2)(c.cast(c.byref(out), c.c_void_p), c.cast(c.byref(rounds), c.c_void_p))

        def launch():
            cuda("cuLaunchKernel", fma, blocks, 1, 1, THREADS_PER_BLOCK, 1, 1, 0, stream, params, None)

        self.phase = "compute"
        per_call, _ = self._timed(stream, launch, 0.05)  # the first launches: clocks still rising
        rounds.value = max(256, min(1 << 24, int(rounds.value * 0.05 / per_call)))  # ~50 ms a launch
        per_call, calls = self._timed(stream, launch, COMPUTE_S)
        self._part("compute", tflops=round(threads * rounds.value * FLOPS_PER_ROUND / per_call / 1e12, 2),
                   launch_s=round(per_call, 4), batches=calls, sms=sms.value)
        self.phase = "memory"
        free, total = c.c_size_t(), c.c_size_t()
        cuda("cuMemGetInfo_v2", c.byref(free), c.byref(total))
        size = max(1 << 20, min(MEMORY_BYTES, free.value // 4))
        a, b = c.c_uint64(), c.c_uint64()
        cuda("cuMemAlloc_v2", c.byref(a), size)
        cuda("cuMemAlloc_v2", c.byref(b), size)
        cuda("cuMemsetD8Async", a, 1, size, stream)
        per_call, calls = self._timed(stream, lambda: cuda("cuMemcpyDtoDAsync_v2", b, a, size, stream), MEMORY_S)
        # Each byte copied is read once and written once: the figure HBM's bandwidth is quoted against.
        self._part("memory", gb_s=round(2 * size / per_call / 1e9, 1), bytes=size, batches=calls)
        cuda("cuMemFree_v2", b)
        host = c.c_void_p()
        cuda("cuMemHostAlloc", c.byref(host), PINNED_BYTES, 0)
        for phase, name, args in (("h2d", "cuMemcpyHtoDAsync_v2", (a, host)),
                                  ("d2h", "cuMemcpyDtoHAsync_v2", (host, a))):
            self.phase = phase
            per_call, calls = self._timed(
                stream, lambda n=name, x=args: cuda(n, x[0], x[1], PINNED_BYTES, stream), PCIE_S)
            self._part(phase, gb_s=round(PINNED_BYTES / per_call / 1e9, 2), bytes=PINNED_BYTES, batches=calls)
        self.phase = None
        # Tidy, though the process's end frees all of it: a failure here costs no figure.
        for name, arg in (("cuMemFreeHost", host), ("cuMemFree_v2", a), ("cuMemFree_v2", out),
                          ("cuModuleUnload", module), ("cuDevicePrimaryCtxRelease_v2", self.device)):
            try:
                cuda(name, arg)
            except (CudaError, AttributeError):
                pass

    def _part(self, part, **figures):
        figures.update(_summary(self.samples.get(part, ())))
        _emit(dict(figures, gpu=self.index, part=part))


def _summary(readings):
    """What NVML read during one part: the highest and median SM clock and power, the reasons seen (OR of
    their masks), the hottest temperature, the lowest PCIe generation and width."""
    out = {"nvml_samples": len(readings)}
    for key in ("sm_clock_mhz", "power_w"):
        values = sorted(r[key] for r in readings if r.get(key) is not None)
        if values:
            out[key + "_max"] = values[-1]
            out[key + "_median"] = values[len(values) // 2]
    masks = [r["reasons"] for r in readings if r.get("reasons") is not None]
    if masks:
        combined = 0
        for mask in masks:
            combined |= mask
        out["clock_event_reasons_mask"] = combined
    for key, pick in (("temperature_c", max), ("pcie_gen", min), ("pcie_width", min)):
        values = [r[key] for r in readings if r.get(key) is not None]
        if values:
            out[key + ("_max" if pick is max else "_min")] = pick(values)
    return out


def _bus_id(nvml_bus):
    """NVML's "00000000:19:00.0" as CUDA takes it: "0000:19:00.0"."""
    if not nvml_bus or ":" not in nvml_bus:
        return None
    domain, rest = nvml_bus.split(":", 1)
    try:
        return "%04x:%s" % (int(domain, 16), rest.lower())
    except ValueError:
        return None


def child_main(plan):
    """The test's process: re-check each GPU, then test them all at once, one JSON line per result."""
    import ctypes
    import threading

    asked = [(int(i), b) for i, b in plan["gpus"]]
    scale = float(plan.get("scale") or 1.0)
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        _emit({"error": "no CUDA driver library (libcuda.so.1) on the node: %s" % exc})
        return
    cuda = Cuda(ctypes, lib)
    try:
        nvml = Nvml(ctypes)
    except (OSError, AttributeError):
        nvml = None
    handles = {i: nvml.handle(b) for i, b in asked} if nvml is not None else {}
    # Where NVML gave no handle (no NVML here, or not for that bus id), nvidia-smi re-checks.
    unhandled = [b for i, b in asked if handles.get(i) is None and b]
    busy = _smi_in_use(plan.get("smi") or "nvidia-smi", unhandled) if unhandled else {}
    ready = []
    for index, bus in asked:
        if handles.get(index) is not None:
            why = nvml.in_use(handles[index])
        else:
            why = busy.get(bus) if bus else "not re-checked: its PCI bus id was not read"
        if why:
            _emit({"gpu": index, "skipped": why})
        else:
            ready.append((index, bus))
    if not ready:
        return
    try:
        cuda("cuInit", 0)
    except CudaError as exc:
        _emit({"error": str(exc)})
        return
    tests = []
    for index, bus in ready:
        device = ctypes.c_int()
        try:
            if _bus_id(bus):
                cuda("cuDeviceGetByPCIBusId", ctypes.byref(device), _bus_id(bus).encode())
            else:
                cuda("cuDeviceGet", ctypes.byref(device), index)
        except CudaError as exc:
            _emit({"gpu": index, "failed": str(exc)})
            continue
        tests.append(GpuTest(cuda, index, device, scale))
    ecc_before = {t.index: nvml.ecc(handles[t.index]) for t in tests if handles.get(t.index) is not None}
    events = nvml.xid_events([handles[t.index] for t in tests if handles.get(t.index) is not None]) if nvml else None
    running = []

    def test(one):
        try:
            one.run()
            _emit({"gpu": one.index, "done": True})
        except CudaError as exc:
            _emit({"gpu": one.index, "failed": str(exc)})

    for one in tests:
        thread = threading.Thread(target=test, args=(one,))
        thread.daemon = True
        thread.start()
        running.append(thread)
    while any(t.is_alive() for t in running):
        if nvml is not None:
            for one in tests:
                phase = one.phase
                if phase is not None and handles.get(one.index) is not None:
                    one.samples.setdefault(phase, []).append(nvml.reading(handles[one.index]))
        time.sleep(SAMPLE_S)
    if nvml is not None:
        xids = nvml.xids(events) if events is not None else []
        for one in tests:
            h = handles.get(one.index)
            if h is None:
                continue
            before, after = ecc_before.get(one.index, (None, None)), nvml.ecc(h)
            rise = [None if x is None or y is None else y - x for x, y in zip(before, after)]
            _emit({"gpu": one.index, "part": "after", "ecc_uncorrected_rise": rise[0], "ecc_corrected_rise": rise[1],
                   "xids": [x for dev, x in xids if dev == h.value], "xid_events": events is not None})


if __name__ == "active":  # the test's process (see run: the source arrives on stdin)
    import json as _json

    child_main(_json.loads(sys.argv[1]))
