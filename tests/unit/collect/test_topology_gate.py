"""The node reads `nvidia-smi topo -m` only when a GPU read busy at low power: the topology explains a starved
GPU, and a healthy node is spared one nvidia-smi call per sweep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudiag.collect.parse_logs import parse_context
from gpudiag_node.probe import looks_starved

DATA = Path(__file__).resolve().parents[2] / "data"


def recorded(workload: str, source: str) -> dict[str, object]:
    return json.loads((DATA / f"h200_580.159_{workload}" / f"{source}.json").read_text())


@pytest.mark.parametrize("source", ["probe", "nvml"])
@pytest.mark.parametrize("workload, starved", [("spin", True), ("tiny_graph", True), ("idle", False),
                                               ("gemv", False), ("copy", False), ("gemm", False),
                                               ("small_gemm", False)])
def test_gate_on_real_h200_readings(workload: str, source: str, starved: bool) -> None:
    assert looks_starved(recorded(workload, source), 90.0, 60.0) is starved


def test_gate_follows_the_thresholds() -> None:
    assert looks_starved(recorded("copy", "nvml"), 90.0, 70.0)  # 67% of the limit is "low" at 70%
    assert not looks_starved(recorded("spin", "probe"), 101.0, 60.0)


def test_a_skipped_topology_is_not_an_error() -> None:
    context = parse_context({"topology": None, "topology_skipped": "no GPU read busy at low power"})
    assert context is not None and context.topology_error is None and context.links == ()
