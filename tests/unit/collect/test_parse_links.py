"""``nvidia-smi nvlink -e`` / ``-s`` text (collectors/gpudiag_node/links.py keeps it raw) → each GPU's links.

The layout is the one users paste from HGX H100 and DGX A100 nodes (e.g. stas00/ml-engineering's network
chapter: ``\\t Link 0: Replay Errors: 0``; ``\\t Link 0: 26.562 GB/s``, ``\\t Link 1: <inactive>``)."""

from __future__ import annotations

from pathlib import Path

from gpudiag.collect.parse import parse_probe
from gpudiag.collect.parse_links import parse_links
from gpudiag.model import NvLink
from gpudiag_node.links import lists_links


def errors(crc: tuple[int, ...], replay: tuple[int, ...] = (0, 0), recovery: tuple[int, ...] = (0, 0)) -> str:
    lines = ["GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-abcdefab-cdef-abdc-abcd-abababababab)"]
    for link, (c, r, v) in enumerate(zip(crc, replay, recovery, strict=True)):
        lines += [f"\t Link {link}: Replay Errors: {r}", f"\t Link {link}: Recovery Errors: {v}",
                  f"\t Link {link}: CRC Errors: {c}", ""]
    return "\n".join(lines) + "\n"


STATUS = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-abcdefab-cdef-abdc-abcd-abababababab)\n"
          "\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n")


def doc(start: str, end: str, status: str = STATUS) -> dict[str, object]:
    return {"nvlink_smi": {"window_s": 2.1, "start": {"exit": 0, "stdout": start}, "end": {"exit": 0, "stdout": end},
                           "status": {"exit": 0, "stdout": status}}}


def test_rising_counters_between_the_two_reads() -> None:
    links, window = parse_links(doc(errors((3, 0), replay=(1, 0)), errors((10, 0), replay=(4, 0), recovery=(1, 0))))
    assert window == 2.1
    assert links == {0: (
        NvLink(link=0, active=True, crc_errors=10, replay_errors=4, recovery_errors=1, crc_errors_rise=7,
               replay_errors_rise=3, recovery_errors_rise=1),
        NvLink(link=1, active=False, crc_errors=0, replay_errors=0, recovery_errors=0, crc_errors_rise=0,
               replay_errors_rise=0, recovery_errors_rise=0))}


def test_a_counter_that_went_down_was_reset_and_has_no_rise() -> None:
    links, _ = parse_links(doc(errors((50, 0)), errors((2, 0))))
    assert links[0][0].crc_errors == 2 and links[0][0].crc_errors_rise is None


def test_no_nvlink_part_no_links_and_the_gpus_keep_none() -> None:
    assert parse_links({}) == ({}, None)
    assert parse_links(doc("", "", "")) == ({}, None)


def test_junk_is_bounded_and_ignored() -> None:
    junk = "GPU x: y\n\t Link 99: CRC Errors: 5\n" + "\t Link 0: CRC Errors: 1\n" * 10
    assert parse_links(doc(junk, junk, junk)) == ({}, None)
    nvml = {"nvml": {"nvlink": {"window_s": "soon", "start": {"0": {"crc": ["a", -1, True]}}, "end": {"x": {}}}}}
    assert parse_links(nvml) == ({}, None)


def test_the_links_land_on_their_gpu_of_a_probe_document() -> None:
    row = "0, NVIDIA H100 80GB HBM3, GPU-abcdefab, 00000000:1B:00.0"
    node = parse_probe({"schema": "gpudiag.probe/2", "fields": [["index", "index"], ["name", "name"],
                                                                ["uuid", "uuid"], ["pci_bus_id", "pci.bus_id"]],
                        "nvidia_smi": {"path": "/usr/bin/nvidia-smi"}, "samples": [{"t_s": 0, "exit": 0,
                                                                                     "stdout": row}],
                        **doc(errors((0, 0)), errors((0, 0)))})
    (g,) = node.gpus
    assert [(link.link, link.active) for link in g.nvlinks] == [(0, True), (1, False)] and g.nvlink_window_s == 2.1


def test_the_one_gpu_h200_prints_nothing_for_nvlink() -> None:
    """The real answers of nvidia-smi nvlink -e / -s on the H200 VM (tests/data/h200_580.159_health): empty,
    exit 0. The collector would not even make the end's calls; the parser gives no links either way."""
    health = Path(__file__).resolve().parents[2] / "data" / "h200_580.159_health"
    recorded = {name: (health / f"sminvlink__{name}.txt").read_text() for name in ("e", "s")}
    assert recorded == {"e": "exit 0\n", "s": "exit 0\n"}  # the capture script's exit line alone
    assert parse_links(doc("", "", "")) == ({}, None)
    assert not lists_links("") and lists_links("GPU 0: H200\n\t Link 0: Replay Errors: 0\n")
