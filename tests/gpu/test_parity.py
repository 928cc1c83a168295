"""NVML and nvidia-smi read the same GPU at the same moment and must agree, field by field.

Both collectors run at once in two threads over the same window, then go through the same parser.
Tolerances: identity and limits exactly (power limits to 0.5 W, memory to 1%); moving readings by what
two reads a few milliseconds apart can differ by under a steady load. With GPUDIAG_PARITY_OUT set, the
differences are written there as JSON (the closing note's numbers come from it).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from typing import Any

import pynvml

from gpudiag.collect.parse import parse_probe
from gpudiag_node import nvml as node_nvml
from gpudiag_node import smi as node_smi
from gpudiag_node import wire

SAMPLES, INTERVAL_S = 5, 0.4

# field: (absolute tolerance, relative tolerance); a difference within either passes.
TOLERANCE: dict[str, tuple[float, float]] = {
    "enforced_power_limit_w": (0.5, 0.0), "default_power_limit_w": (0.5, 0.0), "max_sm_clock_mhz": (0.0, 0.0),
    "memory_total_mib": (0.0, 0.01), "pcie_gen_max": (0.0, 0.0), "pcie_width_max": (0.0, 0.0),
    "utilization_pct": (10.0, 0.0), "memory_utilization_pct": (10.0, 0.0), "power_w": (15.0, 0.10),
    "sm_clock_mhz": (0.0, 0.05), "temperature_c": (2.0, 0.0), "pcie_gen": (0.0, 0.0), "pcie_width": (0.0, 0.0),
    # power.draw.instant is one instant, not a 1 s average: two readers a moment apart differ more.
    "power_instant_w": (30.0, 0.15),
}
EXACT = ("name", "uuid", "pci_bus_id", "compute_capability", "sm", "arch", "pstate", "ecc_uncorrected")


def _both() -> tuple[Any, Any]:
    results: dict[str, Any] = {}

    def smi() -> None:
        results["smi"] = node_smi.collect(SAMPLES, INTERVAL_S, 30.0)

    def nvml() -> None:
        doc = wire.new_document()
        doc["source"] = "nvml"
        doc["nvml"] = node_nvml.collect(pynvml, SAMPLES, INTERVAL_S)
        results["nvml"] = doc

    threads = [threading.Thread(target=smi), threading.Thread(target=nvml)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return parse_probe(results["nvml"]), parse_probe(results["smi"])


def test_nvml_and_nvidia_smi_agree_field_by_field() -> None:
    assert shutil.which("nvidia-smi")
    by_nvml, by_smi = _both()
    assert by_nvml.source == "nvml" and by_smi.source.startswith("nvidia-smi")
    assert by_nvml.driver_version == by_smi.driver_version
    assert by_nvml.cuda_version == by_smi.cuda_version
    assert [g.index for g in by_nvml.gpus] == [g.index for g in by_smi.gpus]
    report: list[dict[str, Any]] = []
    problems: list[str] = []
    for a, b in zip(by_nvml.gpus, by_smi.gpus, strict=True):
        for g, side in ((a, "NVML"), (b, "nvidia-smi")):
            if g.failed_readings:
                problems.append(f"GPU {g.index} {side}: failed readings {g.failed_readings}")
        for name in EXACT:
            if getattr(a, name) != getattr(b, name):
                problems.append(f"GPU {a.index} {name}: NVML {getattr(a, name)!r} vs nvidia-smi {getattr(b, name)!r}")
        for name, (absolute, relative) in TOLERANCE.items():
            x, y = getattr(a, name), getattr(b, name)
            report.append({"gpu": a.index, "field": name, "nvml": x, "nvidia_smi": y,
                           "diff": None if x is None or y is None else round(float(x) - float(y), 3)})
            if (x is None) != (y is None):
                problems.append(f"GPU {a.index} {name}: one side reports nothing (NVML {x}, nvidia-smi {y})")
            elif x is not None and y is not None:
                limit = max(absolute, relative * max(abs(float(x)), abs(float(y))))
                if abs(float(x) - float(y)) > limit:
                    problems.append(f"GPU {a.index} {name}: NVML {x} vs nvidia-smi {y} (tolerance {limit:g})")
        report.append({"gpu": a.index, "field": "energy_power_w", "nvml": a.energy_power_w,
                       "nvidia_smi": b.power_w, "diff": None})
    if os.environ.get("GPUDIAG_PARITY_OUT"):
        with open(os.environ["GPUDIAG_PARITY_OUT"], "w") as out:
            json.dump({"problems": problems, "fields": report}, out, indent=1)
    assert problems == []


def test_energy_counter_average_is_close_to_the_sampled_power() -> None:
    by_nvml, _ = _both()
    for g in by_nvml.gpus:
        assert g.energy_power_w is not None, "the H200 supports the total-energy counter"
        assert g.power_w is not None
        assert abs(g.energy_power_w - g.power_w) <= max(20.0, 0.15 * g.power_w)
