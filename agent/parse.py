"""The collector's ``gpudiag.probe/2`` document → :class:`NodeReadings`. Pure: text in, values out.

Both paths of the collector (NVML rows, nvidia-smi CSV) give the readings of one table
(``gpudiag.collectors.node.readings``); this module walks that table to type each value, to combine the
samples (median, lower median, last, any) and to build the model's ``GpuSample`` and ``GpuReading``, whose
fields are the readings' names. nvidia-smi's quirks live here: ``[N/A]``-style values are "not applicable"
(``None``), never 0; ``[Unknown Error]`` and a value that is not what the reading's kind needs are a failed
read (``None``, listed in ``failed_readings`` so a check says UNKNOWN); a GPU that is lost prints a message
line instead of its CSV row while the others answer; exit 9 means the driver is not loaded, exit 6 that no
devices were found (https://docs.nvidia.com/deploy/nvidia-smi/, "Return value").
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpudiag.arch import arch_name, parse_compute_capability, sm_name
from gpudiag.collectors.node.readings import BY_NAME, PER_SAMPLE, READINGS, Reading, by_smi_field
from gpudiag.logs.plan import LogPlan
from gpudiag.model import PROBE_SCHEMA, GpuReading, GpuSample, NodeReadings, SmiStatus
from gpudiag.parse_logs import parse_context, parse_logs
from gpudiag.untrusted import items, mapping, seconds, text


class ProbeFormatError(ValueError):
    """The node's answer was not a gpudiag.probe/2 document."""


# nvidia-smi's spellings of "this GPU cannot give this reading": not applicable, not a failure.
_NOT_APPLICABLE = {"", "n/a", "[n/a]", "[not supported]", "[requested functionality has been deprecated]",
                   "[insufficient permissions]", "[not found]"}
_GPU_IS_LOST = "[gpu is lost]"
_LOST_LINE = re.compile(r"Unable to determine the device handle for GPU\s*([0-9A-Fa-f:.]+)\s*:\s*(.*)")
_SMI_FIELDS = by_smi_field()


def read_value(reading: Reading, raw: object) -> tuple[Any, str | None]:
    """One raw value (nvidia-smi text or an NVML number) → (the reading's typed value or None, why the read
    failed or None). ``None`` with no reason: not reported or not applicable."""
    if raw is None or isinstance(raw, bool):
        return None, None
    if isinstance(raw, (int, float)):
        return _number(reading, raw)
    if not isinstance(raw, str):
        return None, f"unexpected {type(raw).__name__} value"
    value = raw.strip()
    low = value.lower()
    if low in _NOT_APPLICABLE or low == _GPU_IS_LOST:
        return None, None
    if low.startswith("["):  # [Unknown Error] and nvidia-smi's other bracketed failures
        return None, f"nvidia-smi: {value[:80]}"
    if reading.kind in ("text", "pstate"):
        return value, None
    if reading.kind == "cc":
        cc = parse_compute_capability(value)
        return (f"{cc[0]}.{cc[1]}", None) if cc else (None, f"not a compute capability: {value[:40]!r}")
    try:
        if reading.kind == "mask":
            return _number(reading, int(value, 0))
        number = float(value.split()[0])
    except (ValueError, IndexError, OverflowError):
        return None, f"not a number: {value[:40]!r}"
    return _number(reading, number)


def _number(reading: Reading, number: float) -> tuple[Any, str | None]:
    if isinstance(number, float) and not math.isfinite(number):
        return None, f"not a finite number: {number!r}"
    if reading.kind in ("int", "mask"):
        try:
            return int(number), None
        except (ValueError, OverflowError):
            return None, f"not an integer: {number!r}"
    if reading.kind in ("text", "pstate", "cc"):
        return (str(number), None) if reading.kind == "text" else (None, f"not a {reading.kind}: {number!r}")
    return float(number), None


def combine(reading: Reading, values: Iterable[Any]) -> Any:
    """The samples' values of ``reading`` → its one value over the window, as the table says."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    if reading.combine == "median":
        return statistics.median(present)
    if reading.combine == "lower_median":  # a real reading, never a half-way value
        return sorted(present)[(len(present) - 1) // 2]
    if reading.combine == "any":
        mask = 0
        for value in present:
            mask |= value
        return mask
    return present[-1]  # "last"


def load_document(stdout: bytes) -> dict[str, object]:
    """Find and decode the probe's JSON document in the remote stdout."""
    raw = stdout.decode("utf-8", "replace").strip()
    start = raw.rfind("\n{") + 1 if not raw.startswith("{") else 0
    try:
        doc = json.loads(raw[start:])
    except (json.JSONDecodeError, RecursionError) as exc:
        why = f"{exc.msg} at char {exc.pos}" if isinstance(exc, json.JSONDecodeError) else "nested too deep"
        raise ProbeFormatError(f"the collector's output is not JSON ({why})") from exc
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
        try:
            cells = next(csv.reader([line], skipinitialspace=True))
        except csv.Error:  # a field past csv's size limit: not a row
            cells = []
        if len(cells) == width:
            rows.append(cells)
        else:
            messages.append(line.strip()[:500])
    return rows, messages


def _is_lost(row: Mapping[str, object]) -> bool:
    return any(isinstance(v, str) and _GPU_IS_LOST in v.lower() for v in row.values())


def _gpu(index: int, rows: Sequence[Mapping[str, object]], times: Sequence[float | None],
         energy_power_w: float | None = None) -> GpuReading:
    """One GPU from its rows (one per sample, the static readings in each or merged in): every reading of
    the table typed and combined, failures listed."""
    values: dict[str, list[Any]] = {}
    failures: dict[str, str] = {}
    for row in rows:
        node_errors = mapping(row.get("errors"))
        for reading in READINGS:
            value, why = read_value(reading, row.get(reading.name))
            why = why or text(node_errors.get(reading.name))
            values.setdefault(reading.name, []).append(value)
            if why is not None:
                failures.setdefault(reading.name, why[:200])
    combined = {r.name: combine(r, values.get(r.name, ())) for r in READINGS if r.name != "index"}
    samples = tuple(GpuSample(t_s=t_s, **{r.name: values[r.name][i] for r in PER_SAMPLE})
                    for i, t_s in enumerate(times))
    cc = parse_compute_capability(combined["compute_capability"])
    failed = tuple((name, why) for name, why in failures.items() if combined.get(name) is None)
    return GpuReading(index=index, sm=sm_name(cc), arch=arch_name(cc), energy_power_w=energy_power_w,
                      lost=any(_is_lost(row) for row in rows), failed_readings=failed, samples=samples,
                      **combined)


def _lost_gpus(lost_bus_ids: Sequence[str], seen: Iterable[int]) -> list[GpuReading]:
    """GPUs that printed a "device handle" error: nvidia-smi numbers GPUs in PCI order, so each missing
    index (the lowest free ones) is paired with a lost bus id in PCI order."""
    seen_set = set(seen)
    free: list[int] = []
    candidate = 0
    while len(free) < len(lost_bus_ids):  # at most len(seen) + len(lost) steps, whatever the indexes claim
        if candidate not in seen_set:
            free.append(candidate)
        candidate += 1
    return [GpuReading(index=i, pci_bus_id=bus, lost=True) for i, bus in zip(free, sorted(lost_bus_ids), strict=True)]


def _smi_status(samples: Sequence[Mapping[str, object]], have_rows: bool) -> tuple[SmiStatus, int | None]:
    if not samples:
        return SmiStatus.FAILED, None
    code = samples[0].get("exit")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    if have_rows:
        return SmiStatus.OK, code
    if code == 9:
        return SmiStatus.DRIVER_ERROR, code
    if code == 6:
        return SmiStatus.NO_DEVICES, code
    if code == 0:
        return SmiStatus.NO_DEVICES, code  # ran fine, printed no GPU: nothing to read
    return SmiStatus.FAILED, code


def _index(value: object) -> int | None:
    index, _ = read_value(BY_NAME["index"], value)
    return index if isinstance(index, int) and index >= 0 else None


def parse_probe(doc: Mapping[str, Any], *, output_truncated: bool = False,
                log_plan: LogPlan | None = None) -> NodeReadings:
    """Turn a probe document into readings: per-GPU values combined over the samples, failures as data.

    The document comes from a remote machine: every part is type-checked as it is read, and a part that
    is missing or of the wrong type reads as "not reported". ``log_plan`` (the host's) says how to read
    the configuration echoes its logs held (gpudiag/parse_logs.py).
    """
    host = mapping(doc.get("host"))
    smi = mapping(doc.get("nvidia_smi"))
    problems = tuple(str(p)[:500] for p in items(doc.get("problems")))
    source = f"nvidia-smi ({text(doc.get('collector')) or 'python'} collector)"
    common: dict[str, Any] = {"hostname": text(host.get("hostname")), "kernel": text(host.get("kernel")),
                              "output_truncated": output_truncated, "problems": problems,
                              "nvml_unavailable": text(doc.get("nvml_unavailable")),
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
    # Each CSV column is the reading its --query-gpu name means (the table knows every spelling).
    columns = [_SMI_FIELDS.get(str(f[1]), str(f[0])) for f in items(doc.get("fields"))
               if isinstance(f, list) and len(f) == 2]
    raw_samples = [s for s in items(doc.get("samples")) if isinstance(s, dict)]
    per_gpu: dict[int, list[dict[str, object]]] = {}
    per_gpu_times: dict[int, list[float | None]] = {}
    lost_bus: dict[str, str] = {}
    messages: list[str] = []
    for raw in raw_samples:
        rows, other = _rows(text(raw.get("stdout")) or "", len(columns))
        t_s = seconds(raw.get("t_s"))
        for cells in rows:
            row: dict[str, object] = dict(zip(columns, cells, strict=True))
            index = _index(row.get("index"))
            if index is not None:
                per_gpu.setdefault(index, []).append(row)
                per_gpu_times.setdefault(index, []).append(t_s)
        for line in other + (text(raw.get("stderr")) or "").splitlines():
            match = _LOST_LINE.search(line)
            if match:
                lost_bus[match.group(1)] = match.group(2).strip()
            elif line.strip() and line.strip() not in messages:
                messages.append(line.strip())
    gpus = [_gpu(i, per_gpu[i], per_gpu_times[i]) for i in sorted(per_gpu)]
    gpus += _lost_gpus(list(lost_bus), per_gpu)
    gpus.sort(key=lambda g: g.index)
    status, code = _smi_status(raw_samples, bool(gpus))
    driver = next((text(rows[-1].get("driver_version")) for rows in per_gpu.values()), None)
    lost_text = [f"GPU {bus}: {why}" for bus, why in lost_bus.items()]
    return NodeReadings(
        source=source,
        driver_version=driver,
        cuda_version=text(doc.get("cuda_version")),
        cuda_version_from=text(doc.get("cuda_version_from")),
        smi_status=status,
        smi_message="; ".join(lost_text + messages)[:500] or None,
        smi_exit_code=code,
        gpus=tuple(gpus),
        sample_count=len(raw_samples),
        window_s=_window(raw_samples),
        **common,
    )


def _window(samples: Sequence[Mapping[str, Any]]) -> float | None:
    times = [t for t in (seconds(s.get("t_s")) for s in samples) if t is not None]
    return max(times) - min(times) if len(times) > 1 else None


def _parse_nvml(nvml: Mapping[str, Any], common: Mapping[str, Any]) -> NodeReadings:
    """The NVML reader's part of the document (see collectors/node/nvml.py) → readings, same units."""
    statics = {_index(g.get("index")): g for g in items(nvml.get("gpus")) if isinstance(g, dict)}
    raw_samples = [s for s in items(nvml.get("samples")) if isinstance(s, dict)]
    energy = {_index(e.get("index")): e for e in items(nvml.get("energy")) if isinstance(e, dict)}
    rows: dict[int, list[dict[str, object]]] = {}
    times: dict[int, list[float | None]] = {}
    lost: dict[int, str] = {i: str(g.get("error", ""))[:200] for i, g in statics.items()
                            if i is not None and g.get("lost")}
    for raw in raw_samples:
        t_s = seconds(raw.get("t_s"))
        for row in (r for r in items(raw.get("rows")) if isinstance(r, dict)):
            index = _index(row.get("index"))
            if index is None:
                continue
            if row.get("lost"):
                lost[index] = str(row.get("error", ""))[:200]
                continue
            static = statics.get(index, {})
            errors = {**mapping(static.get("errors")), **mapping(row.get("errors"))}
            rows.setdefault(index, []).append({**static, **row, "errors": errors})
            times.setdefault(index, []).append(t_s)
    gpus = []
    for index in sorted(set(rows) | set(lost)):
        if index in rows and index not in lost:
            e = energy.get(index, {})
            window, mj = seconds(e.get("window_s")), seconds(e.get("energy_mj"))
            average = round(mj / 1000.0 / window, 2) if window and mj is not None and mj >= 0 else None
            gpus.append(_gpu(index, rows[index], times[index], energy_power_w=average))
        else:
            static = statics.get(index, {})
            gpus.append(GpuReading(index=index, name=text(static.get("name")), uuid=text(static.get("uuid")),
                                   pci_bus_id=text(static.get("pci_bus_id")), lost=True))
    cuda = text(nvml.get("cuda_version"))
    return NodeReadings(
        source="nvml",
        driver_version=text(nvml.get("driver_version")),
        cuda_version=cuda,
        cuda_version_from="nvml" if cuda else None,
        smi_status=SmiStatus.OK if gpus else SmiStatus.NO_DEVICES,
        smi_message="; ".join(f"GPU {i}: {why}" for i, why in sorted(lost.items()))[:500] or None,
        gpus=tuple(gpus),
        sample_count=len(raw_samples),
        window_s=_window(raw_samples),
        **common,
    )


_DCGM_FIELDS = ("sm_active_pct", "sm_occupancy_pct", "tensor_active_pct", "dram_active_pct")


def parse_dcgm(dmon: str) -> dict[int, dict[str, float]]:
    """``dcgmi dmon -e 1002,1003,1004,1005`` text → per GPU index, the medians in percent.

    Data lines read ``GPU 0  0.012  0.015  0.000  0.001`` (ratios 0-1); ``N/A`` is "not reported".
    """
    values: dict[int, dict[str, list[float]]] = {}
    ratio = Reading("ratio", (), None, 1.0, "number", True, "median")
    for line in dmon.splitlines():
        parts = line.split()
        if len(parts) != 2 + len(_DCGM_FIELDS) or parts[0] != "GPU" or not parts[1].isdigit():
            continue
        per_gpu = values.setdefault(int(parts[1]), {})
        for name, raw in zip(_DCGM_FIELDS, parts[2:], strict=True):
            number, _ = read_value(ratio, raw)
            if number is not None:
                per_gpu.setdefault(name, []).append(100.0 * number)
    return {index: {name: round(statistics.median(v), 1) for name, v in fields.items()}
            for index, fields in values.items()}


def with_dcgm(node: NodeReadings, dcgm: Mapping[str, Any]) -> NodeReadings:
    """``node`` with DCGM's profiling readings on its GPUs, or the reason there are none."""
    if not dcgm:
        return node
    if not dcgm.get("available"):
        return dataclasses.replace(node, dcgm_unavailable=text(dcgm.get("why")) or "not available")
    per_gpu = parse_dcgm(text(dcgm.get("stdout")) or "")
    found: dict[int, dict[str, Any]] = {index: dict(values) for index, values in per_gpu.items()}
    gpus = tuple(dataclasses.replace(g, **found.get(g.index, {})) for g in node.gpus)
    return dataclasses.replace(node, gpus=gpus)


def parse_probe_output(stdout: bytes, *, output_truncated: bool = False,
                       log_plan: LogPlan | None = None) -> NodeReadings:
    """Remote stdout → readings; raises :class:`ProbeFormatError` when it is not a probe document."""
    doc = load_document(stdout)
    return with_dcgm(parse_probe(doc, output_truncated=output_truncated, log_plan=log_plan),
                     mapping(doc.get("dcgm")))
