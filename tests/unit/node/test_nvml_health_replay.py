"""The real H200's raw NVML answers (tests/data/h200_580.159_health/nvml_health.json, recorded by
bench/device_capture.sh) replayed through the node's NVML reader: the binding is the fake of
test_nvml_reader, but each of issue 20's getters and field values answers what the real driver answered,
NotSupported included. The readings must come out as the healthy values, and no new finding may fire."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import pynvml
from test_nvml_reader import NVMLError_NotSupported, doc_from, fake_pynvml

from gpudiag.checks import CheckSettings, evaluate
from gpudiag.collect.parse import parse_probe
from gpudiag.model import HostStatus
from gpudiag_node.nvml import collect

HEALTH = Path(__file__).resolve().parents[2] / "data" / "h200_580.159_health"
RAW = json.loads((HEALTH / "nvml_health.json").read_text())


def _answer(value: Any) -> Any:
    """A recorded answer → what the getter returns, or raises (``{"error": "NVMLError_NotSupported: ..."}``)."""
    def getter(*_: Any) -> Any:
        if isinstance(value, dict) and "error" in value:
            raise NVMLError_NotSupported(value["error"])
        return tuple(value) if isinstance(value, list) else value
    return getter


def replayed() -> types.ModuleType:
    nv = fake_pynvml(count=1)
    memory, = RAW["memory"]["devices"]
    config, = RAW["config"]["devices"]
    fields, = RAW["fields"]["devices"]
    getters = {"nvmlDeviceGetRemappedRows": memory["remapped_rows"], "nvmlDeviceGetEccMode": memory["ecc_mode"],
               "nvmlDeviceGetPersistenceMode": config["persistence_mode"],
               "nvmlDeviceGetComputeMode": config["compute_mode"], "nvmlDeviceGetMigMode": config["mig_mode"],
               "nvmlDeviceGetVbiosVersion": config["vbios"],
               "nvmlDeviceGetInforomImageVersion": config["inforom_image"]}
    for name, value in getters.items():
        setattr(nv, name, _answer(value))
    errors = {pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED: "NVML_MEMORY_ERROR_TYPE_CORRECTED",
              pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED: "NVML_MEMORY_ERROR_TYPE_UNCORRECTED"}
    counters = {pynvml.NVML_VOLATILE_ECC: "NVML_VOLATILE_ECC", pynvml.NVML_AGGREGATE_ECC: "NVML_AGGREGATE_ECC"}
    nv.nvmlDeviceGetTotalEccErrors = (  # type: ignore[attr-defined]
        lambda h, e, c: memory[f"ecc_{errors[e]}_{counters[c]}"])
    known = [n for n in fields if n.startswith("NVML_FI_") and hasattr(pynvml, n)]
    for n in [*errors.values(), *counters.values(), *known, "NVML_FI_DEV_NVLINK_ERROR_DL_CRC",
              "NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY", "NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY"]:
        setattr(nv, n, getattr(pynvml, n))
    by_id = {getattr(pynvml, n): fields[n] for n in known}

    def field_values(handle: Any, ids: list[Any]) -> list[Any]:
        out = []
        for field in ids:
            recorded = by_id.get(field if isinstance(field, int) else field[0])
            code = recorded["nvmlReturn"] if recorded else 3
            value = types.SimpleNamespace(**recorded["value"]) if recorded else None
            out.append(types.SimpleNamespace(nvmlReturn=code, valueType=recorded["valueType"] if recorded else 1,
                                             value=value))
        return out

    nv.nvmlDeviceGetFieldValues = field_values  # type: ignore[attr-defined]
    # Every NVLink call answered NotSupported (RAW["nvlink"]); the fabric getter was not recorded (the dump
    # crashed calling it without its struct): NotSupported is what nvidia-smi's N/A for fabric.state means.
    nv.nvmlDeviceGetNvLinkState = _answer(RAW["nvlink"]["devices"][0]["nvlink_first"][0]["state"])  # type: ignore[attr-defined]
    nv.nvmlDeviceGetGpuFabricInfoV = _answer({"error": "NVMLError_NotSupported: Not Supported"})  # type: ignore[attr-defined]
    return nv


def test_the_recorded_nvml_answers_give_the_healthy_values() -> None:
    node = parse_probe(doc_from(replayed()))
    (g,) = node.gpus
    assert (g.remapped_rows_correctable, g.remapped_rows_uncorrectable, g.remapped_rows_pending,
            g.remapped_rows_failure) == (0, 0, False, False)
    assert (g.ecc_mode_enabled, g.ecc_mode_pending_enabled, g.ecc_corrected, g.ecc_uncorrected_aggregate,
            g.ecc_corrected_aggregate) == (True, True, 0, 0, 0)
    assert (g.gpu_recovery_action, g.persistence_mode_enabled, g.compute_mode, g.mig_mode_enabled,
            g.mig_mode_pending_enabled) == ("none", True, "default", False, False)
    assert (g.vbios_version, g.inforom_image_version, g.memory_temperature_c) == (
        "96.00.A5.00.1A", "G520.0282.02.02", 39.0)
    assert (g.retired_pages_sbe, g.retired_pages_dbe, g.retired_pages_pending) == (None, None, None)
    assert (g.fabric_state, g.fabric_health, g.nvlinks, g.failed_readings) == (None, None, (), ())
    assert "nvlink" not in collect(replayed(), 2, 0.0)  # the link count answered NotSupported: no link read
    new = {"ROW_REMAP_PENDING", "ROW_REMAP_FAILED", "RETIRED_PAGES_PENDING", "ECC_DISABLED", "ECC_MODE_PENDING",
           "RECOVERY_ACTION", "NVLINK_DOWN", "NVLINK_ERRORS", "FABRIC_NOT_READY", "PERSISTENCE_OFF"}
    assert not {f.code for f in evaluate("h200", HostStatus.OK, None, node, CheckSettings())} & new
