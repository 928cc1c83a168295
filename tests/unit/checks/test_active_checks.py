"""The active test's verdicts (gpudiag.checks.active) on the H200's recorded figures
(tests/data/h200_580.159_active): quiet on the H200's own, SLOW_* on a slowed GPU among normal peers, and the
node-level findings (could not run, cuInit, timeout, failure, errors under load)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from builders import gpu, host_report, node, sweep

from gpudiag.checks import CheckSettings, evaluate
from gpudiag.checks.active import active_test, slow_gpus
from gpudiag.checks.active_figures import expected, pcie_gb_s, published
from gpudiag.checks.fleet import with_fleet_findings
from gpudiag.collect.parse import parse_probe
from gpudiag.model import Action, Finding, HostStatus, Severity, SweepReport, reasons_mask
from gpudiag.model.active import ActiveGpu, ActiveState, ActiveTest

DATA = Path(__file__).resolve().parents[2] / "data" / "h200_580.159_active"


def recorded() -> tuple[ActiveGpu, ...]:
    """The H200's own results: the sweep's and the capture's three idle runs, as parsed."""
    docs = [json.loads((DATA / name).read_text()) for name in
            ("probe_active.json", "capture_idle_1.json", "capture_idle_2.json", "capture_idle_3.json")]
    out = []
    for doc in docs:
        readings = parse_probe(doc)
        assert readings.active is not None
        out.extend(readings.active.gpus)
    return tuple(out)


H200 = recorded()[0]
H200_GPU = {"name": "NVIDIA H200", "max_sm_clock_mhz": 1980.0, "enforced_power_limit_w": 700.0, "pcie_gen_max": 5,
            "pcie_width_max": 16, "utilization_pct": 0.0}


def fleet(results: list[ActiveGpu], hosts: int = 1) -> SweepReport:
    """``hosts`` nodes of len(results) H200s each, every node's GPU i with result i."""
    reports = []
    for h in range(hosts):
        gpus = [gpu(index=i, **H200_GPU) for i in range(len(results))]
        test = ActiveTest(budget_s=10.0, elapsed_s=3.9, gpus=tuple(dataclasses.replace(r, gpu=i)
                                                                   for i, r in enumerate(results)))
        reports.append(host_report(f"gpu{h:02d}", readings=node(gpus, hostname=f"gpu{h:02d}", active=test)))
    return sweep(*reports)


def test_the_recorded_figures_are_the_h200s() -> None:
    for result in recorded():
        assert result.state is ActiveState.TESTED
        assert 62.0 <= (result.compute_tflops or 0) <= 63.0 and result.compute_sm_clock_mhz == 1980.0
        assert 4200 <= (result.memory_copy_gb_s or 0) <= 4300
        assert 54.0 <= (result.pcie_h2d_gb_s or 0) <= 56.0 and 54.0 <= (result.pcie_d2h_gb_s or 0) <= 56.0
        assert (result.pcie_gen_under_load, result.pcie_width_under_load) == (5, 16)
        assert result.xids == () and result.ecc_uncorrected_rise == 0


def test_the_table_matches_the_h200_and_its_published_figures() -> None:
    row = published("NVIDIA H200")
    assert row is not None and (row.fp32_tflops, row.memory_gb_s, row.pcie_gen) == (67.0, 4800.0, 5)
    assert published("NVIDIA H100 NVL") is not None and published("NVIDIA H100 NVL").model == "H100 NVL"  # type: ignore[union-attr]
    assert published("NVIDIA A100-SXM4-80GB").memory_gb_s == 2039.0  # type: ignore[union-attr]
    assert published("Tesla T4") is None
    assert pcie_gb_s(5, 16) == pytest.approx(63.0, abs=0.1) and pcie_gb_s(4, 16) == pytest.approx(31.5, abs=0.1)
    # what the H200 reached is above what the checks expect, each figure
    for figure in ("compute_tflops", "memory_copy_gb_s", "pcie_h2d_gb_s", "pcie_d2h_gb_s"):
        floor = expected(figure, "NVIDIA H200", 5, 16)
        assert floor is not None and min(getattr(r, figure) for r in recorded()) > floor[0]
    # a Gen5 card in a Gen4 slot is expected at Gen4
    assert expected("pcie_h2d_gb_s", "NVIDIA H200", 4, 16) == (22.1, 31.5)


def test_quiet_on_the_h200s_own_figures_alone_and_among_peers() -> None:
    assert slow_gpus(fleet([H200])) == {}
    assert slow_gpus(fleet(list(recorded()), hosts=4)) == {}


def slowed() -> list[ActiveGpu]:
    """Eight H200s: the recorded one, with GPU 5 at half its clock under a power cap, GPU 3's memory at 60%,
    GPU 6 on a link that trained at Gen3 under load."""
    results = [H200] * 8
    results[5] = dataclasses.replace(H200, compute_tflops=31.3, compute_sm_clock_mhz=990.0,
                                     compute_clock_event_reasons_mask=reasons_mask(["sw_power_cap"]))
    results[3] = dataclasses.replace(H200, memory_copy_gb_s=2560.0)
    results[6] = dataclasses.replace(H200, pcie_h2d_gb_s=11.8, pcie_d2h_gb_s=12.1, pcie_gen_under_load=3)
    return results


def test_a_slowed_gpu_among_normal_peers() -> None:
    report = with_fleet_findings(fleet(slowed()), {})
    (host,) = report.hosts
    warn = {"severity": Severity.WARNING, "host": "gpu00", "action": Action.DRAIN_AND_INSPECT}
    assert host.findings == (
        Finding(code="SLOW_MEMORY", gpu=3, **warn,
                summary="copies memory at 2560 GB/s where a healthy H200 reaches 3840 (4800 published) and its 7 "
                        f"peer(s) of that model in this sweep reach {H200.memory_copy_gb_s:g} (median) - its memory "
                        "is degraded: drain it and run the vendor's diagnostics (dcgmi diag -r 3)",
                evidence={"figure": "memory_copy_gb_s", "value": 2560.0, "unit": "GB/s", "gpu_model": "NVIDIA H200",
                          "expected": 3840.0, "published": 4800.0, "fleet_median": H200.memory_copy_gb_s, "peers": 7}),
        Finding(code="SLOW_COMPUTE", gpu=5, **warn,
                summary="computes at 31.3 TFLOP/s where a healthy H200 reaches 53.6 (67 published) and its 7 "
                        f"peer(s) of that model in this sweep reach {H200.compute_tflops:g} (median) - SM clock 990 "
                        "MHz under load of 1980 (sw_power_cap); check its power delivery and cooling",
                evidence={"figure": "compute_tflops", "value": 31.3, "unit": "TFLOP/s", "gpu_model": "NVIDIA H200",
                          "expected": 53.6, "published": 67.0, "fleet_median": H200.compute_tflops, "peers": 7,
                          "sm_clock_mhz": 990.0, "max_sm_clock_mhz": 1980.0, "power_w": H200.compute_power_w,
                          "enforced_power_limit_w": 700.0, "clock_event_reasons": ("sw_power_cap",)}),
        Finding(code="SLOW_PCIE", gpu=6, **warn,
                summary="moves host-to-device at 11.8 GB/s where a healthy H200 reaches 44.1 (63 published) and its 7 "
                        f"peer(s) of that model in this sweep reach {H200.pcie_h2d_gb_s:g} (median) - link Gen3 x16 "
                        "under load (max Gen5 x16); reseat the card or riser",
                evidence={"figure": "pcie_h2d_gb_s", "value": 11.8, "unit": "GB/s", "gpu_model": "NVIDIA H200",
                          "expected": 44.1, "published": 63.0, "fleet_median": H200.pcie_h2d_gb_s,
                          "peers": 7, "pcie_gen_under_load": 3, "pcie_width_under_load": 16, "pcie_gen_max": 5,
                          "pcie_width_max": 16}),
    )


def test_a_whole_fleet_below_the_table_flags_nobody() -> None:
    """Every GPU at 25 GB/s over PCIe (a hypervisor's, say): below the table, level with the peers."""
    slow_link = dataclasses.replace(H200, pcie_h2d_gb_s=25.0, pcie_d2h_gb_s=25.0)
    assert slow_gpus(fleet([slow_link] * 8, hosts=2)) == {}


def test_alone_the_table_decides_and_without_a_row_the_peers_do() -> None:
    half = dataclasses.replace(H200, compute_tflops=30.0)
    (alone,) = slow_gpus(fleet([half]))["gpu00"]
    assert alone.code == "SLOW_COMPUTE" and "no other GPU of this model" in alone.summary
    assert alone.evidence["fleet_median"] is None

    def unknown_model(results: list[ActiveGpu]) -> SweepReport:
        report = fleet(results)
        (host,) = report.hosts
        assert host.readings is not None
        readings = dataclasses.replace(host.readings, gpus=tuple(dataclasses.replace(g, name="NVIDIA T1000")
                                                                  for g in host.readings.gpus))
        return dataclasses.replace(report, hosts=(dataclasses.replace(host, readings=readings),))

    assert slow_gpus(unknown_model([half])) == {}  # no row, no peer: nothing to judge by
    assert slow_gpus(unknown_model([half, H200])) == {}  # one peer is not enough
    (found,) = slow_gpus(unknown_model([half, H200, H200]))["gpu00"]
    assert (found.code, found.gpu, found.evidence["expected"]) == ("SLOW_COMPUTE", 0, None)


def node_test(**test: object) -> list[Finding]:
    readings = node([gpu(index=i, **H200_GPU) for i in range(2)], active=ActiveTest(**test))  # type: ignore[arg-type]
    return list(active_test("gpu01", readings, CheckSettings()))


@pytest.mark.parametrize(("error", "code", "severity"), [
    ("no CUDA driver library (libcuda.so.1) on the node: libcuda.so.1: cannot open shared object file",
     "ACTIVE_TEST_NOT_RUN", Severity.UNKNOWN),
    ("cuInit: CUDA_ERROR_UNKNOWN (999)", "CUDA_INIT_FAILED", Severity.CRITICAL),
    ("not run: the deadline leaves 1.2 s, the test needs at least 3", "ACTIVE_TEST_NOT_RUN", Severity.UNKNOWN),
])
def test_a_node_that_cannot_run_the_test_is_one_finding(error: str, code: str, severity: Severity) -> None:
    gpus = tuple(ActiveGpu(gpu=i, state=ActiveState.NOT_RUN, why=error) for i in range(2))
    (found,) = node_test(error=error, gpus=gpus)
    assert (found.code, found.severity, found.gpu, found.evidence) == (code, severity, None, {"error": error})


def test_timeouts_failures_and_errors_under_load() -> None:
    gpus = (ActiveGpu(gpu=0, state=ActiveState.TIMED_OUT, why="the test did not finish in 10 s and was ended"),
            dataclasses.replace(H200, gpu=1, state=ActiveState.FAILED, xids=(48,), ecc_uncorrected_rise=2,
                                why="cuMemAlloc_v2: CUDA_ERROR_ECC_UNCORRECTABLE (214)"))
    found = node_test(budget_s=10.0, gpus=gpus)
    assert [(f.code, f.severity, f.gpu) for f in found] == [
        ("ACTIVE_TEST_TIMEOUT", Severity.CRITICAL, 0), ("ACTIVE_TEST_FAILED", Severity.CRITICAL, 1),
        ("ACTIVE_TEST_ERRORS", Severity.CRITICAL, 1)]
    assert found[2].summary.startswith("raised Xid 48 and 2 uncorrected ECC error(s) under the active test's load")
    skipped = (ActiveGpu(gpu=0, state=ActiveState.SKIPPED, why="in use: a process on it"),)
    assert node_test(gpus=skipped) == []  # in use is no finding: the reports say it was skipped


def test_the_findings_get_their_actions_through_evaluate() -> None:
    gpus = (ActiveGpu(gpu=0, state=ActiveState.TIMED_OUT, why="x"),)
    readings = node([gpu(index=0, **H200_GPU)], active=ActiveTest(budget_s=10.0, gpus=gpus))
    found = [f for f in evaluate("gpu01", HostStatus.OK, None, readings, CheckSettings())
             if f.code == "ACTIVE_TEST_TIMEOUT"]
    assert [f.action for f in found] == [Action.RESET_GPU]
