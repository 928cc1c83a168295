"""The table of readings (collectors/gpudiag_node/readings.py) agrees with the model, nvidia-smi and the NVML binding.

A reading is one entry there plus its field on the model; these tests are what make that true: every
entry has its field (with a type that fits its kind), every model reading field has its entry, each
nvidia-smi spelling is one the real H200 driver (or an older driver) knows, and each NVML getter and
constant exists in the bundled binding.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pynvml
import pytest

from gpudiag.model import GpuReading, GpuSample
from gpudiag_node import readings
from gpudiag_node.smi import known_fields

HELP = (Path(__file__).resolve().parents[2] / "data" / "h200_580.159_fields" / "help-query-gpu.txt").read_text()
# Spellings the H200's driver 580 does not list because they are the OLD names (the fallbacks of old drivers).
OLD_SPELLINGS = {"power.limit", "clocks.current.sm", "clocks_throttle_reasons.active", "pcie.link.gen.gpucurrent"}
KIND_TYPES = {"number": float, "int": int, "mask": int, "text": str, "cc": str, "pstate": str, "flag": bool,
              "enum": str}
# Model fields of GpuReading that are not readings of the table: derived, window-level, or DCGM's.
NOT_READINGS = {"sm", "arch", "energy_power_w", "lost", "failed_readings", "samples", "sm_active_pct",
                "sm_occupancy_pct", "tensor_active_pct", "dram_active_pct", "sm_activity_from",
                "sm_activity_unavailable", "nvlinks", "nvlink_window_s"}


def _types(cls: type) -> dict[str, object]:
    return typing.get_type_hints(cls)


@pytest.mark.parametrize("reading", readings.READINGS, ids=lambda r: r.name)
def test_every_reading_has_its_model_field_of_its_kind(reading: readings.Reading) -> None:
    hints = _types(GpuReading)
    assert reading.name in hints, f"add {reading.name} to GpuReading"
    assert KIND_TYPES[reading.kind] in typing.get_args(hints[reading.name]) or hints[reading.name] is int
    if reading.per_sample:
        assert reading.name in _types(GpuSample), f"add {reading.name} to GpuSample"
    assert reading.combine in ("median", "lower_median", "last", "any")
    assert reading.combine != "any" or reading.kind == "mask"


def test_every_model_reading_field_has_its_table_entry() -> None:
    table = {r.name for r in readings.READINGS}
    assert {f.name for f in dataclasses.fields(GpuReading)} - NOT_READINGS == table
    assert {f.name for f in dataclasses.fields(GpuSample)} - {"t_s"} == {r.name for r in readings.PER_SAMPLE}


def test_nvidia_smi_spellings_are_the_drivers_own() -> None:
    known = known_fields(HELP)
    for reading in readings.READINGS:
        if reading.smi:
            assert reading.smi[0] in known, f"{reading.name}: {reading.smi[0]} is not a field of driver 580"
            assert set(reading.smi[1:]) <= known | OLD_SPELLINGS


@pytest.mark.parametrize("reading", [r for r in readings.READINGS if r.nvml], ids=lambda r: r.name)
def test_nvml_getters_and_constants_exist_in_the_binding(reading: readings.Reading) -> None:
    getters, args, _attribute = reading.nvml
    assert any(hasattr(pynvml, g) for g in getters)
    assert all(hasattr(pynvml, a) for a in args)


def test_the_query_and_the_shell_collector_arguments_come_from_the_table() -> None:
    from gpudiag.collect.remote import collector_call

    fields = [(r.name, r.smi) for r in readings.READINGS if r.smi]
    assert list(readings.smi_fields()[: len(fields)]) == fields
    command = collector_call(samples=1, interval_s=0.0, deadline_s=10.0).command
    assert "power_instant_w=power.draw.instant" in command
    assert readings.by_smi_field()["clocks_throttle_reasons.active"] == "clock_event_reasons_mask"
