"""What changed since the last recorded run: per finding ``new``, ``ongoing`` or ``resolved``; per host whether
it came back; flapping findings named as such. Pure: the values are :mod:`gpudiag.model.changes`; the history
(:mod:`gpudiag.audit.history`) reads the past runs and hands them here as :class:`PastRun` values.

A finding is known across runs by its **fingerprint** (:func:`gpudiag.model.changes.fingerprints`): the host,
the GPU (its UUID, or ``index:N`` where the UUID is missing, masked or repeated) and the code, plus what tells
apart several findings of one code: an Xid's code, or the log (as configured, or a found log's server and file
name: :func:`gpudiag.model.changes.log_identity`) and its signature. The summary and the numbers may change
from run to run, and so may a temporary folder or a pid; the fingerprint does not.

A host that did not answer this run cannot say its GPUs are well again: the findings it had stay open,
``carried`` (not verified this run), and are not ``resolved``; HOST_UNREACHABLE itself is new, and resolved
when the host comes back. A host outside this run's scope (not selected: ``--exclude``, ``--limit``,
``--shard``, a Slurm selection) is not looked at: it is compared again when a run sweeps it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from gpudiag.model import SweepReport
from gpudiag.model.actions import needed
from gpudiag.model.changes import (
    ChangeSet,
    ChangeState,
    FindingChange,
    FlapRule,
    HostChange,
    OpenFinding,
    PastRun,
    fingerprints,
    gpu_keys,
)

# ------------------------------------------------------------------------------------------- comparing


def _changes(presence: Iterable[bool]) -> int:
    seq = list(presence)
    return sum(1 for a, b in zip(seq, seq[1:], strict=False) if a != b)


def _last_sweeps(hosts: Iterable[str], past: tuple[PastRun, ...]) -> dict[str, PastRun]:
    """host → the most recent recorded run that swept it (had it in its scope)."""
    out: dict[str, PastRun] = {}
    wanted = set(hosts)
    for run in reversed(past):
        for host in wanted.intersection(run.host_status):
            out.setdefault(host, run)
    return out


def compare(report: SweepReport, past: tuple[PastRun, ...], rule: FlapRule = FlapRule()) -> ChangeSet:
    """This run against the recorded ones (``past``: most recent last, at least the last ``rule.window``, and
    the last run that swept each host of this one).

    Each host is compared with the last run that swept it, so a run that swept only some hosts (``--exclude``,
    ``--limit``, ``--shard``, a Slurm selection) says nothing about the others: their findings are neither
    resolved nor carried, and their streaks continue when a later run sweeps them again."""
    scope = [h.host for h in report.hosts]
    last_of = _last_sweeps(scope, past)
    hosts_of: dict[int, set[str]] = {}
    for name, run in last_of.items():
        hosts_of.setdefault(run.run_id, set()).add(name)
    runs_by_id = {run.run_id: run for run in last_of.values()}
    previous = {f.fingerprint: f for run_id, chosen in hosts_of.items() for f in runs_by_id[run_id].findings
                if f.host in chosen}
    keys = gpu_keys(report)
    now_open: dict[str, OpenFinding] = {}
    for host in report.hosts:
        for fp, gpu_key, f in fingerprints(host, keys):
            before = previous.get(fp)
            now_open[fp] = OpenFinding(
                fingerprint=fp, code=f.code, severity=f.severity, host=host.host, gpu=f.gpu, gpu_key=gpu_key,
                summary=f.summary, since=before.since if before else report.started_at,
                runs=before.runs + 1 if before else 1, action=f.action, needed=needed(f.action, f.evidence))
    silent = {h.host for h in report.hosts if not h.status.answered}
    for fp, before in previous.items():  # a host that did not answer keeps its findings, unverified
        if fp not in now_open and before.host in silent and before.code != "HOST_UNREACHABLE":
            now_open[fp] = dataclasses.replace(before, runs=before.runs + 1, carried=True)

    window = past[-(rule.window - 1):] if rule.window > 1 else ()
    history = [(run.host_status, {f.fingerprint for f in run.findings}) for run in window]

    def flaps(fp: str, host: str, with_now: bool) -> bool:
        # Only the runs that swept the host count: a run of another shard did not look at it.
        runs = [fp in open_then for swept, open_then in history if host in swept]
        return _changes(runs + ([fp in now_open] if with_now else [])) >= rule.changes

    changes = []
    for fp, finding in now_open.items():
        state = ChangeState.ONGOING if fp in previous else ChangeState.NEW
        changes.append(_change(state, finding, flaps(fp, finding.host, True), flaps(fp, finding.host, False)))
    for fp, before in previous.items():
        if fp not in now_open:
            changes.append(_change(ChangeState.RESOLVED, before, flaps(fp, before.host, True),
                                   flaps(fp, before.host, False)))
    hosts = []
    for host in report.hosts:
        was = last_of[host.host].host_status.get(host.host) if host.host in last_of else None
        was_answering = was in ("ok", "partial")
        if was is not None and was_answering != host.status.answered:
            hosts.append(HostChange(host=host.host, status=host.status.value, previous_status=was,
                                    came_back=host.status.answered))
    order = {s: i for i, s in enumerate(ChangeState)}
    changes.sort(key=lambda c: (order[c.state], -c.finding.severity.rank, c.finding.fingerprint))
    last = max(last_of.values(), key=lambda r: r.run_id) if last_of else None
    return ChangeSet(started_at=report.started_at, previous_started_at=last.started_at if last else None,
                     findings=tuple(changes), hosts=tuple(hosts),
                     host_actions={h.host: h.action for h in report.hosts})


def _change(state: ChangeState, finding: OpenFinding, flapping: bool, flapping_before: bool) -> FindingChange:
    return FindingChange(state=state, finding=finding, flapping=flapping,
                         became_flapping=flapping and not flapping_before)
