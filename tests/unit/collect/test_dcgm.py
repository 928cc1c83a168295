"""DCGM's profiling fields: parsed where dcgmi answers, "not available" with the reason where it does not."""

from __future__ import annotations

from builders import gpu, node

from gpudiag.collect.parse import parse_dcgm, with_dcgm

# The layout of `dcgmi dmon -e 1002,1003,1004,1005` (DCGM 3.x): a header, an Id line, one row per GPU per
# sample, ratios between 0 and 1.
DMON = """#Entity   SMACT        SMOCC        TENSO        DRAMA
ID
GPU 0     0.012        0.010        0.000        0.031
GPU 1     N/A          N/A          N/A          N/A
GPU 0     0.014        0.011        0.000        0.029
GPU 1     0.950        0.450        0.610        0.220
GPU 0     0.010        0.009        0.000        0.030
"""


def test_parse_dmon_medians_in_percent() -> None:
    assert parse_dcgm(DMON) == {
        0: {"sm_active_pct": 1.2, "sm_occupancy_pct": 1.0, "tensor_active_pct": 0.0, "dram_active_pct": 3.0},
        1: {"sm_active_pct": 95.0, "sm_occupancy_pct": 45.0, "tensor_active_pct": 61.0, "dram_active_pct": 22.0},
    }


def test_junk_lines_are_ignored() -> None:
    assert parse_dcgm("Error: Unable to connect to host engine\nGPU x 1 2 3 4\nGPU 0 0.1 0.2\n") == {}


def test_readings_go_onto_their_gpus() -> None:
    readings = with_dcgm(node(gpus=(gpu(index=0), gpu(index=1))), {"available": True, "stdout": DMON})
    assert readings.gpus[0].sm_active_pct == 1.2 and readings.gpus[1].tensor_active_pct == 61.0
    assert readings.dcgm_unavailable is None


def test_unavailable_says_why() -> None:
    readings = with_dcgm(node(), {"available": False, "why": "dcgmi is not installed"})
    assert readings.dcgm_unavailable == "dcgmi is not installed"
    assert readings.gpus[0].sm_active_pct is None
    assert with_dcgm(node(), {}) == node()
