"""The sweep as a JSON document (schema ``gpudiag.sweep/1``), and back.

``to_document`` turns a :class:`~gpudiag.model.SweepReport` into plain JSON values with a fixed key order;
``render_json`` writes it as text; ``from_document`` rebuilds the report, so several sweeps' JSON outputs
can be merged later. The document carries every field of the model plus a few derived values
(``power_pct_of_limit`` and the ``summary`` block), which ``from_document`` ignores.

Evidence values are written as JSON (tuples become lists, enums their value, anything else its ``str``);
``from_document`` reads JSON lists back as tuples, the model's collection type. Non-finite floats (NaN,
infinity) are not JSON: they are written as ``null``, i.e. "not reported".
"""

from __future__ import annotations

import enum
import json
import math
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from gpudiag.model import (
    SWEEP_SCHEMA,
    Finding,
    GpuReading,
    GpuSample,
    HostReport,
    HostStatus,
    NodeReadings,
    Severity,
    SmiStatus,
    SweepReport,
)
from gpudiag.report.json_logs import context_document, context_from, logs_document, logs_from

UNKNOWN_SM = "unknown"  # the gpus_by_sm key for GPUs whose SM family was not reported


def power_pct_of_limit(gpu: GpuReading) -> float | None:
    """Power draw as a percentage of the enforced power limit, one decimal; None if either is missing."""
    if gpu.power_w is None or not gpu.power_limit_w:
        return None
    return round(gpu.power_w / gpu.power_limit_w * 100.0, 1)


# ---------------------------------------------------------------------------------------------- counts


def _natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort "SM90" before "SM100": digit runs compare as numbers."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part)


def hosts_by_status(report: SweepReport) -> dict[str, int]:
    """Every :class:`HostStatus` value (in declaration order, zeros included) → number of hosts."""
    counts = Counter(h.status for h in report.hosts)
    return {status.value: counts.get(status, 0) for status in HostStatus}


def gpus_by_sm(report: SweepReport) -> dict[str, int]:
    """SM family ("SM90") → number of GPUs, families in numeric order, ``"unknown"`` last."""
    counts = Counter(g.sm or UNKNOWN_SM for h in report.hosts for g in h.gpus)
    known = sorted((sm for sm in counts if sm != UNKNOWN_SM), key=_natural_key)
    order = known + ([UNKNOWN_SM] if UNKNOWN_SM in counts else [])
    return {sm: counts[sm] for sm in order}


def findings_by_code(report: SweepReport) -> dict[str, int]:
    """Finding code → count, codes in alphabetical order."""
    counts = Counter(f.code for f in report.findings)
    return {code: counts[code] for code in sorted(counts)}


def findings_by_severity(report: SweepReport) -> dict[str, int]:
    """Every severity label (ok, warning, critical, unknown; zeros included) → count."""
    counts = Counter(f.severity for f in report.findings)
    return {severity.label: counts.get(severity, 0) for severity in Severity}


def summarize(report: SweepReport) -> dict[str, Any]:
    """The document's ``summary`` block."""
    return {
        "hosts": len(report.hosts),
        "hosts_by_status": hosts_by_status(report),
        "gpus": sum(len(h.gpus) for h in report.hosts),
        "gpus_by_sm": gpus_by_sm(report),
        "findings_by_code": findings_by_code(report),
        "findings_by_severity": findings_by_severity(report),
        "exit_code": report.exit_code,
    }


# -------------------------------------------------------------------------------------------- writing


def _jsonable(value: object) -> Any:
    """``value`` as plain JSON values (see the module docstring for the conversions)."""
    # Enums first: HostStatus is a str and Severity an int, and both should be written as their value.
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return str(value)


def _sample_document(sample: GpuSample) -> dict[str, Any]:
    return {
        "t_s": sample.t_s,
        "utilization_pct": sample.utilization_pct,
        "memory_utilization_pct": sample.memory_utilization_pct,
        "power_w": sample.power_w,
        "sm_clock_mhz": sample.sm_clock_mhz,
        "clock_event_reasons_mask": sample.clock_event_reasons_mask,
        "temperature_c": sample.temperature_c,
        "pcie_gen": sample.pcie_gen,
        "pcie_width": sample.pcie_width,
        "pstate": sample.pstate,
    }


def _gpu_document(gpu: GpuReading) -> dict[str, Any]:
    return {
        "index": gpu.index,
        "name": gpu.name,
        "uuid": gpu.uuid,
        "pci_bus_id": gpu.pci_bus_id,
        "compute_capability": gpu.compute_capability,
        "sm": gpu.sm,
        "arch": gpu.arch,
        "utilization_pct": gpu.utilization_pct,
        "memory_utilization_pct": gpu.memory_utilization_pct,
        "power_w": gpu.power_w,
        "energy_power_w": gpu.energy_power_w,
        "power_limit_w": gpu.power_limit_w,
        "power_pct_of_limit": power_pct_of_limit(gpu),
        "default_power_limit_w": gpu.default_power_limit_w,
        "sm_clock_mhz": gpu.sm_clock_mhz,
        "max_sm_clock_mhz": gpu.max_sm_clock_mhz,
        "clock_event_reasons": list(gpu.clock_event_reasons),
        "temperature_c": gpu.temperature_c,
        "pstate": gpu.pstate,
        "pcie_gen": gpu.pcie_gen,
        "pcie_gen_max": gpu.pcie_gen_max,
        "pcie_width": gpu.pcie_width,
        "pcie_width_max": gpu.pcie_width_max,
        "ecc_uncorrected": gpu.ecc_uncorrected,
        "memory_used_mib": gpu.memory_used_mib,
        "memory_total_mib": gpu.memory_total_mib,
        "lost": gpu.lost,
        "sm_active_pct": gpu.sm_active_pct,
        "sm_occupancy_pct": gpu.sm_occupancy_pct,
        "tensor_active_pct": gpu.tensor_active_pct,
        "dram_active_pct": gpu.dram_active_pct,
        "samples": [_sample_document(s) for s in gpu.samples],
    }


def _node_document(node: NodeReadings) -> dict[str, Any]:
    return {
        "hostname": node.hostname,
        "kernel": node.kernel,
        "driver_version": node.driver_version,
        "cuda_version": node.cuda_version,
        "cuda_version_from": node.cuda_version_from,
        "source": node.source,
        "nvml_unavailable": node.nvml_unavailable,
        "dcgm_unavailable": node.dcgm_unavailable,
        "smi_status": node.smi_status.value,
        "smi_message": node.smi_message,
        "smi_exit_code": node.smi_exit_code,
        "sample_count": node.sample_count,
        "window_s": node.window_s,
        "output_truncated": node.output_truncated,
        "problems": list(node.problems),
        "logs": logs_document(node.logs),
        "context": context_document(node.context),
    }


def _finding_document(finding: Finding) -> dict[str, Any]:
    return {
        "code": finding.code,
        "severity": finding.severity.label,
        "host": finding.host,
        "gpu": finding.gpu,
        "summary": finding.summary,
        "evidence": dict(finding.evidence),
    }


def _host_document(host: HostReport) -> dict[str, Any]:
    return {
        "host": host.host,
        "address": host.address,
        "status": host.status.value,
        "error": host.error,
        "duration_s": host.duration_s,
        "node": _node_document(host.readings) if host.readings is not None else None,
        "gpus": [_gpu_document(g) for g in host.gpus],
        "findings": [_finding_document(f) for f in host.findings],
    }


def to_document(report: SweepReport) -> dict[str, Any]:
    """The report as a ``gpudiag.sweep/1`` document: plain JSON values, keys in schema order."""
    document = {
        "schema": SWEEP_SCHEMA,
        "started_at": report.started_at,
        "duration_s": report.duration_s,
        "hosts": [_host_document(h) for h in report.hosts],
        "summary": summarize(report),
    }
    result: dict[str, Any] = _jsonable(document)
    return result


def render_json(report: SweepReport) -> str:
    """The report as indented JSON text (no trailing newline)."""
    return json.dumps(to_document(report), indent=2, allow_nan=False)


# -------------------------------------------------------------------------------------------- reading


def _tuples(value: Any) -> Any:
    """JSON lists back to tuples, recursively (the model's collection type)."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _sample_from(doc: Mapping[str, Any]) -> GpuSample:
    return GpuSample(
        t_s=_float(doc.get("t_s")),
        utilization_pct=_float(doc.get("utilization_pct")),
        memory_utilization_pct=_float(doc.get("memory_utilization_pct")),
        power_w=_float(doc.get("power_w")),
        sm_clock_mhz=_float(doc.get("sm_clock_mhz")),
        clock_event_reasons_mask=_int(doc.get("clock_event_reasons_mask")),
        temperature_c=_float(doc.get("temperature_c")),
        pcie_gen=_int(doc.get("pcie_gen")),
        pcie_width=_int(doc.get("pcie_width")),
        pstate=doc.get("pstate"),
    )


def _gpu_from(doc: Mapping[str, Any]) -> GpuReading:
    return GpuReading(
        index=int(doc["index"]),
        name=doc.get("name"),
        uuid=doc.get("uuid"),
        pci_bus_id=doc.get("pci_bus_id"),
        compute_capability=doc.get("compute_capability"),
        sm=doc.get("sm"),
        arch=doc.get("arch"),
        utilization_pct=_float(doc.get("utilization_pct")),
        memory_utilization_pct=_float(doc.get("memory_utilization_pct")),
        power_w=_float(doc.get("power_w")),
        energy_power_w=_float(doc.get("energy_power_w")),
        power_limit_w=_float(doc.get("power_limit_w")),
        default_power_limit_w=_float(doc.get("default_power_limit_w")),
        sm_clock_mhz=_float(doc.get("sm_clock_mhz")),
        max_sm_clock_mhz=_float(doc.get("max_sm_clock_mhz")),
        clock_event_reasons=tuple(str(r) for r in doc.get("clock_event_reasons") or ()),
        temperature_c=_float(doc.get("temperature_c")),
        pstate=doc.get("pstate"),
        pcie_gen=_int(doc.get("pcie_gen")),
        pcie_gen_max=_int(doc.get("pcie_gen_max")),
        pcie_width=_int(doc.get("pcie_width")),
        pcie_width_max=_int(doc.get("pcie_width_max")),
        ecc_uncorrected=_int(doc.get("ecc_uncorrected")),
        memory_used_mib=_float(doc.get("memory_used_mib")),
        memory_total_mib=_float(doc.get("memory_total_mib")),
        lost=bool(doc.get("lost", False)),
        sm_active_pct=_float(doc.get("sm_active_pct")),
        sm_occupancy_pct=_float(doc.get("sm_occupancy_pct")),
        tensor_active_pct=_float(doc.get("tensor_active_pct")),
        dram_active_pct=_float(doc.get("dram_active_pct")),
        samples=tuple(_sample_from(s) for s in doc.get("samples") or ()),
    )


def _node_from(doc: Mapping[str, Any], gpus: tuple[GpuReading, ...]) -> NodeReadings:
    return NodeReadings(
        source=doc.get("source", "nvidia-smi"),
        nvml_unavailable=doc.get("nvml_unavailable"),
        dcgm_unavailable=doc.get("dcgm_unavailable"),
        hostname=doc.get("hostname"),
        kernel=doc.get("kernel"),
        driver_version=doc.get("driver_version"),
        cuda_version=doc.get("cuda_version"),
        cuda_version_from=doc.get("cuda_version_from"),
        smi_status=SmiStatus(doc.get("smi_status", SmiStatus.OK.value)),
        smi_message=doc.get("smi_message"),
        smi_exit_code=_int(doc.get("smi_exit_code")),
        gpus=gpus,
        sample_count=int(doc.get("sample_count", 0)),
        window_s=_float(doc.get("window_s")),
        output_truncated=bool(doc.get("output_truncated", False)),
        problems=tuple(str(p) for p in doc.get("problems") or ()),
        logs=logs_from(doc.get("logs")),
        context=context_from(doc.get("context")),
    )


_SEVERITY_BY_LABEL = {severity.label: severity for severity in Severity}


def _finding_from(doc: Mapping[str, Any]) -> Finding:
    label = doc["severity"]
    if label not in _SEVERITY_BY_LABEL:
        raise ValueError(f"unknown severity {label!r} (expected one of {', '.join(_SEVERITY_BY_LABEL)})")
    return Finding(
        code=doc["code"],
        severity=_SEVERITY_BY_LABEL[label],
        host=doc["host"],
        gpu=_int(doc.get("gpu")),
        summary=doc["summary"],
        evidence=_tuples(dict(doc.get("evidence") or {})),
    )


def _host_from(doc: Mapping[str, Any]) -> HostReport:
    gpus = tuple(_gpu_from(g) for g in doc.get("gpus") or ())
    node = doc.get("node")
    if node is None and gpus:
        raise ValueError(f"host {doc['host']!r} lists GPUs but has no node object")
    return HostReport(
        host=doc["host"],
        address=doc.get("address"),
        status=HostStatus(doc["status"]),
        error=doc.get("error"),
        readings=_node_from(node, gpus) if node is not None else None,
        findings=tuple(_finding_from(f) for f in doc.get("findings") or ()),
        duration_s=_float(doc.get("duration_s")),
    )


def from_document(doc: Mapping[str, Any]) -> SweepReport:
    """Rebuild the report from a ``gpudiag.sweep/1`` document (derived values are ignored).

    Raises ``ValueError`` with a one-line message when the schema is not ``gpudiag.sweep/1`` or the
    document is malformed.
    """
    schema = doc.get("schema") if isinstance(doc, Mapping) else None
    if schema != SWEEP_SCHEMA:
        raise ValueError(f"not a {SWEEP_SCHEMA} document (schema is {schema!r})")
    try:
        return SweepReport(
            started_at=str(doc["started_at"]),
            duration_s=float(doc["duration_s"]),
            hosts=tuple(_host_from(h) for h in doc["hosts"]),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        detail = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc).splitlines()[0]
        raise ValueError(f"malformed {SWEEP_SCHEMA} document: {detail}") from exc
