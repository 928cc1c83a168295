"""The NVLink part of the collector's document (``gpudiag_node.links``) → each GPU's :class:`NvLink` s.
Pure: text and JSON in, values out; every part is type-checked as it is read (the node is untrusted).

Two shapes, one result: NVML's ``nvml.nvlink`` ({"window_s", "start": {gpu: {"crc": [per link], ...}},
"end": {... "active": [...]}}) and nvidia-smi's ``nvlink_smi`` (the raw text of ``nvidia-smi nvlink -e`` at
both ends of the window and ``nvidia-smi nvlink -s`` at its end). nvidia-smi's layout, per GPU::

    GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)
    \t Link 0: Replay Errors: 0
    \t Link 0: Recovery Errors: 0
    \t Link 0: CRC Errors: 0

and for ``-s`` ``\t Link 0: 26.562 GB/s`` (active) or ``\t Link 1: <inactive>``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from typing import Any

from gpudiag.collect.untrusted import integer, items, mapping, seconds, text
from gpudiag.model import NodeReadings, NvLink
from gpudiag_node.wire import BY_SECTION

MAX_LINKS = 36  # NVML_NVLINK_MAX_LINKS
MAX_GPUS = 64
MAX_TEXT = BY_SECTION["nvlink_smi"].bound[0]  # characters of one nvidia-smi nvlink answer read
COUNTERS = ("crc", "replay", "recovery")

_GPU = re.compile(r"^GPU (\d+):")
_COUNTER = re.compile(r"Link (\d+): ([A-Za-z ]+?) Errors?: (\d+)")
_STATE = re.compile(r"Link (\d+): (.*)$")
_NAMES = {"crc": "crc", "crc flit": "crc", "replay": "replay", "recovery": "recovery"}

PerGpu = dict[int, dict[str, dict[int, Any]]]  # gpu → counter or "active" → link → value


def _counter(value: object) -> int | None:
    number = integer(value)
    return number if number is not None and number >= 0 else None


def _from_nvml(part: Mapping[str, object]) -> PerGpu:
    out: PerGpu = {}
    for key, gpu in list(part.items())[:MAX_GPUS]:
        if not (isinstance(key, str) and key.isdigit()):
            continue
        gpu = mapping(gpu)
        values: dict[str, dict[int, object]] = {}
        for name in (*COUNTERS, "active"):
            row = items(gpu.get(name))[:MAX_LINKS]
            if name == "active":
                values[name] = {i: v for i, v in enumerate(row) if isinstance(v, bool)}
            else:
                values[name] = {i: c for i, c in enumerate(map(_counter, row)) if c is not None}
        out[int(key)] = values
    return out


def _smi_sections(stdout: str) -> Iterator[tuple[int, str | None]]:
    """nvidia-smi nvlink's answer as (gpu, line) for each line of a GPU's section, (gpu, None) at its heading;
    what comes before the first heading, and the sections of GPUs past MAX_GPUS, are skipped."""
    seen: set[int] = set()
    gpu: int | None = None
    for line in stdout[:MAX_TEXT].splitlines():
        found = _GPU.match(line.strip())
        if found:
            gpu = int(found.group(1))
            if gpu not in seen and len(seen) >= MAX_GPUS:
                gpu = None
                continue
            seen.add(gpu)
            yield gpu, None
        elif gpu is not None:
            yield gpu, line


def _smi_counters(stdout: str) -> PerGpu:
    out: PerGpu = {}
    for gpu, line in _smi_sections(stdout):
        values = out.setdefault(gpu, {name: {} for name in COUNTERS})
        for link, name, value in _COUNTER.findall(line or ""):
            counter = _NAMES.get(name.strip().lower())
            if counter is not None and int(link) < MAX_LINKS:
                values[counter].setdefault(int(link), int(value))
    return out


def _smi_states(stdout: str) -> dict[int, dict[int, bool]]:
    out: dict[int, dict[int, bool]] = {}
    for gpu, line in _smi_sections(stdout):
        states = out.setdefault(gpu, {})
        state = _STATE.search(line or "")
        if not state or int(state.group(1)) >= MAX_LINKS:
            continue
        words = state.group(2).strip().lower()
        if "inactive" in words or "disabled" in words or "down" in words:
            states[int(state.group(1))] = False
        elif re.match(r"[0-9.]+ ?[gm]b/s", words):
            states[int(state.group(1))] = True
    return out


def _links(start: PerGpu, end: PerGpu) -> dict[int, tuple[NvLink, ...]]:
    result: dict[int, tuple[NvLink, ...]] = {}
    for gpu in sorted(set(start) | set(end)):
        before, after = start.get(gpu, {}), end.get(gpu, {})
        numbers = sorted({link for values in (*before.values(), *after.values()) for link in values})
        links = []
        for link in numbers:
            fields: dict[str, Any] = {"active": after.get("active", {}).get(link)}
            for name in COUNTERS:
                first, last = before.get(name, {}).get(link), after.get(name, {}).get(link)
                fields[f"{name}_errors"] = last
                # A counter that went down was reset (nvidia-smi nvlink -re, a GPU reset): no rise to tell.
                fields[f"{name}_errors_rise"] = last - first if first is not None and last is not None \
                    and last >= first else None
            links.append(NvLink(link=link, **fields))
        if links:
            result[gpu] = tuple(links)
    return result


def parse_links(doc: Mapping[str, object]) -> tuple[dict[int, tuple[NvLink, ...]], float | None]:
    """Each GPU's links from the document (NVML's part when the GPUs were read through NVML, else
    nvidia-smi's), and the window between the two reads of the counters."""
    nvml = mapping(mapping(doc.get("nvml")).get("nvlink"))
    if nvml:
        links = _links(_from_nvml(mapping(nvml.get("start"))), _from_nvml(mapping(nvml.get("end"))))
        return links, seconds(nvml.get("window_s")) if links else None
    smi = mapping(doc.get("nvlink_smi"))
    if not smi:
        return {}, None
    start = _smi_counters(text(mapping(smi.get("start")).get("stdout")) or "")
    end = _smi_counters(text(mapping(smi.get("end")).get("stdout")) or "")
    for gpu, states in _smi_states(text(mapping(smi.get("status")).get("stdout")) or "").items():
        if gpu in end or len(end) < MAX_GPUS:
            end.setdefault(gpu, {name: {} for name in COUNTERS})["active"] = dict(states)
    links = _links(start, end)
    return links, seconds(smi.get("window_s")) if links else None


def with_links(node: NodeReadings, doc: Mapping[str, object]) -> NodeReadings:
    """The node with its GPUs' NVLinks and the fabric manager's state (``fabric_manager``: NVSwitch nodes only)."""
    links, window = parse_links(doc)
    manager = mapping(doc.get("fabric_manager"))
    running = manager.get("running")
    if links:
        node = dataclasses.replace(node, gpus=tuple(
            dataclasses.replace(g, nvlinks=links[g.index], nvlink_window_s=window) if g.index in links else g
            for g in node.gpus))
    if manager:
        node = dataclasses.replace(node, nvswitch_count=integer(manager.get("nvswitches")),
                                   fabric_manager_running=running if isinstance(running, bool) else None)
    return node
