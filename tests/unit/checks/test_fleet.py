"""DRIVER_DRIFT: within a group, the hosts whose driver, CUDA, VBIOS or GPU model differs from the clear
majority; quiet on a uniform group and a one-host group; a split group told so; findings compared whole."""

from __future__ import annotations

from typing import Any

from builders import gpu, host_report, node, sweep

from gpudiag.checks.fleet import driver_drift, with_fleet_findings
from gpudiag.model import Action, Finding, HostReport, HostStatus, Severity, SweepReport


def h(name: str, driver: str = "580.159.04", cuda: str = "13.0", model: str = "NVIDIA H200", **kw: Any) -> HostReport:
    return host_report(name, readings=node([gpu(index=0, name=model)], hostname=name, driver_version=driver,
                                           cuda_version=cuda), **kw)


def fleet(*hosts: HostReport) -> SweepReport:
    return sweep(*hosts)


def test_the_odd_host_is_named_with_what_the_others_run() -> None:
    report = fleet(h("gpu01"), h("gpu02"), h("gpu03", driver="570.133.20", cuda="12.8"), h("gpu04"),
                   host_report("gpu05", status=HostStatus.TIMEOUT))  # did not answer: says nothing
    groups = dict.fromkeys(("gpu01", "gpu02", "gpu03", "gpu04", "gpu05"), ("h200",))
    assert driver_drift(report, groups) == {"gpu03": Finding(
        code="DRIVER_DRIFT", severity=Severity.WARNING, host="gpu03", gpu=None,
        summary="runs driver 570.133.20 and CUDA 12.8 where 3 other hosts of h200 run driver 580.159.04 and "
                "CUDA 13.0 - bring it to what the others run, or take it out of the group",
        evidence={"group": "h200", "clear_majority": True, "differs": ("driver_version", "cuda_version"),
                  "driver_version": "570.133.20", "cuda_version": "12.8", "majority_driver_version": "580.159.04",
                  "majority_cuda_version": "13.0", "group_hosts": 4},
        action=Action.DRAIN_AND_INSPECT)}
    (gpu03,) = [x for x in with_fleet_findings(report, groups).hosts if x.findings]
    assert gpu03.host == "gpu03" and gpu03.action is Action.DRAIN_AND_INSPECT


def test_quiet_on_a_uniform_group_a_one_host_group_and_hosts_without_a_group() -> None:
    report = fleet(h("gpu01"), h("gpu02"), h("gpu03"), h("lone", driver="535.54.03"), h("loose", driver="1.0"))
    groups = {"gpu01": ("h200",), "gpu02": ("h200",), "gpu03": ("h200",), "lone": ("spare",)}
    assert driver_drift(report, groups) == {}
    assert with_fleet_findings(report, groups) == report


def test_a_group_without_a_clear_majority_is_told_so_on_every_host() -> None:
    report = fleet(h("gpu01"), h("gpu02"), h("gpu03", driver="570.133.20"), h("gpu04", driver="570.133.20"))
    found = driver_drift(report, dict.fromkeys(("gpu01", "gpu02", "gpu03", "gpu04"), ("train",)))
    assert sorted(found) == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert found["gpu03"] == Finding(
        code="DRIVER_DRIFT", severity=Severity.WARNING, host="gpu03", gpu=None,
        summary="the hosts of train disagree and no version has a clear majority: driver 580.159.04 on "
                "gpu[01-02], 570.133.20 on gpu[03-04] - settle the group on one",
        evidence={"group": "train", "clear_majority": False, "differs": ("driver_version",),
                  "driver_version": {"580.159.04": ["gpu01", "gpu02"], "570.133.20": ["gpu03", "gpu04"]},
                  "group_hosts": 4},
        action=Action.WATCH)  # no odd one to take out


def test_a_different_gpu_model_alone_is_to_watch_and_one_finding_per_host_across_groups() -> None:
    report = fleet(h("a1"), h("a2"), h("a3", model="NVIDIA H100 80GB HBM3"))
    groups = {"a1": ("rack1", "all"), "a2": ("rack1", "all"), "a3": ("rack1", "all")}
    (finding,) = driver_drift(report, groups).values()
    assert (finding.host, finding.evidence["group"], finding.evidence["differs"], finding.action) == (
        "a3", "rack1", ("gpu_model",), Action.WATCH)
    assert finding.summary.startswith("runs GPU model NVIDIA H100 80GB HBM3 where 2 other hosts of rack1 run "
                                      "GPU model NVIDIA H200")
