"""Builders for hand-made readings and reports, with sensible defaults, for any unit test to reuse.

Every builder takes keyword overrides for any field of the value it builds. Defaults describe a healthy,
busy H100 SXM node that answered: ``gpu()`` reads 100% utilization at 650 of 700 W, full clocks, PCIe 5x16.

    gpu(index=3, power_w=90.0)                      # one GpuReading
    host_report("gpu01", gpus=[gpu(index=i) for i in range(8)])
    host_report("gpu02", status=HostStatus.UNREACHABLE)   # no readings, a default error sentence
    sweep(host_report("gpu01"), host_report("gpu02"))

Import with ``from builders import gpu, host_report, sweep`` from any folder (pyproject.toml's ``pythonpath`` puts
``tests/unit`` on ``sys.path``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpudiag.model import (
    Finding,
    GpuReading,
    GpuSample,
    HostReport,
    HostStatus,
    NodeReadings,
    Severity,
    SweepReport,
    reasons_mask,
)

STARTED_AT = "2025-06-01T12:00:00Z"

# The error sentence a host that did not answer gets when the test does not give one.
DEFAULT_ERRORS: Mapping[HostStatus, str] = {
    HostStatus.PARTIAL: "the collector's output was cut at 1 MiB",
    HostStatus.UNREACHABLE: "could not connect: connection refused",
    HostStatus.TIMEOUT: "no answer within 30 s",
    HostStatus.AUTH_FAILED: "the server refused every key offered",
    HostStatus.HOST_KEY_REJECTED: "the host key does not match known_hosts",
    HostStatus.ERROR: "the collector failed",
}


def sample(**overrides: Any) -> GpuSample:
    """One GpuSample of a busy H100 (override any field)."""
    values: dict[str, Any] = {
        "t_s": 0.0,
        "utilization_pct": 100.0,
        "memory_utilization_pct": 45.0,
        "power_w": 650.0,
        "sm_clock_mhz": 1980.0,
        "clock_event_reasons_mask": 0,
        "temperature_c": 60.0,
        "pcie_gen": 5,
        "pcie_width": 16,
        "pstate": "P0",
    }
    values.update(overrides)
    return GpuSample(**values)


def gpu(**overrides: Any) -> GpuReading:
    """One GpuReading of a healthy, busy H100 SXM (override any field).

    ``uuid`` and ``pci_bus_id`` follow ``index`` unless given, so GPUs built with different indexes differ.
    """
    index = overrides.get("index", 0)
    values: dict[str, Any] = {
        "index": index,
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": f"GPU-00000000-0000-0000-0000-{index:012d}",
        "pci_bus_id": f"00000000:{0x18 + index:02X}:00.0",
        "compute_capability": "9.0",
        "sm": "SM90",
        "arch": "Hopper",
        "utilization_pct": 100.0,
        "memory_utilization_pct": 45.0,
        "power_w": 650.0,
        "enforced_power_limit_w": 700.0,
        "default_power_limit_w": 700.0,
        "sm_clock_mhz": 1980.0,
        "max_sm_clock_mhz": 1980.0,
        "clock_event_reasons_mask": 0,
        "temperature_c": 60.0,
        "pstate": "P0",
        "pcie_gen": 5,
        "pcie_gen_max": 5,
        "pcie_width": 16,
        "pcie_width_max": 16,
        "ecc_uncorrected": 0,
        "memory_used_mib": 40_000.0,
        "memory_total_mib": 81_559.0,
        "lost": False,
        "samples": (),
    }
    reasons = overrides.pop("clock_event_reasons", None)  # names, for readable tests: made the mask here
    values.update(overrides)
    if reasons is not None:
        values["clock_event_reasons_mask"] = reasons_mask(reasons)
    values["samples"] = tuple(values["samples"])
    return GpuReading(**values)


def node(gpus: Iterable[GpuReading] | None = None, **overrides: Any) -> NodeReadings:
    """NodeReadings holding ``gpus`` (default: one ``gpu()``); override any other field."""
    values: dict[str, Any] = {
        "source": "nvidia-smi",
        "hostname": "gpu01",
        "kernel": "6.8.0-60-generic",
        "driver_version": "570.133.20",
        "cuda_version": "12.8",
        "gpus": tuple(gpus) if gpus is not None else (gpu(),),
        "sample_count": 5,
        "window_s": 4.0,
    }
    values.update(overrides)
    values["problems"] = tuple(values.get("problems", ()))
    return NodeReadings(**values)


def finding(**overrides: Any) -> Finding:
    """One Finding; defaults to a critical BUSY_LOW_POWER on gpu01, GPU 0 (override any field)."""
    values: dict[str, Any] = {
        "code": "BUSY_LOW_POWER",
        "severity": Severity.CRITICAL,
        "host": "gpu01",
        "gpu": 0,
        "summary": "GPU 0 reads 100% utilization but draws 13% of its 700 W limit.",
        "evidence": {"utilization_pct": 100.0, "power_w": 90.0, "enforced_power_limit_w": 700.0},
    }
    values.update(overrides)
    return Finding(**values)


def host_report(
    name: str,
    gpus: Iterable[GpuReading] | None = None,
    findings: Iterable[Finding] = (),
    status: HostStatus = HostStatus.OK,
    **overrides: Any,
) -> HostReport:
    """One HostReport named ``name``.

    A host that answered (ok, partial) gets readings holding ``gpus`` (default: one ``gpu()``) with its
    hostname set to ``name``; one that did not gets no readings and a default error sentence for its
    status. ``readings``, ``error``, ``address``, ``duration_s`` may be overridden.
    """
    readings: NodeReadings | None = None
    if status.answered:
        readings = node(gpus, hostname=name)
    elif gpus is not None:
        raise ValueError(f"host {name} did not answer ({status.value}), so it has no GPUs")
    values: dict[str, Any] = {
        "host": name,
        "address": None,
        "status": status,
        "error": DEFAULT_ERRORS.get(status),
        "readings": readings,
        "findings": tuple(findings),
        "duration_s": 2.5,
    }
    values.update(overrides)
    return HostReport(**values)


def sweep(*hosts: HostReport, **overrides: Any) -> SweepReport:
    """A SweepReport of ``hosts`` in the order given (``started_at``, ``duration_s`` may be overridden)."""
    values: dict[str, Any] = {"started_at": STARTED_AT, "duration_s": 6.5, "hosts": tuple(hosts)}
    values.update(overrides)
    return SweepReport(**values)
