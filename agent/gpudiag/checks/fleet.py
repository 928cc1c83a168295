"""DRIVER_DRIFT: a host whose driver, CUDA or VBIOS differs from what it is meant to run. Pure.

Hosts are meant to differ where their GPUs differ: a group (an inventory group, a Slurm partition or job, a
rack) that mixes GPU models runs each model on the driver and VBIOS that suits it, so versions are compared
only among the hosts of one group that have the same GPU model and the same number of GPUs (a *cohort*).
Within a cohort, a clear majority (more than half of the cohort's hosts that reported the fact) says what
the others run: a host outside it gets DRIVER_DRIFT, naming what its peers run. Where no version has a clear
majority (a rollout half done), there is no odd host to blame: the group gets one note
(:class:`~gpudiag.model.GroupNote`, "versions split") that names each version and its hosts, and no host a
finding.

An explicit expectation beats a vote (``--expect "NVIDIA H200:driver=580.159.04"``, the config file's
``[fleet."NVIDIA H200"]``): a host whose GPUs of that model run something else gets the finding whatever its
group runs, with or without a group. A version that differs, with no symptom, is maintenance: DRIVER_DRIFT's
action is ``watch`` (:mod:`gpudiag.checks.actions`), unless the operator's ``--expect-action`` raises the
expectation's.

A fleet check needs the whole sweep: it runs once the hosts are all in (:func:`with_fleet_findings`, called by
the sweep runner and on the merged report of ``--workers``). A host that did not answer says nothing about its
versions. A host in several groups gets one finding: an expectation first, else the first group (in its
order) where it differs.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from gpudiag.checks.actions import with_action
from gpudiag.checks.active import slow_gpus
from gpudiag.checks.jobs import with_job_view
from gpudiag.checks.settings import CheckSettings
from gpudiag.model import (
    Action,
    Finding,
    GroupNote,
    HostReport,
    JobAllocation,
    Severity,
    SweepReport,
    VersionExpectation,
)
from gpudiag.sources.hostlist import fold

MIN_HOSTS = 2  # one host is its own majority
# What only a whole group can say: a partial run (--limit, --shard) carries the last verdict of these
FLEET_CODES = ("DRIVER_DRIFT", "JOB_WAITS_ON", "JOB_STRAGGLER")


def _gpu_values(host: HostReport, read: Callable[[object], object]) -> str | None:
    values = sorted({str(v) for g in host.gpus if not g.lost and (v := read(g)) is not None})
    return ", ".join(values) or None


def gpu_model(host: HostReport) -> str | None:
    """The host's GPU model ("NVIDIA H200"; "A, B" on a node that mixes models), None when none reported."""
    return _gpu_values(host, lambda g: getattr(g, "name", None))


# The versions compared: (fact, evidence key, the words for it, how a host's value is read). VBIOS is read
# where the GPU reports it (the readings table's vbios_version).
FACTS: tuple[tuple[str, str, str, Callable[[HostReport], str | None]], ...] = (
    ("driver", "driver_version", "driver", lambda h: h.readings.driver_version if h.readings else None),
    ("cuda", "cuda_version", "CUDA", lambda h: h.readings.cuda_version if h.readings else None),
    ("vbios", "vbios_version", "VBIOS", lambda h: _gpu_values(h, lambda g: getattr(g, "vbios_version", None))),
)


def _answered(host: HostReport) -> bool:
    return host.status.answered and host.readings is not None and bool(host.gpus)


def _cohort(host: HostReport) -> tuple[str, int]:
    """What a host is compared with: its GPU model and GPU count."""
    return gpu_model(host) or "unknown GPU model", len(host.gpus)


def _cohort_words(cohort: tuple[str, int]) -> str:
    return f"{cohort[1]}x {cohort[0]}"


@dataclasses.dataclass(frozen=True, slots=True)
class _Odd:
    fact: str
    key: str
    words: str
    value: str
    usual: str
    peers: int


def _vote(group: str, hosts: list[HostReport]) -> tuple[dict[str, Finding], list[GroupNote]]:
    """host -> its DRIVER_DRIFT finding within ``group``, and the group's notes (no clear majority)."""
    cohorts: dict[tuple[str, int], list[HostReport]] = {}
    for host in hosts:
        cohorts.setdefault(_cohort(host), []).append(host)
    findings: dict[str, Finding] = {}
    splits: list[str] = []
    for cohort, members in cohorts.items():
        odd: dict[str, list[_Odd]] = {}
        for fact, key, words, read in FACTS:
            values = {h.host: v for h in members if (v := read(h)) is not None}
            if len(values) < MIN_HOSTS or len(set(values.values())) == 1:
                continue
            (top, n), = Counter(values.values()).most_common(1)
            if 2 * n > len(values):
                for name, value in values.items():
                    if value != top:
                        odd.setdefault(name, []).append(_Odd(fact, key, words, value, top, n))
            else:
                by_value: dict[str, list[str]] = {}
                for name, value in values.items():
                    by_value.setdefault(value, []).append(name)
                splits.append(f"{words} on its {_cohort_words(cohort)} hosts: " + ", ".join(
                    f"{value} on {fold(names)}" for value, names in by_value.items()))
        for name, facts in odd.items():
            theirs = " and ".join(f"{o.words} {o.value}" for o in facts)
            usual = " and ".join(f"{o.words} {o.usual}" for o in facts)
            peers = min(o.peers for o in facts)
            findings[name] = Finding(
                code="DRIVER_DRIFT", severity=Severity.WARNING, host=name, gpu=None,
                summary=(f"runs {theirs} where {peers} other {_cohort_words(cohort)} hosts of {group} run {usual}"
                         " - bring it to what its peers run at the next maintenance"),
                evidence={"group": group, "gpu_model": cohort[0], "gpu_count": cohort[1], "clear_majority": True,
                          "differs": tuple(o.key for o in facts), **{o.key: o.value for o in facts},
                          **{f"majority_{o.key}": o.usual for o in facts}, "cohort_hosts": len(members),
                          "group_hosts": len(hosts)})
    notes = [GroupNote(group=group, kind="versions split", hosts=len(hosts),
                       summary=f"{group}: no version has a clear majority - {'; '.join(splits)}; settle it on one, "
                               "or say what it should run (--expect)")] if splits else []
    return findings, notes


def _expected(host: HostReport, expectations: Sequence[VersionExpectation], action: Action) -> Finding | None:
    """The host's DRIVER_DRIFT against the operator's expectations for its GPU model, or None."""
    model = gpu_model(host)
    off: list[tuple[str, str, str, str]] = []  # (evidence key, words, its value, expected)
    for fact, key, words, read in FACTS:
        wanted = [e.version for e in expectations if e.fact == fact and e.applies_to(model)]
        value = read(host)
        if wanted and value is not None and value not in wanted:
            off.append((key, words, value, " or ".join(wanted)))
    if not off:
        return None
    theirs = " and ".join(f"{words} {value}" for _, words, value, _ in off)
    expected = " and ".join(f"{words} {want}" for _, words, _, want in off)
    return Finding(
        code="DRIVER_DRIFT", severity=Severity.WARNING, host=host.host, gpu=None,
        summary=f"runs {theirs} where {model} hosts are expected to run {expected} (--expect)",
        evidence={"gpu_model": model, "gpu_count": len(host.gpus), "expected_by": "operator",
                  "differs": tuple(k for k, *_ in off), **{k: v for k, _, v, _ in off},
                  **{f"expected_{k}": w for k, _, _, w in off}, "operator_action": action.label})


def driver_drift(report: SweepReport, groups: Mapping[str, Sequence[str]],
                 expectations: Sequence[VersionExpectation] = (),
                 expect_action: Action = Action.WATCH) -> tuple[dict[str, Finding], tuple[GroupNote, ...]]:
    """host -> its DRIVER_DRIFT finding (each host at most one), and the groups' notes."""
    members: dict[str, list[HostReport]] = {}
    for host in report.hosts:
        if _answered(host):
            for group in groups.get(host.host, ()):
                members.setdefault(group, []).append(host)
    by_group: dict[str, dict[str, Finding]] = {}
    notes: list[GroupNote] = []
    for group, hosts in members.items():  # each group judged once
        by_group[group], said = _vote(group, hosts)
        notes.extend(said)
    out: dict[str, Finding] = {}
    for host in report.hosts:
        found = _expected(host, expectations, expect_action) if expectations and _answered(host) else None
        for group in groups.get(host.host, ()):
            if found is not None:
                break
            found = by_group.get(group, {}).get(host.host)
        if found is not None:
            out[host.host] = with_action(found)
    return out, tuple(notes)


def with_fleet_findings(report: SweepReport, groups: Mapping[str, Sequence[str]], *,
                        expectations: Sequence[VersionExpectation] = (), expect_action: Action = Action.WATCH,
                        allocations: Sequence[JobAllocation] = (),
                        settings: CheckSettings | None = None) -> SweepReport:
    """``report`` with the checks across hosts: each host's DRIVER_DRIFT and the active test's SLOW_* after its own
    findings, the groups' notes, and the job view (:func:`gpudiag.checks.jobs.with_job_view`: the jobs section and
    the job findings)."""
    drift, notes = driver_drift(report, groups, expectations, expect_action)
    slow = slow_gpus(report)  # issue 31: each tested GPU against its model's published figures and peers
    if drift or slow:
        report = dataclasses.replace(report, hosts=tuple(
            dataclasses.replace(h, findings=(*h.findings, *([drift[h.host]] if h.host in drift else ()),
                                             *slow.get(h.host, ())))
            if h.host in drift or h.host in slow else h for h in report.hosts))
    report = dataclasses.replace(report, notes=(*report.notes, *notes))
    return with_job_view(report, groups, allocations, settings or report.settings or CheckSettings())
