"""Issue 20's readings through the node's NVML reader (collectors/gpudiag_node/nvml.py, links.py) against the
fake binding of test_nvml_reader, given the getters and field values the real nvidia-ml-py has: what they
return on the healthy H200 (its nvidia-smi capture's values), what they return for a fault, and None for
what a driver or binding lacks."""

from __future__ import annotations

import types
from typing import Any

import pynvml
from test_nvml_reader import NVMLError_NotSupported, doc_from, fake_pynvml

from gpudiag.checks import CheckSettings, evaluate
from gpudiag.collect.parse import parse_probe
from gpudiag.model import HostStatus, NvLink
from gpudiag_node.nvml import collect

CONSTANTS = ("NVML_FI_DEV_MEMORY_TEMP", "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION", "NVML_FI_DEV_RETIRED_SBE",
             "NVML_FI_DEV_RETIRED_DBE", "NVML_FI_DEV_RETIRED_PENDING", "NVML_FI_DEV_NVLINK_LINK_COUNT",
             "NVML_FI_DEV_NVLINK_ERROR_DL_CRC", "NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY",
             "NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY", "NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_AGGREGATE_ECC",
             "nvmlGpuFabricInfo_v3", "nvmlGpuFabricInfo_v2")


class FabricV3:
    """pynvml's c_nvmlGpuFabricInfo_v3_t, as the getter fills it."""

    def __init__(self) -> None:
        self.version = 0
        self.state = self.status = self.healthMask = self.healthSummary = 0


def healthy_h200(**over: Any) -> types.ModuleType:
    """The fake binding with issue 20's getters, answering as the healthy H200 VM does: no fabric (NotSupported),
    no NVLink, remapped rows all zero, ECC enabled, recovery action none, HBM at 36 C."""
    nv = fake_pynvml(count=1)
    for n, name in enumerate(CONSTANTS):
        # The installed binding's value; one the binding lacks (the floors' nvidia-ml-py 12.570 has no
        # nvmlGpuFabricInfo_v3) gets a number of its own: the collector reads each constant from this fake
        setattr(nv, name, getattr(pynvml, name, 90_000 + n))
    field_values = {nv.NVML_FI_DEV_MEMORY_TEMP: 36, nv.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION: 0,
                    nv.NVML_FI_DEV_POWER_INSTANT: 121_500, **over.pop("fields", {})}
    links = over.pop("links", None)  # {"count": n, "crc": [...], ...}: a GPU with NVLinks
    answers: dict[str, Any] = {"nvmlDeviceGetRemappedRows": (0, 0, 0, 0), "nvmlDeviceGetEccMode": [1, 1],
                               "nvmlDeviceGetPersistenceMode": 1, "nvmlDeviceGetComputeMode": 0,
                               "nvmlDeviceGetMigMode": [0, 0], "nvmlDeviceGetVbiosVersion": "96.00.A5.00.1A",
                               "nvmlDeviceGetInforomImageVersion": "G520.0282.02.02", **over}
    for name, value in answers.items():
        setattr(nv, name, (lambda v: lambda *a: v)(value))
    if links is not None:
        field_values[nv.NVML_FI_DEV_NVLINK_LINK_COUNT] = links["count"]
        nv.nvmlDeviceGetNvLinkState = lambda h, link: links["active"][link]  # type: ignore[attr-defined]
    fabric = answers.get("fabric")

    def fabric_info(handle: Any, filled: FabricV3) -> int:
        if fabric is None:
            raise NVMLError_NotSupported("Not Supported")
        filled.state, filled.status, filled.healthSummary = fabric
        return 0

    nv.nvmlDeviceGetGpuFabricInfoV = fabric_info  # type: ignore[attr-defined]
    nv.byref = lambda filled: filled  # type: ignore[attr-defined]  # ctypes.byref; the fake fills it in place
    nv.c_nvmlGpuFabricInfo_v3_t = FabricV3  # type: ignore[attr-defined]
    reads = {"n": 0}

    def values(handle: Any, ids: list[Any]) -> list[Any]:
        out = []
        for field in ids:
            fid, scope = field if isinstance(field, tuple) else (field, 0)
            value = field_values.get(fid)
            if links is not None and isinstance(field, tuple):
                name = {nv.NVML_FI_DEV_NVLINK_ERROR_DL_CRC: "crc", nv.NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY: "replay",
                        nv.NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY: "recovery"}[fid]
                value = links[name][scope] + (links.get("rise", {}).get(name, [0] * 18)[scope] if reads["n"] else 0)
            out.append(types.SimpleNamespace(fieldId=fid, nvmlReturn=3 if value is None else 0, valueType=1,
                                             value=types.SimpleNamespace(uiVal=value)))
        if any(isinstance(f, tuple) for f in ids):
            reads["n"] += 1  # the second read of the counters is the window's end
        return out

    nv.nvmlDeviceGetFieldValues = values  # type: ignore[attr-defined]
    return nv


def test_the_healthy_h200_reads_as_its_nvidia_smi_capture() -> None:
    (g,) = parse_probe(doc_from(healthy_h200())).gpus
    assert (g.remapped_rows_correctable, g.remapped_rows_uncorrectable, g.remapped_rows_pending,
            g.remapped_rows_failure) == (0, 0, False, False)
    assert (g.ecc_mode_enabled, g.ecc_mode_pending_enabled, g.gpu_recovery_action) == (True, True, "none")
    assert (g.persistence_mode_enabled, g.compute_mode, g.mig_mode_enabled) == (True, "default", False)
    assert (g.vbios_version, g.inforom_image_version, g.memory_temperature_c) == (
        "96.00.A5.00.1A", "G520.0282.02.02", 36.0)
    # Not reported by this GPU (NotSupported field values, no fabric, no NVLink): None, never 0 or False.
    assert (g.retired_pages_sbe, g.retired_pages_pending, g.fabric_state, g.fabric_health) == (None,) * 4
    assert g.nvlinks == () and g.failed_readings == ()
    assert "nvlink" not in collect(healthy_h200(), 2, 0.0)


def test_a_binding_without_the_new_getters_reads_none() -> None:
    """An old nvidia-ml-py (nor the getters, nor the constants): the readings are None, not 0, not a crash."""
    (g,) = parse_probe(doc_from(fake_pynvml(count=1))).gpus
    assert (g.remapped_rows_pending, g.ecc_corrected, g.gpu_recovery_action, g.persistence_mode_enabled,
            g.fabric_state, g.memory_temperature_c) == (None,) * 6
    assert g.failed_readings == ()


def test_the_recovery_action_remap_and_fabric_faults_read_by_name() -> None:
    nv = healthy_h200(fields={pynvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION: 1},
                      nvmlDeviceGetRemappedRows=(0, 1, 1, 0), fabric=(2, 0, 1))
    node = parse_probe(doc_from(nv))
    (g,) = node.gpus
    assert (g.gpu_recovery_action, g.remapped_rows_uncorrectable, g.remapped_rows_pending) == ("gpu_reset", 1, True)
    assert (g.fabric_state, g.fabric_status, g.fabric_health) == ("in_progress", None, "healthy")
    codes = [f.code for f in evaluate("h", HostStatus.OK, None, node, CheckSettings())]
    assert {"RECOVERY_ACTION", "ROW_REMAP_PENDING", "FABRIC_NOT_READY"} <= set(codes)


def test_nvlink_counters_at_both_ends_of_the_window() -> None:
    links = {"count": 2, "active": [1, 0], "crc": [5, 0], "replay": [0, 0], "recovery": [1, 0],
             "rise": {"crc": [12, 0], "replay": [3, 0]}}
    nvml = collect(healthy_h200(links=links), 3, 0.0)
    assert set(nvml["nvlink"]) == {"window_s", "start", "end"}
    (g,) = parse_probe(doc_from(healthy_h200(links=links))).gpus
    assert g.nvlinks == (
        NvLink(link=0, active=True, crc_errors=17, replay_errors=3, recovery_errors=1, crc_errors_rise=12,
               replay_errors_rise=3, recovery_errors_rise=0),
        NvLink(link=1, active=False, crc_errors=0, replay_errors=0, recovery_errors=0, crc_errors_rise=0,
               replay_errors_rise=0, recovery_errors_rise=0))
    assert g.nvlink_window_s is not None and g.nvlink_window_s >= 0.0


def _logging_field_values(nv: types.ModuleType, *, whole_call_fails: bool = False,
                          codes: dict[int, int] | None = None) -> list[list[int]]:
    """Wrap ``nv``'s field values to log each call's field ids; ``whole_call_fails``: a call of several fields
    raises NVMLError_Unknown; ``codes``: a field's own nvmlReturn_t in place of its value."""
    asked: list[list[int]] = []
    answer = nv.nvmlDeviceGetFieldValues

    def values(handle: Any, ids: list[Any]) -> list[Any]:
        asked.append(list(ids))
        if whole_call_fails and len(ids) > 1:
            raise nv.NVMLError_Unknown("Unknown Error")
        out = answer(handle, ids)
        for value in out:
            value.nvmlReturn = (codes or {}).get(value.fieldId, value.nvmlReturn)
        return out

    nv.nvmlDeviceGetFieldValues = values  # type: ignore[attr-defined]
    return asked


def test_a_rows_field_values_are_read_in_one_call() -> None:
    """The static row's four fields (retired pages, recovery action) in one call, each sample's two (instant
    power, HBM temperature) in another: what one call per field read."""
    nv = healthy_h200()
    asked = _logging_field_values(nv)
    out = collect(nv, 2, 0.0)
    static = sorted([nv.NVML_FI_DEV_RETIRED_SBE, nv.NVML_FI_DEV_RETIRED_DBE, nv.NVML_FI_DEV_RETIRED_PENDING,
                     nv.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION])
    per_sample = sorted([nv.NVML_FI_DEV_POWER_INSTANT, nv.NVML_FI_DEV_MEMORY_TEMP])
    rows = [sorted(ids) for ids in asked if nv.NVML_FI_DEV_NVLINK_LINK_COUNT not in ids]
    assert rows == [static, per_sample, per_sample]
    assert [s["rows"][0]["memory_temperature_c"] for s in out["samples"]] == [36, 36]
    assert [s["rows"][0]["power_instant_w"] for s in out["samples"]] == [121.5, 121.5]


def test_a_failed_field_call_is_asked_field_by_field() -> None:
    """A driver that fails the call of several fields as a whole: each field alone, the same readings."""
    nv = healthy_h200(fields={pynvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION: 1})
    asked = _logging_field_values(nv, whole_call_fails=True)
    (g,) = parse_probe(doc_from(nv, samples=1)).gpus
    assert (g.gpu_recovery_action, g.memory_temperature_c, g.power_instant_w) == ("gpu_reset", 36.0, 121.5)
    assert g.failed_readings == () and sum(len(ids) == 1 for ids in asked) >= 6


def test_one_fields_error_is_that_readings_alone() -> None:
    """A field's own error code (here UNKNOWN, 999) fails that reading only, named as before."""
    nv = healthy_h200()
    _logging_field_values(nv, codes={pynvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION: 999})
    row = collect(nv, 1, 0.0)["gpus"][0]
    assert row["gpu_recovery_action"] is None and row["retired_pages_sbe"] is None
    assert row["errors"] == {"gpu_recovery_action": "nvmlDeviceGetFieldValues(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): "
                                                    "return code 999"}
