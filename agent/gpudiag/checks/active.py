"""Verdicts on the active test (``--active``, issue 31). Pure.

Per host (:func:`active_test`, one of the node checks): the test could not run on the node
(``ACTIVE_TEST_NOT_RUN``, or ``CUDA_INIT_FAILED`` when the driver refused CUDA itself), a GPU's test did not
finish in its budget (``ACTIVE_TEST_TIMEOUT``) or failed in a driver call (``ACTIVE_TEST_FAILED``), and an
Xid or an uncorrected ECC error that came during the test (``ACTIVE_TEST_ERRORS``: caused by the test).
A GPU skipped because it was in use is no finding: the reports say it was skipped and why.

Across the sweep (:func:`slow_gpus`, run with the fleet checks once every host is in): a GPU whose figure is
clearly below both what its model should reach (:mod:`gpudiag.checks.active_figures`) and the median of the
same model's other GPUs in the sweep is ``SLOW_COMPUTE``, ``SLOW_MEMORY`` or ``SLOW_PCIE``. Below both, so
that a table figure a whole fleet cannot reach (a VM's PCIe, a power-capped fleet) flags nobody, and one
odd GPU among slow peers is not judged by peers alone. With no other GPU of its model in the sweep, the
table decides; with no table row, the peers do (at least :data:`MIN_PEERS`).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from dataclasses import dataclass

from gpudiag.checks.actions import with_action
from gpudiag.checks.active_figures import expected
from gpudiag.model import Finding, GpuReading, NodeReadings, Severity, SweepReport
from gpudiag.model.active import FIGURE_UNITS, ActiveGpu, ActiveState
from gpudiag.model.settings import CheckSettings

PEER_SHARE = 0.8  # clearly below the peers: under this share of their median
MIN_PEERS = 2  # without a table row, the fewest other GPUs of the model whose median is trusted


def active_test(host: str, node: NodeReadings, settings: CheckSettings) -> Iterator[Finding]:
    """The node's active-test findings: could not run, timed out, failed, errors provoked."""
    test = node.active
    if test is None:
        return
    if test.error and not any(g.state is ActiveState.TESTED for g in test.gpus):
        if test.error.startswith("cuInit"):
            yield Finding(code="CUDA_INIT_FAILED", severity=Severity.CRITICAL, host=host, gpu=None,
                          summary=f"the CUDA driver API does not start on this node ({test.error}) while the GPUs "
                                  "are listed: CUDA programs cannot run here",
                          evidence={"error": test.error})
        else:
            yield Finding(code="ACTIVE_TEST_NOT_RUN", severity=Severity.UNKNOWN, host=host, gpu=None,
                          summary=f"the active test could not run: {test.error}", evidence={"error": test.error})
    for gpu in test.gpus:
        if gpu.state is ActiveState.TIMED_OUT:
            yield Finding(code="ACTIVE_TEST_TIMEOUT", severity=Severity.CRITICAL, host=host, gpu=gpu.gpu,
                          summary=f"the active test did not finish in its {test.budget_s or 0:g} s budget and was "
                                  "ended: a healthy GPU finishes it in a few seconds",
                          evidence={"budget_s": test.budget_s, "why": gpu.why, **_reached(gpu)})
        elif gpu.state is ActiveState.FAILED:
            yield Finding(code="ACTIVE_TEST_FAILED", severity=Severity.CRITICAL, host=host, gpu=gpu.gpu,
                          summary=f"the active test failed: {gpu.why}",
                          evidence={"error": gpu.why, **_reached(gpu)})
        if gpu.xids or gpu.ecc_uncorrected_rise:
            said = [f"Xid {', '.join(str(x) for x in gpu.xids)}"] if gpu.xids else []
            said += [f"{gpu.ecc_uncorrected_rise} uncorrected ECC error(s)"] if gpu.ecc_uncorrected_rise else []
            yield Finding(code="ACTIVE_TEST_ERRORS", severity=Severity.CRITICAL, host=host, gpu=gpu.gpu,
                          summary=f"raised {' and '.join(said)} under the active test's load (caused by the "
                                  "test): the GPU fails under load",
                          evidence={"xids": gpu.xids, "ecc_uncorrected_rise": gpu.ecc_uncorrected_rise,
                                    "ecc_corrected_rise": gpu.ecc_corrected_rise})


def _reached(gpu: ActiveGpu) -> dict[str, object]:
    return {name: value for name, value in gpu.figures.items() if value is not None}


# figure -> (code, what it measures in words)
SLOW = {"compute_tflops": ("SLOW_COMPUTE", "computes at"),
        "memory_copy_gb_s": ("SLOW_MEMORY", "copies memory at"),
        "pcie_h2d_gb_s": ("SLOW_PCIE", "moves host-to-device at"),
        "pcie_d2h_gb_s": ("SLOW_PCIE", "moves device-to-host at")}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Tested:
    host: str
    reading: GpuReading
    result: ActiveGpu

    @property
    def model(self) -> str:
        return self.reading.name or "?"


def _tested(report: SweepReport) -> list[_Tested]:
    out = []
    for host in report.hosts:
        test = host.readings.active if host.readings is not None else None
        for reading in host.gpus if test is not None else ():
            result = test.of(reading.index) if test is not None else None
            if result is not None and result.state is ActiveState.TESTED:
                out.append(_Tested(host=host.host, reading=reading, result=result))
    return out


def slow_gpus(report: SweepReport) -> dict[str, tuple[Finding, ...]]:
    """host -> its SLOW_* findings, judged over the whole sweep (one per GPU and code: the slower direction of
    PCIe when both are slow)."""
    tested = _tested(report)
    out: dict[str, list[Finding]] = {}
    for one in tested:
        said: set[str] = set()
        for figure, unit, _ in FIGURE_UNITS:
            value = getattr(one.result, figure)
            code = SLOW[figure][0]
            if value is None or code in said:
                continue
            peers = [v for o in tested if o.model == one.model and o is not one
                     and (v := getattr(o.result, figure)) is not None]
            finding = _judge(one, figure, unit, value, peers)
            if finding is not None:
                said.add(code)
                out.setdefault(one.host, []).append(finding)
    return {host: tuple(with_action(f) for f in findings) for host, findings in out.items()}


def _judge(one: _Tested, figure: str, unit: str, value: float, peers: list[float]) -> Finding | None:
    reading = one.reading
    table = expected(figure, reading.name, reading.pcie_gen_max, reading.pcie_width_max)
    median = statistics.median(peers) if peers else None
    below_table = table is not None and value < table[0]
    below_peers = median is not None and value < PEER_SHARE * median
    if table is not None and median is not None:
        slow = below_table and below_peers
    elif table is not None:
        slow = below_table
    else:
        slow = below_peers and len(peers) >= MIN_PEERS
    if not slow:
        return None
    code, verb = SLOW[figure]
    model = one.model.removeprefix("NVIDIA ")
    parts = [f"{verb} {value:g} {unit}"]
    if table is not None:
        parts.append(f"where a healthy {model} reaches {table[0]:g} ({table[1]:g} published)")
    if median is not None:
        parts.append(f"and its {len(peers)} peer(s) of that model in this sweep reach {median:g} (median)")
    else:
        parts.append("(no other GPU of this model in the sweep)")
    evidence: dict[str, object] = {"figure": figure, "value": value, "unit": unit, "gpu_model": one.model,
                                   "expected": table[0] if table else None, "published": table[1] if table else None,
                                   "fleet_median": median, "peers": len(peers)}
    result = one.result
    if code == "SLOW_COMPUTE":
        evidence.update(sm_clock_mhz=result.compute_sm_clock_mhz, max_sm_clock_mhz=reading.max_sm_clock_mhz,
                        power_w=result.compute_power_w, enforced_power_limit_w=reading.enforced_power_limit_w,
                        clock_event_reasons=result.compute_clock_event_reasons)
        why = ", ".join(result.compute_clock_event_reasons)
        if result.compute_sm_clock_mhz is not None:
            parts.append(f"- SM clock {result.compute_sm_clock_mhz:g} MHz under load"
                         f"{f' of {reading.max_sm_clock_mhz:g}' if reading.max_sm_clock_mhz else ''}"
                         f"{f' ({why})' if why else ''}; check its power delivery and cooling")
    elif code == "SLOW_PCIE":
        evidence.update(pcie_gen_under_load=result.pcie_gen_under_load,
                        pcie_width_under_load=result.pcie_width_under_load, pcie_gen_max=reading.pcie_gen_max,
                        pcie_width_max=reading.pcie_width_max)
        if result.pcie_gen_under_load is not None:
            parts.append(f"- link Gen{result.pcie_gen_under_load} x{result.pcie_width_under_load} under load"
                         f" (max Gen{reading.pcie_gen_max} x{reading.pcie_width_max}); reseat the card or riser")
    else:
        parts.append("- its memory is degraded: drain it and run the vendor's diagnostics (dcgmi diag -r 3)")
    return Finding(code=code, severity=Severity.WARNING, host=one.host, gpu=reading.index, summary=" ".join(parts),
                   evidence=evidence)
