"""The collector's ``gpudiag.probe/2`` document → :class:`NodeReadings`. Pure: text in, values out.

Both paths of the collector (NVML rows, nvidia-smi CSV) give the readings of one table
(``gpudiag_node.readings``); this module walks that table to type each value, to combine the
samples (median, lower median, last, any) and to build the model's ``GpuSample`` and ``GpuReading``, whose
fields are the readings' names. nvidia-smi's quirks live here: ``[N/A]``-style values are "not applicable"
(``None``), never 0; ``[Unknown Error]`` and a value that is not what the reading's kind needs are a failed
read (``None``, listed in ``failed_readings`` so a check says UNKNOWN); a GPU that is lost prints a message
line instead of its CSV row while the others answer; exit 9 means the driver is not loaded, exit 6 that no
devices were found (https://docs.nvidia.com/deploy/nvidia-smi/, "Return value").
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from gpudiag.collect.kinds import from_number, from_words
from gpudiag.collect.parse_active import parse_active
from gpudiag.collect.parse_links import with_links
from gpudiag.collect.parse_logs import parse_context, parse_logs
from gpudiag.collect.parse_nccl_ras import parse_nccl_ras
from gpudiag.collect.parse_processes import parse_processes, with_gpm
from gpudiag.collect.untrusted import Claims, items, mapping, seconds, short, text
from gpudiag.logs.plan import LogPlan
from gpudiag.model import GpuReading, GpuSample, HungCall, NodeReadings, SmiStatus
from gpudiag.model.arch import arch_name, parse_compute_capability, sm_name
from gpudiag_node.readings import BY_NAME, PER_SAMPLE, READINGS, Reading, by_smi_field
from gpudiag_node.rows import cells as row_cells
from gpudiag_node.wire import BY_SECTION, SCHEMA

T = TypeVar("T")
_NONE: tuple[Any, ...] = ()  # a section left out: none of its items


class ProbeFormatError(ValueError):
    """The node's answer was not a gpudiag.probe/2 document."""


# What one host may claim (issue 14): past these, the document is hostile or broken. The excess is cut and
# becomes a problem of that host (PROBE_INCOMPLETE), so the controller's time and memory stay bounded. The
# sections' bounds are declared with the sections (gpudiag_node.wire.SECTIONS, docs/probe.md).
MAX_GPUS = BY_SECTION["nvml"].bound[0]  # distinct GPUs read per host
MAX_GPU_INDEX = 1023  # nvidia-smi and NVML number a node's GPUs from 0
MAX_SAMPLES = BY_SECTION["samples"].bound[0]  # samples per GPU (the --samples bound)
MAX_PROBLEMS = BY_SECTION["problems"].bound[0]
MAX_HUNG = BY_SECTION["hung"].bound[0]
_UNAVAILABLE_CHARS = BY_SECTION["nvml_unavailable"].bound[0]
MAX_MESSAGES = 20
MAX_LINES = 2 * MAX_GPUS + MAX_MESSAGES  # of one nvidia-smi answer: a row and a lost-GPU line per GPU, messages


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
        return from_number(reading.kind, raw)
    if not isinstance(raw, str):
        return None, f"unexpected {type(raw).__name__} value"
    return _words(reading.kind, raw)


# The same few words come back from every GPU of every host (a model name, "Enabled", "[N/A]", a driver
# version, most figures): typed once per sweep. The values are immutable (numbers, strings, booleans, None), and
# the cache is bounded, whatever a node sends.
@functools.lru_cache(maxsize=1 << 16)
def _words(kind: str, raw: str) -> tuple[Any, str | None]:
    """nvidia-smi's text of a reading of ``kind`` → (its typed value or None, why the read failed or None)."""
    value = raw.strip()
    low = value.lower()
    if low in _NOT_APPLICABLE or low == _GPU_IS_LOST:
        return None, None
    if low.startswith("["):  # [Unknown Error] and nvidia-smi's other bracketed failures
        return None, f"nvidia-smi: {value[:80]}"
    return from_words(kind, value, low)


def combine(reading: Reading, values: Iterable[Any]) -> Any:
    """The samples' values of ``reading`` → its one value over the window, as the table says."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    if len(present) == 1 and reading.combine != "any":  # one sample (a sweep's default): its value, as below
        return present[0]
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
    except (ValueError, RecursionError) as exc:  # ValueError: also an int of more than 4,300 digits
        why = (f"{exc.msg} at char {exc.pos}" if isinstance(exc, json.JSONDecodeError)
               else "nested too deep" if isinstance(exc, RecursionError) else "a number too long")
        raise ProbeFormatError(f"the collector's output is not JSON ({why})") from exc
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ProbeFormatError(f"the collector's output is not a {SCHEMA} document")
    return doc


def _rows(stdout: str, width: int, claims: Claims) -> tuple[list[list[str]], list[str]]:
    """Split one --query-gpu output into CSV rows of the right width and other (message) lines; at most
    ``MAX_LINES`` lines are read (one row per GPU, a lost-GPU line per GPU, a few messages)."""
    rows: list[list[str]] = []
    messages: list[str] = []
    lines = [line for line in stdout.splitlines() if line.strip()]
    if len(lines) > MAX_LINES:
        claims.over("lines", f"one nvidia-smi sample held {len(lines)} lines (GPU rows and messages); only "
                             f"the first {MAX_LINES} are read")
        del lines[MAX_LINES:]
    for line in lines:
        if width == 0:
            messages.append(line.strip()[:500])
            continue
        cells = row_cells(line)  # the node reads its rows the same way (gpudiag_node.rows)
        if cells is not None and len(cells) == width:
            rows.append(cells)
        else:
            messages.append(line.strip()[:500])
    return rows, messages


def _is_lost(row: Mapping[str, object]) -> bool:
    # One search of the row's text: "\0" is in no value's words, so no match spans two values.
    return _GPU_IS_LOST in "\0".join(v for v in row.values() if isinstance(v, str)).lower()


def _gpu(index: int, rows: Sequence[Mapping[str, object]], times: Sequence[float | None],
         energy_power_w: float | None = None) -> GpuReading:
    """One GPU from its rows (one per sample, the static readings in each or merged in): every reading of
    the table typed and combined, failures listed."""
    values: dict[str, list[Any]] = {reading.name: [] for reading in READINGS}
    failures: dict[str, str] = {}
    for row in rows:  # the hot loop of a sweep's parse: every reading of every GPU of every host
        node_errors = mapping(row.get("errors"))
        raw = row.get
        for reading in READINGS:
            name = reading.name
            value = raw(name)
            # read_value's cases, the two common ones first: nothing sent, and nvidia-smi's words
            if value is None:
                why = None
            elif type(value) is str:
                value, why = _words(reading.kind, value)
            else:
                value, why = read_value(reading, value)
            if why is None and node_errors:
                why = text(node_errors.get(name))
            values[name].append(value)
            if why is not None and name not in failures:
                failures[name] = why[:200]
    if len(rows) == 1:  # one sample (a sweep's default): combine() of one value is that value
        combined = {r.name: values[r.name][0] if r.combine != "any" else combine(r, values[r.name])
                    for r in READINGS if r.name != "index"}
    else:
        combined = {r.name: combine(r, values[r.name]) for r in READINGS if r.name != "index"}
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
    return index if isinstance(index, int) and 0 <= index <= MAX_GPU_INDEX else None


def _claimed_index(value: object, claims: Claims) -> int | None:
    """A GPU's index, or None; an index past the range a node can have is recorded in ``claims``."""
    index, _ = read_value(BY_NAME["index"], value)
    if isinstance(index, int) and index > MAX_GPU_INDEX:
        claims.over("GPU index", f"the node listed GPU index {index}, past {MAX_GPU_INDEX}: that row is not read")
        return None
    return index if isinstance(index, int) and index >= 0 else None


def parse_probe(doc: Mapping[str, object], *, output_truncated: bool = False,
                log_plan: LogPlan | None = None) -> NodeReadings:
    """Turn a probe document into readings: per-GPU values combined over the samples, failures as data.

    The document comes from a remote machine: every part is type-checked as it is read, and a part that
    is missing or of the wrong type reads as "not reported". ``log_plan`` (the host's) says how to read
    the configuration echoes its logs held (gpudiag/parse_logs.py).
    """
    claims = Claims()
    lost: list[str] = []
    node = _parse_probe(doc, claims, output_truncated=output_truncated, log_plan=log_plan, lost=lost)
    node = _guarded("NVLink section", node, lost, with_links, node, doc)
    excess = (*claims.problems(), *lost)
    return dataclasses.replace(node, problems=node.problems + excess) if excess else node


def _guarded(what: str, default: T, lost: list[str], parse: Callable[..., T], *args: Any) -> T:
    """``parse(*args)``, or ``default`` with a line in ``lost`` when it raises: one section of what a node
    sent (untrusted) that no parser foresaw (a RecursionError, an int past Python's digit limit) costs that
    section, never the host."""
    try:
        return parse(*args)
    except Exception as exc:  # noqa: BLE001 - the one net over a node's sections; the line says what
        lost.append(f"the node's {what} could not be read ({type(exc).__name__}); left out")
        return default


def _parse_probe(doc: Mapping[str, Any], claims: Claims, *, output_truncated: bool,
                 log_plan: LogPlan | None, lost: list[str]) -> NodeReadings:
    host = mapping(doc.get("host"))
    smi = mapping(doc.get("nvidia_smi"))
    problems = tuple(p[:500] for p in claims.cap([p for p in items(doc.get("problems")) if isinstance(p, str)],
                                                  MAX_PROBLEMS, "problems"))
    source = f"nvidia-smi ({short(doc.get('collector'), BY_SECTION['collector'].bound[0]) or 'python'} collector)"
    common: dict[str, Any] = {"hostname": short(host.get("hostname")), "kernel": short(host.get("kernel")),
                              "output_truncated": output_truncated, "problems": problems,
                              "nvml_unavailable": short(doc.get("nvml_unavailable"), _UNAVAILABLE_CHARS),
                              "logs": _guarded("log section", _NONE, lost, parse_logs, doc.get("logs"), log_plan,
                                               claims),
                              "context": _guarded("context section", None, lost, parse_context,
                                                  doc.get("context")),
                              "hung_calls": _guarded("hung-call section", _NONE, lost, parse_hung, doc.get("hung")),
                              "nccl_ras": _guarded("NCCL RAS section", None, lost, parse_nccl_ras,
                                                   doc.get("nccl_ras")),
                              "active": _guarded("active section", None, lost, parse_active, doc.get("active")),
                              **_guarded("process section", {}, lost, parse_processes, doc,
                                         mapping(doc.get("nvml")), claims)}
    if doc.get("source") == "nvml" and isinstance(doc.get("nvml"), dict):
        return _parse_nvml(doc["nvml"], common, claims)
    if smi.get("status") == "skipped":  # a log search: the GPUs were not read on purpose
        return NodeReadings(source=source, smi_status=SmiStatus.SKIPPED, **common)
    if smi.get("status") == "missing" or not smi:
        return NodeReadings(source=source, smi_status=SmiStatus.MISSING,
                            smi_message="nvidia-smi is not installed (not on PATH nor in the usual places)",
                            **common)
    # Each CSV column is the reading its --query-gpu name means (the table knows every spelling).
    columns = _columns(doc.get("fields"))
    # The window's later calls leave out the readings read once (collectors/gpudiag_node/probe.py).
    later_columns = _columns(doc.get("later_fields")) or columns
    raw_samples = claims.cap([s for s in items(doc.get("samples")) if isinstance(s, dict)], MAX_SAMPLES,
                             "samples")
    per_gpu: dict[int, list[dict[str, object]]] = {}
    per_gpu_times: dict[int, list[float | None]] = {}
    lost_bus: dict[str, str] = {}
    messages: dict[str, None] = {}  # in order, each once
    claimed: set[int] = set()
    for number, raw in enumerate(raw_samples):
        names = columns if number == 0 else later_columns
        rows, other = _rows(text(raw.get("stdout")) or "", len(names), claims)
        t_s = seconds(raw.get("t_s"))
        for cells in rows:
            row: dict[str, object] = dict(zip(names, cells, strict=True))
            index = _claimed_index(row.get("index"), claims)
            if index is None:
                continue
            claimed.add(index)
            if index in per_gpu or len(per_gpu) < MAX_GPUS:
                per_gpu.setdefault(index, []).append(row)
                per_gpu_times.setdefault(index, []).append(t_s)
        for line in other + (text(raw.get("stderr")) or "").splitlines()[:MAX_MESSAGES]:
            match = _LOST_LINE.search(line[:500])
            if match and (match.group(1) in lost_bus or len(lost_bus) < MAX_GPUS):
                lost_bus[match.group(1)[:40]] = match.group(2).strip()[:200]
            elif line.strip() and len(messages) < MAX_MESSAGES:
                messages.setdefault(line.strip()[:500])
    if len(claimed) > MAX_GPUS:
        claims.over("GPUs", f"the node listed {len(claimed)} GPUs; only {MAX_GPUS} are read")
    gpus = [_gpu(i, per_gpu[i], per_gpu_times[i]) for i in sorted(per_gpu)]
    gpus += _lost_gpus(list(lost_bus), per_gpu)
    gpus.sort(key=lambda g: g.index)
    status, code = _smi_status(raw_samples, bool(gpus))
    hung = next((c for c in common["hung_calls"] if c.call in _GPU_CALLS), None)
    if hung is not None and not gpus:  # the GPUs' own call hung: no rows, and nothing "failed" to say
        status, messages = SmiStatus.HUNG, {hung.sentence: None}
    driver = next((short(rows[-1].get("driver_version")) for rows in per_gpu.values()), None)
    lost_text = [f"GPU {bus}: {why}" for bus, why in lost_bus.items()]
    return NodeReadings(
        source=source,
        driver_version=driver,
        cuda_version=short(doc.get("cuda_version")),
        cuda_version_from=short(doc.get("cuda_version_from")),
        smi_status=status,
        smi_message="; ".join(lost_text + list(messages))[:500] or None,
        smi_exit_code=code,
        gpus=tuple(gpus),
        sample_count=len(raw_samples),
        window_s=_window(raw_samples),
        **common,
    )


def _columns(fields: object) -> list[str]:
    """The reading each CSV column means (the table knows every --query-gpu spelling)."""
    return [str(_SMI_FIELDS.get(f[1], f[0])) for f in items(fields)[:len(_SMI_FIELDS) + len(READINGS)]
            if isinstance(f, list) and len(f) == 2 and all(isinstance(x, str) for x in f)]


_GPU_CALLS = ("nvidia-smi --query-gpu", "NVML")  # the calls that read the GPUs (collectors/gpudiag_node/probe.py)


def parse_hung(value: object) -> tuple[HungCall, ...]:
    """The document's ``hung`` list (the node's calls killed at their bound); malformed entries are dropped."""
    calls = []
    for entry in items(value)[:MAX_HUNG]:
        entry = mapping(entry)
        call, after_s = short(entry.get("call"), 80), seconds(entry.get("after_s"))
        if call and after_s is not None:
            calls.append(HungCall(call=call, after_s=after_s))
    return tuple(calls)


def _window(samples: Sequence[Mapping[str, object]]) -> float | None:
    times = [t for t in (seconds(s.get("t_s")) for s in samples) if t is not None]
    return max(times) - min(times) if len(times) > 1 else None


def _parse_nvml(nvml: Mapping[str, Any], common: Mapping[str, Any], claims: Claims) -> NodeReadings:
    """The NVML reader's part of the document (see collectors/gpudiag_node/nvml.py) → readings, same units."""
    gpu_list = claims.cap([g for g in items(nvml.get("gpus")) if isinstance(g, dict)], MAX_GPUS, "GPUs")
    statics = {_claimed_index(g.get("index"), claims): g for g in gpu_list}
    raw_samples = claims.cap([s for s in items(nvml.get("samples")) if isinstance(s, dict)], MAX_SAMPLES,
                             "samples")
    energy = {_index(e.get("index")): e for e in items(nvml.get("energy"))[:MAX_GPUS] if isinstance(e, dict)}
    rows: dict[int, list[dict[str, object]]] = {}
    times: dict[int, list[float | None]] = {}
    lost: dict[int, str] = {i: short(g.get("error"), 200) or "" for i, g in statics.items()
                            if i is not None and g.get("lost")}
    for raw in raw_samples:
        t_s = seconds(raw.get("t_s"))
        for row in claims.cap([r for r in items(raw.get("rows")) if isinstance(r, dict)], MAX_GPUS, "GPU rows"):
            index = _claimed_index(row.get("index"), claims)
            if index is None or (index not in rows and index not in lost and len(rows) + len(lost) >= MAX_GPUS):
                continue
            if row.get("lost"):
                lost[index] = short(row.get("error"), 200) or ""
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
            gpus.append(GpuReading(index=index, name=short(static.get("name")), uuid=short(static.get("uuid")),
                                   pci_bus_id=short(static.get("pci_bus_id")), lost=True))
    cuda = short(nvml.get("cuda_version"))
    return NodeReadings(
        source="nvml",
        driver_version=short(nvml.get("driver_version")),
        cuda_version=cuda,
        cuda_version_from="nvml" if cuda else None,
        smi_status=SmiStatus.OK if gpus else SmiStatus.NO_DEVICES,
        smi_message="; ".join(f"GPU {i}: {why}" for i, why in sorted(lost.items()))[:500] or None,
        gpus=with_gpm(tuple(gpus), mapping(nvml.get("gpm"))),
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
    ratio = Reading("ratio", (), None, 1.0, "number", True, "median", False)
    for line in dmon.splitlines():
        parts = line.split()
        if len(parts) != 2 + len(_DCGM_FIELDS) or parts[0] != "GPU" or not (parts[1].isascii() and parts[1].isdigit()):
            continue
        per_gpu = values.setdefault(int(parts[1]), {})
        for name, raw in zip(_DCGM_FIELDS, parts[2:], strict=True):
            number, _ = read_value(ratio, raw)
            if number is not None:
                per_gpu.setdefault(name, []).append(100.0 * number)
    return {index: {name: round(statistics.median(v), 1) for name, v in fields.items()}
            for index, fields in values.items()}


def with_dcgm(node: NodeReadings, dcgm: Mapping[str, object]) -> NodeReadings:
    """``node`` with DCGM's profiling readings on its GPUs, or the reason there are none."""
    if not dcgm:
        return node
    if not dcgm.get("available"):
        return dataclasses.replace(node, dcgm_unavailable=text(dcgm.get("why")) or "not available")
    per_gpu = parse_dcgm(text(dcgm.get("stdout")) or "")
    found: dict[int, dict[str, Any]] = {index: dict(values, sm_activity_from="dcgm")
                                        for index, values in per_gpu.items()}
    gpus = tuple(dataclasses.replace(g, **found.get(g.index, {})) for g in node.gpus)
    return dataclasses.replace(node, gpus=gpus)


def parse_probe_output(stdout: bytes, *, output_truncated: bool = False,
                       log_plan: LogPlan | None = None) -> NodeReadings:
    """Remote stdout → readings; raises :class:`ProbeFormatError` when it is not a probe document."""
    doc = load_document(stdout)
    return with_dcgm(parse_probe(doc, output_truncated=output_truncated, log_plan=log_plan),
                     mapping(doc.get("dcgm")))
