"""The node-side NVML reader (collectors/gpudiag_node/nvml.py) against a fake pynvml, and the bundle that carries it.

The fake answers like the real binding does on the H200 of tests/data (values from its captures): numbers
in NVML's units (mW, bytes, MHz), ``NVMLError_NotSupported`` for what the board lacks, ``GpuIsLost`` for a
GPU that fell off the bus. The real binding on the real GPU is checked by tests/gpu.
"""

from __future__ import annotations

import types
import zlib
from typing import Any

import pytest

from gpudiag.checks import CheckSettings, evaluate
from gpudiag.collect.bundle import bundle, nvml_binding
from gpudiag.collect.parse import parse_probe
from gpudiag.model import HostStatus, Severity
from gpudiag_node.nvml import NvmlUnavailable, collect


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):  # noqa: N801 - the binding's own spelling
    pass


class NVMLError_GpuIsLost(NVMLError):  # noqa: N801
    pass


class NVMLError_DriverNotLoaded(NVMLError):  # noqa: N801
    pass


class NVMLError_Unknown(NVMLError):  # noqa: N801
    pass


def fake_pynvml(*, lost: tuple[int, ...] = (), unsupported: tuple[str, ...] = (), init_error: bool = False,
                util: int = 100, power_mw: int = 118_000, count: int = 2, failing: tuple[str, ...] = (),
                instant_mw: int = 121_500, instant_return: int = 0) -> types.ModuleType:
    """A stand-in for nvidia-ml-py: a 700 W H200 per index, the energy counter advancing with power.
    ``failing``: functions that raise NVMLError_Unknown (a failed read, not an unsupported one);
    ``instant_return``: the nvmlReturn_t of the NVML_FI_DEV_POWER_INSTANT field value (3: NOT_SUPPORTED)."""
    nv = types.ModuleType("pynvml")
    nv.NVMLError = NVMLError  # type: ignore[attr-defined]
    nv.NVML_FI_DEV_POWER_INSTANT = 186  # type: ignore[attr-defined]
    nv.NVML_CLOCK_SM = 1  # type: ignore[attr-defined]
    nv.NVML_TEMPERATURE_GPU = 0  # type: ignore[attr-defined]
    nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1  # type: ignore[attr-defined]
    nv.NVML_VOLATILE_ECC = 0  # type: ignore[attr-defined]
    for cls in (NVMLError_NotSupported, NVMLError_GpuIsLost, NVMLError_DriverNotLoaded, NVMLError_Unknown):
        setattr(nv, cls.__name__, cls)
    energy = {"mj": 1_000_000.0, "calls": 0}

    def handle_of(h: Any) -> int:
        if h in lost:
            raise NVMLError_GpuIsLost("GPU is lost")
        return int(h)

    def fn(name: str, value: Any) -> None:
        def call(*args: Any) -> Any:
            if name in unsupported:
                raise NVMLError_NotSupported("Not Supported")
            if name in failing:
                raise NVMLError_Unknown("Unknown Error")
            if args:
                handle_of(args[0])
            return value(*args) if callable(value) else value
        setattr(nv, name, call)

    def init() -> None:
        if init_error:
            raise NVMLError_DriverNotLoaded("Driver Not Loaded")

    def total_energy(h: Any) -> float:
        energy["calls"] += 1
        # 2 s of 118 W between the first and the second read of each GPU
        return energy["mj"] + (236_000.0 if energy["calls"] > count else 0.0)

    nv.nvmlInit = init  # type: ignore[attr-defined]
    nv.nvmlShutdown = lambda: None  # type: ignore[attr-defined]
    nv.nvmlDeviceGetCount = lambda: count  # type: ignore[attr-defined]
    nv.nvmlDeviceGetHandleByIndex = lambda i: handle_of(i) if i not in lost else handle_of(i)  # type: ignore[attr-defined]
    fn("nvmlSystemGetDriverVersion", "580.159.04")
    fn("nvmlSystemGetCudaDriverVersion", 13000)
    fn("nvmlDeviceGetName", "NVIDIA H200")
    fn("nvmlDeviceGetUUID", lambda h: f"GPU-fake-{h}")
    fn("nvmlDeviceGetPciInfo", lambda h: types.SimpleNamespace(busId=f"00000000:{6 + h:02X}:00.0"))
    fn("nvmlDeviceGetCudaComputeCapability", (9, 0))
    fn("nvmlDeviceGetEnforcedPowerLimit", 700_000)
    fn("nvmlDeviceGetPowerManagementDefaultLimit", 700_000)
    fn("nvmlDeviceGetMaxClockInfo", 1980)
    fn("nvmlDeviceGetMaxPcieLinkGeneration", 5)
    fn("nvmlDeviceGetMaxPcieLinkWidth", 16)
    fn("nvmlDeviceGetTotalEccErrors", 0)
    fn("nvmlDeviceGetMemoryInfo", types.SimpleNamespace(total=143771 * 2**20, used=529 * 2**20))
    fn("nvmlDeviceGetUtilizationRates", types.SimpleNamespace(gpu=util, memory=0))
    fn("nvmlDeviceGetPowerUsage", power_mw)
    fn("nvmlDeviceGetClockInfo", 1980)
    fn("nvmlDeviceGetCurrentClocksEventReasons", 0)
    fn("nvmlDeviceGetTemperature", 34)
    fn("nvmlDeviceGetPerformanceState", 0)
    fn("nvmlDeviceGetCurrPcieLinkGeneration", 5)
    fn("nvmlDeviceGetCurrPcieLinkWidth", 16)
    fn("nvmlDeviceGetTotalEnergyConsumption", total_energy)

    def field_values(h: Any, ids: list[int]) -> list[Any]:
        # c_nvmlFieldValue_t: valueType 1 is NVML_VALUE_TYPE_UNSIGNED_INT (value.uiVal), in mW for power.
        return [types.SimpleNamespace(fieldId=i, nvmlReturn=instant_return if i == 186 else 3, valueType=1,
                                      value=types.SimpleNamespace(uiVal=instant_mw)) for i in ids]

    fn("nvmlDeviceGetFieldValues", field_values)
    return nv


def doc_from(nv: types.ModuleType, samples: int = 3) -> dict[str, Any]:
    return {"schema": "gpudiag.probe/2", "collector": "python", "source": "nvml",
            "host": {"hostname": "h", "kernel": "k"}, "nvml": collect(nv, samples, 0.0), "problems": []}


def test_nvml_readings_have_the_same_names_and_units_as_nvidia_smi() -> None:
    node = parse_probe(doc_from(fake_pynvml()))
    assert node.source == "nvml" and node.driver_version == "580.159.04" and node.cuda_version == "13.0"
    g = node.gpus[1]
    assert (g.index, g.name, g.uuid, g.pci_bus_id) == (1, "NVIDIA H200", "GPU-fake-1", "00000000:07:00.0")
    assert (g.compute_capability, g.sm, g.arch) == ("9.0", "SM90", "Hopper")
    assert (g.utilization_pct, g.power_w, g.enforced_power_limit_w, g.default_power_limit_w) == (
        100.0, 118.0, 700.0, 700.0)
    assert (g.sm_clock_mhz, g.max_sm_clock_mhz, g.pstate, g.temperature_c) == (1980.0, 1980.0, "P0", 34.0)
    assert (g.pcie_gen, g.pcie_gen_max, g.pcie_width, g.pcie_width_max) == (5, 5, 16, 16)
    assert (g.memory_used_mib, g.memory_total_mib, g.ecc_uncorrected) == (529.0, 143771.0, 0)
    assert g.clock_event_reasons == () and len(g.samples) == 3
    assert g.power_instant_w == 121.5 and g.failed_readings == ()


def test_power_draw_instant_not_supported_is_not_applicable() -> None:
    (g, _) = parse_probe(doc_from(fake_pynvml(instant_return=3))).gpus
    assert g.power_instant_w is None and g.failed_readings == ()


def test_an_unknown_nvml_error_is_a_failed_reading_and_busy_low_power_says_unknown() -> None:
    """NVMLError_Unknown is not "not supported": the power reading is missing, so BUSY_LOW_POWER cannot be
    judged for that GPU and says UNKNOWN (before, the GPU was quietly skipped)."""
    nv = fake_pynvml(failing=("nvmlDeviceGetPowerUsage",), instant_return=3, count=1)
    node = parse_probe(doc_from(nv, samples=1))
    (g,) = node.gpus
    assert g.power_w is None and g.failed_readings == (("power_w", "NVMLError_Unknown: Unknown Error"),)
    (found,) = evaluate("h", HostStatus.OK, None, node, CheckSettings())
    assert (found.code, found.severity, found.gpu) == ("BUSY_LOW_POWER", Severity.UNKNOWN, 0)
    assert "power_w: NVMLError_Unknown: Unknown Error" in found.summary
    # NotSupported stays "not applicable": no finding at all.
    quiet = parse_probe(doc_from(fake_pynvml(unsupported=("nvmlDeviceGetPowerUsage",), instant_return=3,
                                             count=1), samples=1))
    assert quiet.gpus[0].failed_readings == () and evaluate("h", HostStatus.OK, None, quiet, CheckSettings()) == ()


def test_energy_counter_gives_the_window_average() -> None:
    nvml = collect(fake_pynvml(count=1), 2, 0.0)
    (entry,) = nvml["energy"]
    assert entry["index"] == 0 and entry["energy_mj"] == 236_000.0 and entry["window_s"] >= 0.0
    node = parse_probe({"schema": "gpudiag.probe/2", "source": "nvml", "nvml": {**nvml, "energy": [
        {"index": 0, "window_s": 2.0, "energy_mj": 236_000.0}]}})
    assert node.gpus[0].energy_power_w == 118.0


def test_one_sample_has_no_window_so_the_energy_counter_is_not_read() -> None:
    nv = fake_pynvml(count=1)
    reads: list[object] = []
    counter = nv.nvmlDeviceGetTotalEnergyConsumption
    nv.nvmlDeviceGetTotalEnergyConsumption = lambda h: reads.append(h) or counter(h)  # type: ignore[attr-defined]
    nvml = collect(nv, 1, 0.0)
    assert nvml["energy"] == [] and reads == [] and len(nvml["samples"]) == 1
    assert parse_probe(doc_from(nv, samples=1)).gpus[0].energy_power_w is None


def test_not_supported_is_none_not_a_crash() -> None:
    missing = ("nvmlDeviceGetPowerUsage", "nvmlDeviceGetCudaComputeCapability", "nvmlDeviceGetTotalEnergyConsumption")
    node = parse_probe(doc_from(fake_pynvml(unsupported=missing)))
    g = node.gpus[0]
    assert g.power_w is None and g.compute_capability is None and g.energy_power_w is None
    assert g.utilization_pct == 100.0  # the rest still reads


def test_a_lost_gpu_is_marked_and_the_others_report() -> None:
    # One sample: no energy window. With three, the fake's energy counter (one step after the first reads)
    # over a window of a millisecond or so made GPU 2's average power whatever the machine's load made it.
    node = parse_probe(doc_from(fake_pynvml(lost=(1,), count=3), samples=1))
    assert [(g.index, g.lost) for g in node.gpus] == [(0, False), (1, True), (2, False)]
    found = evaluate("h", HostStatus.PARTIAL, None, node, CheckSettings())
    assert [(f.code, f.gpu) for f in found] == [("BUSY_LOW_POWER", 0), ("GPU_LOST", 1), ("BUSY_LOW_POWER", 2)]


def test_init_failure_is_nvml_unavailable() -> None:
    with pytest.raises(NvmlUnavailable, match="NVMLError_DriverNotLoaded: Driver Not Loaded"):
        collect(fake_pynvml(init_error=True), 1, 0.0)


def test_the_smi_only_bundle_does_not_carry_the_binding() -> None:
    assert b"\npynvml s " in bundle({}) and b"\npynvml s " not in bundle({}, with_nvml=False)
    binding = nvml_binding()
    assert binding is not None
    assert len(bundle({})) - len(bundle({}, with_nvml=False)) >= len(zlib.compress(binding, 9))
