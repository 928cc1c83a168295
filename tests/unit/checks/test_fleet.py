"""DRIVER_DRIFT: within a group, among the hosts of one GPU model and count, the hosts whose driver, CUDA or VBIOS
differs from the clear majority; an operator's expectation beats the vote; quiet on a uniform group, a one-host
group and a group that mixes models; a split group gets one note; findings compared whole."""

from __future__ import annotations

from typing import Any

from builders import gpu, host_report, node, sweep

from gpudiag.checks.fleet import driver_drift, with_fleet_findings
from gpudiag.model import Action, Finding, GroupNote, HostReport, HostStatus, Severity, SweepReport, VersionExpectation


def h(name: str, driver: str = "580.159.04", cuda: str = "13.0", model: str = "NVIDIA H200", **kw: Any) -> HostReport:
    return host_report(name, readings=node([gpu(index=0, name=model)], hostname=name, driver_version=driver,
                                           cuda_version=cuda), **kw)


def fleet(*hosts: HostReport) -> SweepReport:
    return sweep(*hosts)


def test_the_odd_host_is_named_with_what_its_peers_run_and_is_to_watch() -> None:
    report = fleet(h("gpu01"), h("gpu02"), h("gpu03", driver="570.133.20", cuda="12.8"), h("gpu04"),
                   host_report("gpu05", status=HostStatus.TIMEOUT))  # did not answer: says nothing
    groups = dict.fromkeys(("gpu01", "gpu02", "gpu03", "gpu04", "gpu05"), ("h200",))
    assert driver_drift(report, groups) == ({"gpu03": Finding(
        code="DRIVER_DRIFT", severity=Severity.WARNING, host="gpu03", gpu=None,
        summary="runs driver 570.133.20 and CUDA 12.8 where 3 other 1x NVIDIA H200 hosts of h200 run driver "
                "580.159.04 and CUDA 13.0 - bring it to what its peers run at the next maintenance",
        evidence={"group": "h200", "gpu_model": "NVIDIA H200", "gpu_count": 1, "clear_majority": True,
                  "differs": ("driver_version", "cuda_version"), "driver_version": "570.133.20",
                  "cuda_version": "12.8", "majority_driver_version": "580.159.04", "majority_cuda_version": "13.0",
                  "cohort_hosts": 4, "group_hosts": 4},
        action=Action.WATCH)}, ())  # a version that differs with no symptom is maintenance
    (gpu03,) = [x for x in with_fleet_findings(report, groups).hosts if x.findings]
    assert gpu03.host == "gpu03" and gpu03.action is Action.WATCH


def test_quiet_on_a_uniform_group_a_one_host_group_and_hosts_without_a_group() -> None:
    report = fleet(h("gpu01"), h("gpu02"), h("gpu03"), h("lone", driver="535.54.03"), h("loose", driver="1.0"))
    groups = {"gpu01": ("h200",), "gpu02": ("h200",), "gpu03": ("h200",), "lone": ("spare",)}
    assert driver_drift(report, groups) == ({}, ())
    assert with_fleet_findings(report, groups) == report


def test_a_group_without_a_clear_majority_gets_one_note_and_no_host_a_finding() -> None:
    report = fleet(h("gpu01"), h("gpu02"), h("gpu03", driver="570.133.20"), h("gpu04", driver="570.133.20"))
    groups = dict.fromkeys(("gpu01", "gpu02", "gpu03", "gpu04"), ("train",))
    assert driver_drift(report, groups) == ({}, (GroupNote(
        group="train", kind="versions split", hosts=4,
        summary="train: no version has a clear majority - driver on its 1x NVIDIA H200 hosts: 580.159.04 on "
                "gpu[01-02], 570.133.20 on gpu[03-04]; settle it on one, or say what it should run (--expect)"),))
    judged = with_fleet_findings(report, groups)
    assert judged.findings == () and [n.group for n in judged.notes] == ["train"]


def test_a_group_that_mixes_gpu_models_is_not_drift() -> None:
    """The issue's inventory: H200 nodes, the case study's RTX PRO 6000 node and a B200 node in one group, each
    model on its own driver: no finding, no note."""
    report = fleet(h("h1"), h("h2"), h("h3"),
                   h("rtx", driver="580.82.07", cuda="13.0", model="NVIDIA RTX PRO 6000 Blackwell Server Edition"),
                   h("b200", driver="570.172.08", cuda="12.8", model="NVIDIA B200"))
    groups = dict.fromkeys(("h1", "h2", "h3", "rtx", "b200"), ("all",))
    assert driver_drift(report, groups) == ({}, ())


def test_six_models_on_four_drivers_in_one_group_give_no_drift() -> None:
    models = [("NVIDIA GeForce RTX 2080 SUPER", "535.183.01", "12.2"),
              ("NVIDIA GeForce RTX 4080 SUPER", "550.120", "12.4"), ("NVIDIA L40S", "550.120", "12.4"),
              ("NVIDIA H100 80GB HBM3", "570.133.20", "12.8"), ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", "570.133.20",
                                                                 "12.8"),
              ("NVIDIA H200 MIG 1g.18gb", "580.159.04", "13.0")]
    hosts = [h(f"n{i:02d}", driver=d, cuda=c, model=m) for i, (m, d, c) in enumerate(models * 3)][:16]
    report = fleet(*hosts)
    assert driver_drift(report, {x.host: ("all",) for x in hosts}) == ({}, ())


def test_an_h200_off_its_peers_driver_in_a_mixed_group_is_named_alone() -> None:
    report = fleet(h("h1"), h("h2"), h("h3", driver="570.133.20"),
                   h("rtx", driver="580.82.07", model="NVIDIA RTX PRO 6000 Blackwell Server Edition"),
                   h("b200", driver="570.172.08", model="NVIDIA B200"))
    found, notes = driver_drift(report, dict.fromkeys(("h1", "h2", "h3", "rtx", "b200"), ("all",)))
    assert list(found) == ["h3"] and notes == ()
    assert found["h3"].evidence["majority_driver_version"] == "580.159.04" and found["h3"].action is Action.WATCH


def test_hosts_with_another_gpu_count_are_other_peers() -> None:
    eight = [gpu(index=i, name="NVIDIA H200") for i in range(8)]
    four = [gpu(index=i, name="NVIDIA H200") for i in range(4)]
    report = fleet(*(host_report(f"big{i}", readings=node(eight, driver_version="580.159.04", cuda_version="13.0"))
                     for i in range(3)),
                   host_report("small", readings=node(four, driver_version="570.133.20", cuda_version="12.8")))
    assert driver_drift(report, {x.host: ("all",) for x in report.hosts}) == ({}, ())


def test_an_expectation_beats_the_vote_and_needs_no_group() -> None:
    """Every host runs 570 (a unanimous group), but the operator expects 580 on H200s: each is named, with the
    operator's rung; the RTX node, whose model has no expectation, is not."""
    report = fleet(h("h1", driver="570.133.20"), h("h2", driver="570.133.20"), h("solo", driver="570.133.20"),
                   h("rtx", driver="570.133.20", model="NVIDIA RTX PRO 6000 Blackwell Server Edition"))
    expect = (VersionExpectation(model="nvidia h200", fact="driver", version="580.159.04"),)
    found, _ = driver_drift(report, {"h1": ("g",), "h2": ("g",), "rtx": ("g",)}, expect, Action.DRAIN_AND_INSPECT)
    assert sorted(found) == ["h1", "h2", "solo"]
    assert found["solo"] == Finding(
        code="DRIVER_DRIFT", severity=Severity.WARNING, host="solo", gpu=None,
        summary="runs driver 570.133.20 where NVIDIA H200 hosts are expected to run driver 580.159.04 (--expect)",
        evidence={"gpu_model": "NVIDIA H200", "gpu_count": 1, "expected_by": "operator",
                  "differs": ("driver_version",), "driver_version": "570.133.20",
                  "expected_driver_version": "580.159.04", "operator_action": "drain_and_inspect"},
        action=Action.DRAIN_AND_INSPECT)
    on_all = (VersionExpectation(model="*", fact="cuda", version="13.0"),)  # every model: all match, none named
    assert driver_drift(report, {}, on_all) == ({}, ())


def test_a_partial_run_carries_the_last_fleet_verdict_instead_of_resolving_it() -> None:
    """--limit/--exclude/--shard see a group in part: no DRIVER_DRIFT is judged (fleet_judged False), and the one
    open from the last whole run stays open, carried, not resolved; a whole run without it resolves it."""
    import dataclasses

    from gpudiag.audit.changes import compare
    from gpudiag.model.changes import PastRun

    groups = dict.fromkeys(("gpu01", "gpu02", "gpu03"), ("h200",))
    whole = with_fleet_findings(fleet(h("gpu01"), h("gpu02"), h("gpu03", driver="570.133.20")), groups)
    first = compare(whole, ())
    past = (PastRun(run_id=1, started_at=whole.started_at, host_status={x.host: "ok" for x in whole.hosts},
                    findings=first.open_findings),)
    partial = dataclasses.replace(fleet(h("gpu03", driver="570.133.20")), fleet_judged=False)
    carried = compare(partial, past)
    assert [(c.state.value, c.finding.code, c.finding.carried, c.finding.runs) for c in carried.findings] == [
        ("ongoing", "DRIVER_DRIFT", True, 2)]
    fixed = compare(fleet(h("gpu03")), past)  # a whole run: gpu03 was updated
    assert [(c.state.value, c.finding.code) for c in fixed.findings] == [("resolved", "DRIVER_DRIFT")]
