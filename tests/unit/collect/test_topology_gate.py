"""The node reads `nvidia-smi topo -m` only when a GPU read busy at low power: the topology explains a starved
GPU, and a healthy node is spared one nvidia-smi call per sweep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudiag.collect.parse_logs import parse_context
from gpudiag.model import CheckSettings
from gpudiag_node import wire
from gpudiag_node.probe import _gate, looks_starved

DATA = Path(__file__).resolve().parents[2] / "data"


def recorded(workload: str, source: str) -> dict[str, object]:
    return json.loads((DATA / f"h200_580.159_{workload}" / f"{source}.json").read_text())


@pytest.mark.parametrize("source", ["probe", "nvml"])
@pytest.mark.parametrize("workload, starved", [("spin", True), ("tiny_graph", True), ("idle", False),
                                               ("gemv", False), ("copy", False), ("gemm", False),
                                               ("small_gemm", False)])
def test_gate_on_real_h200_readings(workload: str, source: str, starved: bool) -> None:
    settings = CheckSettings()  # the thresholds a default sweep sends (tests/unit/node/test_wire.py)
    assert looks_starved(recorded(workload, source), settings.busy_utilization_pct, settings.low_power_pct) is starved


def test_gate_follows_the_thresholds() -> None:
    assert looks_starved(recorded("copy", "nvml"), 90.0, 70.0)  # 67% of the limit is "low" at 70%
    assert not looks_starved(recorded("spin", "probe"), 101.0, 60.0)


def test_a_skipped_topology_is_not_an_error() -> None:
    context = parse_context({"topology": None, "topology_skipped": "no GPU read busy at low power"})
    assert context is not None and context.topology_error is None and context.links == ()


def test_the_gate_has_no_thresholds_of_its_own() -> None:
    """Without both of the controller's thresholds the node reads the topology whenever it reads the context."""
    gated = wire.read_config({"context": True, "topology_if": {"busy_pct": 95, "low_power_pct": 50.5}})
    assert _gate(gated) == (95.0, 50.5)
    assert _gate(wire.read_config({"context": True, "topology_if": {"busy_pct": 95}})) is None
    assert _gate(wire.read_config({"context": True})) is None
    assert _gate(wire.read_config({"context": False, "topology_if": {"busy_pct": 95, "low_power_pct": 50}})) is None
