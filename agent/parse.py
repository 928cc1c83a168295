"""The collector's ``gpudiag.probe/1`` document → :class:`NodeReadings`. Pure: text in, values out.

nvidia-smi's quirks live here: ``[N/A]``-style values are missing (``None``), never 0; a GPU that is lost
prints a message line instead of its CSV row while the others answer; exit 9 means the driver is not
loaded, exit 6 that no devices were found (https://docs.nvidia.com/deploy/nvidia-smi/, "Return value").
"""

from __future__ import annotations

import csv
import dataclasses
import json
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpudiag.arch import arch_name, parse_compute_capability, sm_name
from gpudiag.logs.plan import LogPlan
from gpudiag.model import PROBE_SCHEMA, GpuReading, GpuSample, NodeReadings, SmiStatus
from gpudiag.parse_logs import parse_context, parse_logs


class ProbeFormatError(ValueError):
    """The node's answer was not a gpudiag.probe/1 document."""


# NVML clock-event reason bits (nvml.h, nvmlClocksEventReason*), named as nvidia-smi names them.
CLOCK_EVENT_REASONS: tuple[tuple[int, str], ...] = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)

_MISSING = {"", "n/a", "[n/a]", "[not supported]", "[unknown error]", "[gpu is lost]",
            "[requested functionality has been deprecated]", "[insufficient permissions]", "[not found]"}
_LOST_LINE = re.compile(r"Unable to determine the device handle for GPU\s*([0-9A-Fa-f:.]+)\s*:\s*(.*)")
_GPU_IS_LOST = "[gpu is lost]"


def decode_reasons(mask: int | None) -> tuple[str, ...]:
    """Bit mask → reason names, in bit order; unknown bits appear as ``0x...``."""
    if mask is None:
        return ()
    names = [name for bit, name in CLOCK_EVENT_REASONS if mask & bit]
    known = sum(bit for bit, _ in CLOCK_EVENT_REASONS)
    if mask & ~known:
        names.append(hex(mask & ~known))
    return tuple(names)


def clean(value: object) -> str | None:
    """One value as text, or None when it is one of nvidia-smi's "no value" spellings (or absent)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return repr(value)  # NVML gives numbers
    if not isinstance(value, str):
        return None
    value = value.strip()
    return None if value.lower() in _MISSING else value


def to_float(value: object) -> float | None:
    value = clean(value)
    if value is None:
        return None
    try:
        return float(value.split()[0])
    except (ValueError, IndexError):
        return None


def to_int(value: object) -> int | None:
    value = clean(value)
    if value is None:
        return None
    try:
        return int(value, 0) if value.lower().startswith("0x") else int(float(value))
    except ValueError:
        return None


def load_document(stdout: bytes) -> dict[str, object]:
    """Find and decode the probe's JSON document in the remote stdout."""
    text = stdout.decode("utf-8", "replace").strip()
    start = text.rfind("\n{") + 1 if not text.startswith("{") else 0
    try:
        doc = json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise ProbeFormatError(f"the collector's output is not JSON ({exc.msg} at char {exc.pos})") from exc
    if not isinstance(doc, dict) or doc.get("schema") != PROBE_SCHEMA:
        raise ProbeFormatError(f"the collector's output is not a {PROBE_SCHEMA} document")
    return doc


def _rows(stdout: str, width: int) -> tuple[list[list[str]], list[str]]:
    """Split one --query-gpu output into CSV rows of the right width and other (message) lines."""
    rows: list[list[str]] = []
    messages: list[str] = []
    for line in stdout.splitlines():
        if not line.strip():
            continue
        cells = next(csv.reader([line], skipinitialspace=True))
        if len(cells) == width:
            rows.append(cells)
        else:
            messages.append(line.strip())
    return rows, messages


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _median_int(values: Iterable[int | None]) -> int | None:
    present = sorted(v for v in values if v is not None)
    return present[(len(present) - 1) // 2] if present else None  # the lower median stays a real reading


def _sample(row: Mapping[str, object], t_s: float | None) -> GpuSample:
    return GpuSample(
        t_s=t_s,
        utilization_pct=to_float(row.get("utilization_gpu")),
        memory_utilization_pct=to_float(row.get("utilization_memory")),
        power_w=to_float(row.get("power_draw")),
        sm_clock_mhz=to_float(row.get("sm_clock")),
        clock_event_reasons_mask=to_int(row.get("clock_event_reasons")),
        temperature_c=to_float(row.get("temperature")),
        pcie_gen=to_int(row.get("pcie_gen")),
        pcie_width=to_int(row.get("pcie_width")),
        pstate=clean(row.get("pstate")),
    )


def _gpu(index: int, rows: Sequence[Mapping[str, object]], samples: Sequence[GpuSample],
         energy_power_w: float | None = None) -> GpuReading:
    last = rows[-1]
    cc = parse_compute_capability(clean(last.get("compute_cap")))
    mask = 0
    for s in samples:
        mask |= s.clock_event_reasons_mask or 0
    lost = any(isinstance(v, str) and _GPU_IS_LOST in v.lower() for row in rows for v in row.values())
    return GpuReading(
        index=index,
        name=clean(last.get("name")),
        uuid=clean(last.get("uuid")),
        pci_bus_id=clean(last.get("pci_bus_id")),
        compute_capability=f"{cc[0]}.{cc[1]}" if cc else None,
        sm=sm_name(cc),
        arch=arch_name(cc),
        utilization_pct=_median(s.utilization_pct for s in samples),
        memory_utilization_pct=_median(s.memory_utilization_pct for s in samples),
        power_w=_median(s.power_w for s in samples),
        energy_power_w=energy_power_w,
        power_limit_w=to_float(last.get("enforced_power_limit")),
        default_power_limit_w=to_float(last.get("default_power_limit")),
        sm_clock_mhz=_median(s.sm_clock_mhz for s in samples),
        max_sm_clock_mhz=to_float(last.get("max_sm_clock")),
        clock_event_reasons=decode_reasons(mask) if any(
            s.clock_event_reasons_mask is not None for s in samples) else (),
        temperature_c=_median(s.temperature_c for s in samples),
        pstate=samples[-1].pstate if samples else None,
        pcie_gen=_median_int(s.pcie_gen for s in samples),
        pcie_gen_max=to_int(last.get("pcie_gen_max")),
        pcie_width=_median_int(s.pcie_width for s in samples),
        pcie_width_max=to_int(last.get("pcie_width_max")),
        ecc_uncorrected=to_int(last.get("ecc_uncorrected")),
        memory_used_mib=to_float(last.get("memory_used")),
        memory_total_mib=to_float(last.get("memory_total")),
        lost=lost,
        samples=tuple(samples),
    )


def _lost_gpus(lost_bus_ids: Sequence[str], seen: Iterable[int]) -> list[GpuReading]:
    """GPUs that printed a "device handle" error: nvidia-smi numbers GPUs in PCI order, so each missing
    index is paired with a lost bus id in PCI order."""
    seen_set = set(seen)
    total = len(seen_set) + len(lost_bus_ids)
    free = [i for i in range(total + max(seen_set, default=0) + 1) if i not in seen_set]
    return [GpuReading(index=i, pci_bus_id=bus, lost=True) for i, bus in zip(free, sorted(lost_bus_ids), strict=False)]


def _smi_status(samples: Sequence[Mapping[str, object]], have_rows: bool) -> tuple[SmiStatus, int | None]:
    if not samples:
        return SmiStatus.FAILED, None
    code = samples[0].get("exit")
    code = code if isinstance(code, int) else None
    if have_rows:
        return SmiStatus.OK, code
    if code == 9:
        return SmiStatus.DRIVER_ERROR, code
    if code == 6:
        return SmiStatus.NO_DEVICES, code
    if code == 0:
        return SmiStatus.NO_DEVICES, code  # ran fine, printed no GPU: nothing to read
    return SmiStatus.FAILED, code


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _items(value: object) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def parse_probe(doc: Mapping[str, Any], *, output_truncated: bool = False,
                log_plan: LogPlan | None = None) -> NodeReadings:
    """Turn a probe document into readings: per-GPU medians over the samples, failures as data.

    The document comes from a remote machine: every part is type-checked as it is read, and a part that
    is missing or of the wrong type reads as "not reported". ``log_plan`` (the host's) says how to read
    the configuration echoes its logs held (agent/parse_logs.py).
    """
    host = _mapping(doc.get("host"))
    smi = _mapping(doc.get("nvidia_smi"))
    problems = tuple(str(p) for p in _items(doc.get("problems")))
    source = f"nvidia-smi ({_text(doc.get('collector')) or 'python'} collector)"
    hostname, kernel = _text(host.get("hostname")), _text(host.get("kernel"))
    nvml_unavailable = _text(doc.get("nvml_unavailable"))
    common: dict[str, Any] = {"hostname": hostname, "kernel": kernel, "output_truncated": output_truncated,
                                  "problems": problems, "nvml_unavailable": nvml_unavailable,
                                  "logs": parse_logs(doc.get("logs"), log_plan),
                                  "context": parse_context(doc.get("context"))}
    if doc.get("source") == "nvml" and isinstance(doc.get("nvml"), dict):
        return _parse_nvml(doc["nvml"], common)
    if smi.get("status") == "skipped":  # a log search: the GPUs were not read on purpose
        return NodeReadings(source=source, smi_status=SmiStatus.SKIPPED, **common)
    if smi.get("status") == "missing" or not smi:
        return NodeReadings(source=source, smi_status=SmiStatus.MISSING,
                            smi_message="nvidia-smi is not installed (not on PATH nor in the usual places)",
                            **common)
    fields = [(str(f[0]), str(f[1])) for f in _items(doc.get("fields")) if isinstance(f, list) and len(f) == 2]
    logical = [name for name, _ in fields]
    raw_samples = [s for s in _items(doc.get("samples")) if isinstance(s, dict)]
    per_gpu_rows: dict[int, list[dict[str, object]]] = {}
    per_gpu_samples: dict[int, list[GpuSample]] = {}
    lost_bus: dict[str, str] = {}
    messages: list[str] = []
    for raw in raw_samples:
        rows, other = _rows(str(raw.get("stdout", "")), len(logical))
        t_s = _seconds(raw.get("t_s"))
        for cells in rows:
            row: dict[str, object] = dict(zip(logical, cells, strict=True))
            index = to_int(row.get("index"))
            if index is None:
                continue
            per_gpu_rows.setdefault(index, []).append(row)
            per_gpu_samples.setdefault(index, []).append(_sample(row, t_s))
        for line in other + str(raw.get("stderr", "")).splitlines():
            match = _LOST_LINE.search(line)
            if match:
                lost_bus[match.group(1)] = match.group(2).strip()
            elif line.strip() and line.strip() not in messages:
                messages.append(line.strip())
    gpus = [_gpu(i, per_gpu_rows[i], per_gpu_samples[i]) for i in sorted(per_gpu_rows)]
    gpus += _lost_gpus(list(lost_bus), per_gpu_rows)
    gpus.sort(key=lambda g: g.index)
    status, code = _smi_status(raw_samples, bool(gpus))
    driver = next((clean(rows[-1].get("driver_version")) for rows in per_gpu_rows.values()), None)
    lost_text = [f"GPU {bus}: {why}" for bus, why in lost_bus.items()]
    message = "; ".join(lost_text + messages)[:500] or None
    return NodeReadings(
        source=source,
        driver_version=driver,
        cuda_version=_text(doc.get("cuda_version")),
        cuda_version_from=_text(doc.get("cuda_version_from")),
        smi_status=status,
        smi_message=message,
        smi_exit_code=code,
        gpus=tuple(gpus),
        sample_count=len(raw_samples),
        window_s=_window(raw_samples),
        **common,
    )


def _seconds(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _window(samples: Sequence[Mapping[str, Any]]) -> float | None:
    times = [t for t in (_seconds(s.get("t_s")) for s in samples) if t is not None]
    return max(times) - min(times) if len(times) > 1 else None


def _parse_nvml(nvml: Mapping[str, Any], common: Mapping[str, Any]) -> NodeReadings:
    """The NVML reader's part of the document (see collectors/node/nvml.py) → readings, same units."""
    statics = {to_int(g.get("index")): g for g in _items(nvml.get("gpus")) if isinstance(g, dict)}
    raw_samples = [s for s in _items(nvml.get("samples")) if isinstance(s, dict)]
    energy = {to_int(e.get("index")): e for e in _items(nvml.get("energy")) if isinstance(e, dict)}
    rows: dict[int, list[dict[str, object]]] = {}
    samples: dict[int, list[GpuSample]] = {}
    lost: dict[int, str] = {i: str(g.get("error", "")) for i, g in statics.items() if i is not None and g.get("lost")}
    for raw in raw_samples:
        t_s = _seconds(raw.get("t_s"))
        for row in (r for r in _items(raw.get("rows")) if isinstance(r, dict)):
            index = to_int(row.get("index"))
            if index is None:
                continue
            if row.get("lost"):
                lost[index] = str(row.get("error", ""))
                continue
            merged = {**statics.get(index, {}), **row}
            rows.setdefault(index, []).append(merged)
            samples.setdefault(index, []).append(_sample(merged, t_s))
    gpus = []
    for index in sorted(set(rows) | set(lost)):
        if index in rows and index not in lost:
            e = energy.get(index, {})
            window, mj = _seconds(e.get("window_s")), _seconds(e.get("energy_mj"))
            average = round(mj / 1000.0 / window, 2) if window and mj is not None and mj >= 0 else None
            gpus.append(_gpu(index, rows[index], samples[index], energy_power_w=average))
        else:
            static = statics.get(index, {})
            gpus.append(GpuReading(index=index, name=_text(static.get("name")), uuid=_text(static.get("uuid")),
                                   pci_bus_id=_text(static.get("pci_bus_id")), lost=True))
    message = "; ".join(f"GPU {i}: {why}" for i, why in sorted(lost.items()))[:500] or None
    return NodeReadings(
        source="nvml",
        driver_version=_text(nvml.get("driver_version")),
        cuda_version=_text(nvml.get("cuda_version")),
        cuda_version_from="nvml" if _text(nvml.get("cuda_version")) else None,
        smi_status=SmiStatus.OK if gpus else SmiStatus.NO_DEVICES,
        smi_message=message,
        gpus=tuple(gpus),
        sample_count=len(raw_samples),
        window_s=_window(raw_samples),
        **common,
    )


_DCGM_FIELDS = ("sm_active_pct", "sm_occupancy_pct", "tensor_active_pct", "dram_active_pct")


def parse_dcgm(text: str) -> dict[int, dict[str, float]]:
    """``dcgmi dmon -e 1002,1003,1004,1005`` text → per GPU index, the medians in percent.

    Data lines read ``GPU 0  0.012  0.015  0.000  0.001`` (ratios 0-1); ``N/A`` is "not reported".
    """
    values: dict[int, dict[str, list[float]]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 2 + len(_DCGM_FIELDS) or parts[0] != "GPU" or not parts[1].isdigit():
            continue
        per_gpu = values.setdefault(int(parts[1]), {})
        for name, raw in zip(_DCGM_FIELDS, parts[2:], strict=True):
            number = to_float(raw)
            if number is not None:
                per_gpu.setdefault(name, []).append(100.0 * number)
    return {index: {name: round(statistics.median(v), 1) for name, v in fields.items()}
            for index, fields in values.items()}


def with_dcgm(node: NodeReadings, dcgm: Mapping[str, Any]) -> NodeReadings:
    """``node`` with DCGM's profiling readings on its GPUs, or the reason there are none."""
    if not dcgm:
        return node
    if not dcgm.get("available"):
        return dataclasses.replace(node, dcgm_unavailable=_text(dcgm.get("why")) or "not available")
    per_gpu = parse_dcgm(_text(dcgm.get("stdout")) or "")
    def profiled(gpu: GpuReading) -> GpuReading:
        found = per_gpu.get(gpu.index, {})
        return dataclasses.replace(
            gpu, sm_active_pct=found.get("sm_active_pct"), sm_occupancy_pct=found.get("sm_occupancy_pct"),
            tensor_active_pct=found.get("tensor_active_pct"), dram_active_pct=found.get("dram_active_pct"))

    gpus = tuple(profiled(g) for g in node.gpus)
    return dataclasses.replace(node, gpus=gpus)


def parse_probe_output(stdout: bytes, *, output_truncated: bool = False,
                       log_plan: LogPlan | None = None) -> NodeReadings:
    """Remote stdout → readings; raises :class:`ProbeFormatError` when it is not a probe document."""
    doc = load_document(stdout)
    return with_dcgm(parse_probe(doc, output_truncated=output_truncated, log_plan=log_plan),
                     _mapping(doc.get("dcgm")))
