"""DRIVER_DRIFT: across the hosts of one group (an inventory group, a Slurm partition or job), the hosts whose
driver, CUDA, VBIOS or GPU model differs from what the group's clear majority runs. Pure.

A fleet check: it needs the whole sweep, so it runs once the hosts are all in
(:func:`with_fleet_findings`, called by the sweep runner, and on the merged report of ``--workers``). Each
host that answered and reported the fact takes part; a host that did not answer says nothing about its
driver. A clear majority is more than half of the group's hosts that reported the fact: the hosts outside
it are named, with what the others run. Where no value has a clear majority (a rollout half done), every
host of the group is told so, once, with each value and its hosts: there is no "odd one" to blame.
A host in several groups gets one finding, from the first group (in its order) where it differs.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from gpudiag.checks.actions import with_action
from gpudiag.checks.active import slow_gpus
from gpudiag.model import Finding, HostReport, Severity, SweepReport
from gpudiag.sources.hostlist import fold

MIN_HOSTS = 2  # one host is its own majority
FLEET_CODES = ("DRIVER_DRIFT",)  # what only a whole group can say: a partial run carries the last verdict


def _gpu_values(host: HostReport, read: Callable[[object], object]) -> str | None:
    values = sorted({str(v) for g in host.gpus if not g.lost and (v := read(g)) is not None})
    return ", ".join(values) or None


# The facts compared: (evidence key, the words for it, how a host's value is read). VBIOS is read where the
# GPU reports it (the readings table's vbios_version).
FACTS: tuple[tuple[str, str, Callable[[HostReport], str | None]], ...] = (
    ("driver_version", "driver", lambda h: h.readings.driver_version if h.readings else None),
    ("cuda_version", "CUDA", lambda h: h.readings.cuda_version if h.readings else None),
    ("vbios_version", "VBIOS", lambda h: _gpu_values(h, lambda g: getattr(g, "vbios_version", None))),
    ("gpu_model", "GPU model", lambda h: _gpu_values(h, lambda g: getattr(g, "name", None))),
)


def _members(report: SweepReport, groups: Mapping[str, Sequence[str]]) -> dict[str, list[HostReport]]:
    """group -> its hosts that answered with GPUs, in the report's order."""
    out: dict[str, list[HostReport]] = {}
    for host in report.hosts:
        if host.status.answered and host.readings is not None and host.gpus:
            for group in groups.get(host.host, ()):
                out.setdefault(group, []).append(host)
    return out


def _drift(group: str, hosts: list[HostReport]) -> dict[str, Finding]:
    """host -> its DRIVER_DRIFT finding in ``group``."""
    odd: dict[str, list[tuple[str, str, str, str, int]]] = {}  # host -> (key, words, its value, majority, n)
    split: list[tuple[str, str, dict[str, list[str]]]] = []  # (key, words, value -> hosts) without a majority
    for key, words, read in FACTS:
        values = {h.host: v for h in hosts if (v := read(h)) is not None}
        if len(values) < MIN_HOSTS or len(set(values.values())) == 1:
            continue
        (top, n), = Counter(values.values()).most_common(1)
        if 2 * n > len(values):
            for name, value in values.items():
                if value != top:
                    odd.setdefault(name, []).append((key, words, value, top, n))
        else:
            by_value: dict[str, list[str]] = {}
            for name, value in values.items():
                by_value.setdefault(value, []).append(name)
            split.append((key, words, by_value))
    findings: dict[str, Finding] = {}
    for name, facts in odd.items():
        theirs = " and ".join(f"{words} {value}" for _, words, value, _, _ in facts)
        others = " and ".join(f"{words} {top}" for _, words, _, top, _ in facts)
        peers = min(n for *_, n in facts)
        findings[name] = Finding(
            code="DRIVER_DRIFT", severity=Severity.WARNING, host=name, gpu=None,
            summary=(f"runs {theirs} where {peers} other hosts of {group} run {others} - bring it to what the "
                     "others run, or take it out of the group"),
            evidence={"group": group, "clear_majority": True, "differs": tuple(k for k, *_ in facts),
                      **{k: v for k, _, v, _, _ in facts}, **{f"majority_{k}": t for k, _, _, t, _ in facts},
                      "group_hosts": len(hosts)})
    if split:
        said = "; ".join(f"{words} " + ", ".join(f"{value} on {fold(names)}" for value, names in by_value.items())
                         for _, words, by_value in split)
        for host in hosts:
            findings.setdefault(host.host, Finding(
                code="DRIVER_DRIFT", severity=Severity.WARNING, host=host.host, gpu=None,
                summary=(f"the hosts of {group} disagree and no version has a clear majority: {said} - settle "
                         "the group on one"),
                evidence={"group": group, "clear_majority": False, "differs": tuple(k for k, _, _ in split),
                          **{k: {v: list(n) for v, n in by.items()} for k, _, by in split},
                          "group_hosts": len(hosts)}))
    return findings


def driver_drift(report: SweepReport, groups: Mapping[str, Sequence[str]]) -> dict[str, Finding]:
    """host -> its DRIVER_DRIFT finding (each host at most one: the first of its groups where it differs)."""
    out: dict[str, Finding] = {}
    members = _members(report, groups)
    by_group = {group: _drift(group, hosts) for group, hosts in members.items()}  # each group judged once
    for host in report.hosts:
        for group in groups.get(host.host, ()):
            found = by_group.get(group, {}).get(host.host)
            if found is not None:
                out[host.host] = with_action(found)
                break
    return out


def with_fleet_findings(report: SweepReport, groups: Mapping[str, Sequence[str]]) -> SweepReport:
    """``report`` with each host's fleet findings (DRIVER_DRIFT, the active test's SLOW_*) after its own."""
    drift = driver_drift(report, groups)
    slow = slow_gpus(report)  # issue 31: each tested GPU against its model's published figures and peers
    if not drift and not slow:
        return report
    return dataclasses.replace(report, hosts=tuple(
        dataclasses.replace(h, findings=(*h.findings, *([drift[h.host]] if h.host in drift else ()),
                                         *slow.get(h.host, ())))
        if h.host in drift or h.host in slow else h for h in report.hosts))
