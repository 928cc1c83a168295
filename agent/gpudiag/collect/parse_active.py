"""The collector's ``active`` section (``collectors/gpudiag_node/active.py``) → ``ActiveTest``.

Pure; the section comes from the node, so every part is type-checked as it is read (:mod:`.untrusted`): a part
missing or of the wrong type reads as "not reported", a figure past a sane bound is dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudiag.collect.untrusted import integer, items, mapping, seconds, short
from gpudiag.model.active import ActiveGpu, ActiveState, ActiveTest
from gpudiag_node.wire import BY_SECTION

MAX_GPUS = BY_SECTION["active"].bound[0]  # GPUs read per host
MAX_FIGURE = 1e6  # no TFLOP/s, GB/s, MHz or W figure is larger: past it, junk
MAX_XIDS = 16


def _figure(value: object) -> float | None:
    number = seconds(value)
    return number if number is not None and 0 <= number <= MAX_FIGURE else None


def _count(value: object) -> int | None:
    number = integer(value)
    return number if number is not None and number >= 0 else None


def _gpu(raw: Mapping[str, Any]) -> ActiveGpu | None:
    index = _count(raw.get("index"))
    if index is None:
        return None
    try:
        state = ActiveState(raw.get("state"))
    except ValueError:
        state = ActiveState.FAILED
    compute, memory = mapping(raw.get("compute")), mapping(raw.get("memory"))
    h2d, d2h, after = mapping(raw.get("h2d")), mapping(raw.get("d2h")), mapping(raw.get("after"))
    gens = [g for g in (_count(h2d.get("pcie_gen_min")), _count(d2h.get("pcie_gen_min"))) if g is not None]
    widths = [w for w in (_count(h2d.get("pcie_width_min")), _count(d2h.get("pcie_width_min"))) if w is not None]
    return ActiveGpu(
        gpu=index, state=state, why=short(raw.get("why"), 400),
        compute_tflops=_figure(compute.get("tflops")),
        compute_sm_clock_mhz=_figure(compute.get("sm_clock_mhz_median")),
        compute_sm_clock_max_mhz=_figure(compute.get("sm_clock_mhz_max")),
        compute_power_w=_figure(compute.get("power_w_median")),
        compute_power_max_w=_figure(compute.get("power_w_max")),
        compute_temperature_max_c=_figure(compute.get("temperature_c_max")),
        compute_clock_event_reasons_mask=_count(compute.get("clock_event_reasons_mask")),
        memory_copy_gb_s=_figure(memory.get("gb_s")),
        pcie_h2d_gb_s=_figure(h2d.get("gb_s")), pcie_d2h_gb_s=_figure(d2h.get("gb_s")),
        pcie_gen_under_load=min(gens) if gens else None, pcie_width_under_load=min(widths) if widths else None,
        xids=tuple(x for x in (_count(v) for v in items(after.get("xids"))[:MAX_XIDS]) if x is not None),
        ecc_uncorrected_rise=_count(after.get("ecc_uncorrected_rise")),
        ecc_corrected_rise=_count(after.get("ecc_corrected_rise")))


def parse_active(value: object) -> ActiveTest | None:
    """The ``active`` section, or None when the test was not asked for (no section)."""
    if not isinstance(value, dict):
        return None
    gpus: dict[int, ActiveGpu] = {}
    for raw in items(value.get("gpus")):
        gpu = _gpu(mapping(raw))
        if gpu is not None and gpu.gpu not in gpus and len(gpus) < MAX_GPUS:
            gpus[gpu.gpu] = gpu
    return ActiveTest(budget_s=seconds(value.get("budget_s")), elapsed_s=seconds(value.get("elapsed_s")),
                      error=short(value.get("error"), 400), gpus=tuple(gpus[i] for i in sorted(gpus)))
