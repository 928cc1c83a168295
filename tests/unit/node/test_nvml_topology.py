"""The GPU pairs' links through NVML (gpudiag_node.topology), named as nvidia-smi topo -m names them, and the
controller's reading of them (issue 32: a starved GPU's verdict without the 25 ms of nvidia-smi topo -m)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gpudiag.collect.parse_logs import parse_context
from gpudiag.model import GpuLink
from gpudiag_node import topology


class FakeReader:
    """nvml.Reader's call() over a table: (name, *args) -> answer, an exception to raise, or a default."""

    def __init__(self, answers: dict[tuple[object, ...], object]) -> None:
        self.answers = answers
        self.calls: list[tuple[object, ...]] = []

    def call(self, name: str, *args: object) -> object:
        self.calls.append((name, *args))
        answer = self.answers.get((name, *args))
        if isinstance(answer, Exception):
            raise answer
        return answer


BUS = {0: "00000000:1B:00.0", 1: "00000000:43:00.0", 2: "00000000:52:00.0"}


def test_one_gpu_has_no_pair_and_costs_no_call() -> None:
    r = FakeReader({})
    assert topology.read(r, {0: "h0"}, BUS, {}) == {"pairs": [], "gpus": 1, "from": "nvml"}
    assert r.calls == []


def test_pcie_levels_by_common_ancestor() -> None:
    r = FakeReader({("nvmlDeviceGetTopologyCommonAncestor", "h0", "h1"): 10,
                    ("nvmlDeviceGetTopologyCommonAncestor", "h0", "h2"): 50,
                    ("nvmlDeviceGetTopologyCommonAncestor", "h1", "h2"): 40})
    found = topology.read(r, {0: "h0", 1: "h1", 2: "h2"}, BUS, {})
    assert found["pairs"] == [[0, 1, "PIX"], [0, 2, "SYS"], [1, 2, "NODE"]]


def test_nvswitch_links_and_a_bridge() -> None:
    """Two GPUs on NVSwitches (18 links each, one down on GPU 1) and a PCIe GPU bridged to GPU 0 by 2 links."""
    answers: dict[tuple[object, ...], object] = {}
    for gpu in (0, 1):
        for link in range(18):
            answers[("nvmlDeviceGetNvLinkRemoteDeviceType", f"h{gpu}", link)] = topology.REMOTE_SWITCH
    for link in (18, 19):
        answers[("nvmlDeviceGetNvLinkRemoteDeviceType", "h0", link)] = topology.REMOTE_GPU
        answers[("nvmlDeviceGetNvLinkRemotePciInfo", "h0", link)] = SimpleNamespace(busId=b"00000000:52:00.0")
    answers[("nvmlDeviceGetTopologyCommonAncestor", "h1", "h2")] = 30
    active = {0: [True] * 20, 1: [True] * 17 + [False]}
    found = topology.read(FakeReader(answers), {0: "h0", 1: "h1", 2: "h2"}, BUS, active)
    assert found["pairs"] == [[0, 1, "NV17"], [0, 2, "NV2"], [1, 2, "PHB"]]


@pytest.mark.parametrize("answers", [
    {("nvmlDeviceGetTopologyCommonAncestor", "h0", "h1"): 0},  # NVML_TOPOLOGY_INTERNAL: no topo -m name
    {("nvmlDeviceGetTopologyCommonAncestor", "h0", "h1"): RuntimeError("NVMLError_Unknown")},
])
def test_what_it_cannot_name_goes_to_topo_m(answers: dict[tuple[object, ...], object]) -> None:
    with pytest.raises(topology.Unreadable):
        topology.read(FakeReader(answers), {0: "h0", 1: "h1"}, BUS, {})


def test_a_link_state_not_read_is_unreadable() -> None:
    with pytest.raises(topology.Unreadable):
        topology.read(FakeReader({}), {0: "h0", 1: "h1"}, BUS, {0: [None]})


def test_the_controller_reads_nvml_pairs_as_topo_m_links() -> None:
    context = parse_context({"topology": {"pairs": [[1, 0, "NV18"], [0, 2, "SYS"], [0, 0, "X"], "junk"],
                                          "gpus": 3, "from": "nvml"}})
    assert context is not None
    assert context.links == (GpuLink(gpu_a=0, gpu_b=1, link="NV18"), GpuLink(gpu_a=0, gpu_b=2, link="SYS"))
    assert context.topology_error is None
    one = parse_context({"topology": {"pairs": [], "gpus": 1, "from": "nvml"}})
    assert one is not None and one.links == () and one.topology_error is None
    none = parse_context({"topology": {"pairs": [], "gpus": 2, "from": "nvml"}})
    assert none is not None and none.topology_error == "NVML named no GPU pair"
