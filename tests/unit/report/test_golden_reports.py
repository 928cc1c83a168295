"""Every report format of one fixed sweep, compared byte for byte with its golden file in ``tests/data/golden/``:
the JSON document (``sweep.json``), the Prometheus text (``sweep.prom``), the HTML page (``sweep.html``) and
the table (``sweep_table.txt``; ``table_basic.txt`` beside it belongs to ``test_report_table.py``).

The sweep is built here, field by field (fixed timestamps, no builders' defaults, the findings from the real
checks under thresholds that differ from the defaults), so a golden file changes only when a format does.
After an intended change to a format, rewrite every golden file with the one command below and review the
diff (``git diff tests/data/golden``) before committing it:

    GPUDIAG_UPDATE_GOLDEN=1 python3 -m pytest -q tests/unit -k golden
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest

from gpudiag.checks import evaluate
from gpudiag.model import (
    CheckSettings,
    GpuReading,
    GpuSample,
    GroupNote,
    HostReport,
    HostStatus,
    JobGpu,
    JobView,
    NodeReadings,
    Severity,
    SweepReport,
    UnreachableReason,
)
from gpudiag.report import OutputFormat, ReportView, render
from gpudiag.report.prometheus import render_prometheus

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "golden"
UPDATE = os.environ.get("GPUDIAG_UPDATE_GOLDEN") == "1"

# Not the defaults (low_power_pct 60): the JSON's settings block, the evidence and the HTML's shaded region
# must all say the run's own thresholds.
SETTINGS = CheckSettings(low_power_pct=40.0, busy_utilization_pct=85.0)


H100 = GpuReading(
    index=0, name="NVIDIA H100 80GB HBM3", compute_capability="9.0", sm="SM90", arch="Hopper",
    enforced_power_limit_w=700.0, default_power_limit_w=700.0, max_sm_clock_mhz=1980.0, pcie_gen_max=5,
    pcie_width_max=16, ecc_uncorrected=0, memory_total_mib=81559.0, utilization_pct=100.0,
    memory_utilization_pct=45.0, power_w=652.3, power_instant_w=655.0, sm_clock_mhz=1980.0, clock_event_reasons_mask=0,
    temperature_c=61.0, pstate="P0", pcie_gen=5, pcie_width=16, memory_used_mib=70312.0, energy_power_w=650.25)


def _h100(index: int, **changes: Any) -> GpuReading:
    return dataclasses.replace(H100, index=index, uuid=f"GPU-1100000{index}-0000-0000-0000-000000000000",
                               pci_bus_id=f"00000000:{0x18 + index:02X}:00.0", **changes)


def _samples(power_w: float, reasons: int = 0) -> tuple[GpuSample, ...]:
    return tuple(GpuSample(t_s=t, utilization_pct=100.0, memory_utilization_pct=12.0, power_w=power_w + t,
                           power_instant_w=power_w, sm_clock_mhz=1755.0, clock_event_reasons_mask=reasons,
                           temperature_c=58.0, pstate="P0", pcie_gen=5, pcie_width=16, memory_used_mib=60000.0)
                 for t in (0.0, 0.5))


def _host(name: str, gpus: tuple[GpuReading, ...]) -> HostReport:
    readings = NodeReadings(source="nvml", hostname=name, kernel="6.8.0-45-generic", driver_version="580.159.04",
                            cuda_version="13.0", cuda_version_from="libcuda", gpus=gpus, sample_count=2,
                            window_s=0.5)
    return HostReport(host=name, address=f"10.0.0.{len(name)}", status=HostStatus.OK, readings=readings,
                      findings=evaluate(name, HostStatus.OK, None, readings, SETTINGS), duration_s=1.25)


def golden_report() -> SweepReport:
    """Three hosts: an H100 node with one GPU busy at low power (energy counter, a power cap active), an RTX
    PRO node whose power limit was lowered and whose PCIe link runs narrow, and one that refused SSH; two jobs
    (one waiting on the host that refused, one quiet) and a group's note."""
    starved = _h100(1, utilization_pct=100.0, memory_utilization_pct=12.0, power_w=201.0, power_instant_w=199.5,
                    energy_power_w=None, sm_clock_mhz=1755.0, clock_event_reasons_mask=0x4,
                    samples=_samples(200.5, reasons=0x4))
    rtx = GpuReading(index=0, name="NVIDIA RTX PRO 6000 Blackwell Server Edition",
                     uuid="GPU-22000000-0000-0000-0000-000000000000", pci_bus_id="00000000:2B:00.0",
                     compute_capability="12.0", sm="SM120", arch="Blackwell (RTX)", enforced_power_limit_w=450.0,
                     default_power_limit_w=600.0, max_sm_clock_mhz=2430.0, pcie_gen_max=5, pcie_width_max=16,
                     utilization_pct=97.0, memory_utilization_pct=30.0, power_w=433.3, sm_clock_mhz=2400.0,
                     temperature_c=70.0, pstate="P0", pcie_gen=5, pcie_width=8)
    down = "could not connect: connection refused"
    waiting = JobGpu(host="gpu-a01", gpu=1, state="waiting", utilization_pct=100.0, power_pct_of_limit=28.6,
                     sm_clock_mhz=1755.0)
    job = JobView(job="job 81723", user="alice", hosts=("gpu-a01", "gpu-c01"),
                  gpus=(waiting, JobGpu(host="gpu-c01", gpu=None, state="unanswered")), utilization_pct=100.0,
                  power_pct_of_limit=28.6, verdict="waits on gpu-c01", code="JOB_WAITS_ON", severity=Severity.WARNING,
                  allocated_gpus=2, started_at="2026-01-02T01:00:00")
    quiet = JobView(job="docker 3f2a9c1b0e4d", user=None, hosts=("gpu-b01",),
                    gpus=(JobGpu(host="gpu-b01", gpu=0, state="computing", utilization_pct=97.0,
                                 power_pct_of_limit=96.3),), utilization_pct=97.0, power_pct_of_limit=96.3)
    note = GroupNote(group="rack7", kind="versions split", hosts=4,
                     summary="rack7: no version has a clear majority - driver on its 8x NVIDIA H100 80GB HBM3 hosts: "
                             "580.159.04 on gpu-a[01-02], 570.133.20 on gpu-a[03-04]; settle it on one, or say what "
                             "it should run (--expect)")
    return SweepReport(
        started_at="2026-01-02T03:04:05+00:00", duration_s=2.5, settings=SETTINGS, jobs=(job, quiet), notes=(note,),
        hosts=(_host("gpu-a01", (_h100(0), starved)),
               _host("gpu-b01", (rtx,)),
               HostReport(host="gpu-c01", address="10.0.0.9", status=HostStatus.UNREACHABLE, error=down,
                          unreachable_reason=UnreachableReason.REFUSED,
                          findings=evaluate("gpu-c01", HostStatus.UNREACHABLE, down, None, SETTINGS,
                                            unreachable_reason=UnreachableReason.REFUSED))))


def _texts() -> dict[str, str]:
    report = golden_report()
    return {
        "sweep.json": render(report, OutputFormat.JSON) + "\n",
        "sweep.prom": render_prometheus(report),
        "sweep.html": render(report, OutputFormat.HTML) + "\n",
        "sweep_table.txt": render(report, OutputFormat.TABLE, ReportView(width=120)),
    }


@pytest.mark.parametrize("name", sorted(_texts()))
def test_golden_report(name: str) -> None:
    text = _texts()[name]
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.read_bytes() == text.encode("utf-8"), f"{name} differs: see this module's docstring"


def test_the_golden_sweep_has_what_the_formats_must_show() -> None:
    """The fixed sweep is worth its golden files: a finding decided by the run's own threshold."""
    report = golden_report()
    codes = sorted(f.code for f in report.findings)
    assert codes == ["BUSY_LOW_POWER", "HOST_UNREACHABLE", "PCIE_LINK_DEGRADED", "POWER_LIMIT_REDUCED"]
    (busy,) = [f for f in report.findings if f.code == "BUSY_LOW_POWER"]
    assert busy.evidence["low_power_pct"] == 40.0 and busy.evidence["pct_of_limit"] == 28.7
