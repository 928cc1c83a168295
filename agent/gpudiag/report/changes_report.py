"""What changed since the last recorded run, as JSON (the ``changes`` block of the sweep document, and the
body of every notification); the text (``--only-changes``) is :mod:`gpudiag.report.changes_text`. Pure.

The change set's JSON (``gpudiag.audit.changes/1``)::

    {"schema": "gpudiag.audit.changes/1", "started_at": "...", "previous_started_at": "..." | null,
     "changes": [{"change": "new" | "resolved" | "flapping" | "carried" | "ongoing" | "host_gone" | "host_back",
                  <the finding's fields below, or the host's>}],
     "findings": [{"state": "new" | "ongoing" | "resolved", "fingerprint": "gpu01|uuid:GPU-…|BUSY_LOW_POWER",
                   "code", "severity", "host", "gpu", "gpu_key", "summary",
                   "since": "<started_at of the first run it was open>", "runs": <consecutive runs open>,
                   "carried": <its host did not answer: kept open, unverified>,
                   "flapping": <changed state flap-changes times in the last flap-window runs>,
                   "became_flapping": <this run is the one it started to flap>,
                   "renotify": <sent again because it stayed open past --renotify>,
                   "action": <what to do, on the ladder: none, watch, ..., replace_gpu>}],
     "host_actions": {<each host named above>: <its action now: the highest of its findings'>},
     "hosts": [{"host", "status", "previous_status", "came_back"}]}

In the sweep document (``gpudiag.sweep/4``; these are added fields, no field changes meaning), each finding
gains ``fingerprint`` and ``change`` (``state``, ``since``, ``runs``, ``flapping``), and the document gains
``changes``: the block above with every finding that changed (new, resolved, started to flap) and every
carried one, but not those merely still open; plus ``history``: ``{"run": <id>}``. ``--only-changes --format
json`` prints the same document as the notifications send.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from gpudiag.model import SweepReport
from gpudiag.model.changes import (
    ChangeSet,
    ChangeState,
    FindingChange,
    HostChange,
    fingerprints,
    gpu_keys,
)

CHANGES_SCHEMA = "gpudiag.audit.changes/1"


def change_kind(change: FindingChange) -> str:
    """The one word for a finding's change in the ``changes`` list: ``flapping`` (the run it started to flap),
    ``carried`` (its host did not answer: kept open, unverified), else its state (``new``, ``resolved``,
    ``ongoing``: sent again after ``--renotify``)."""
    if change.became_flapping:
        return "flapping"
    if change.finding.carried and change.state is not ChangeState.RESOLVED:
        return "carried"
    return change.state.value


def change_document(change: FindingChange, *, renotify: bool = False) -> dict[str, object]:
    f = change.finding
    return {"state": change.state.value, "fingerprint": f.fingerprint, "code": f.code,
            "severity": f.severity.label, "host": f.host, "gpu": f.gpu, "gpu_key": f.gpu_key, "summary": f.summary,
            "since": f.since, "runs": f.runs, "carried": f.carried, "flapping": change.flapping,
            "became_flapping": change.became_flapping, "renotify": renotify, "action": f.action.label}


def _host_document(host: HostChange) -> dict[str, object]:
    return {"host": host.host, "status": host.status, "previous_status": host.previous_status,
            "came_back": host.came_back}


def changes_document(changes: ChangeSet, findings: tuple[FindingChange, ...] | None = None,
                     renotified: Collection[str] = ()) -> dict[str, object]:
    """The change set as ``gpudiag.audit.changes/1`` JSON values; ``findings``: only these (default: all).
    ``changes`` is every change in one list: each chosen finding (``change``: new, resolved, flapping,
    carried, ongoing when sent again) and each host that went away or came back (``host_gone``,
    ``host_back``); ``findings`` and ``hosts`` are the same entries split by kind, as before."""
    chosen = changes.findings if findings is None else findings
    finding_docs = [change_document(c, renotify=c.finding.fingerprint in renotified) for c in chosen]
    host_docs = [_host_document(h) for h in changes.hosts]
    named = [c.finding.host for c in chosen] + [h.host for h in changes.hosts]
    host_actions = {host: changes.host_actions[host].label for host in dict.fromkeys(named)
                    if host in changes.host_actions}
    return {"schema": CHANGES_SCHEMA, "started_at": changes.started_at,
            "previous_started_at": changes.previous_started_at,
            # each named host's action now (the highest of its findings' on the ladder; none: nothing to do)
            "host_actions": host_actions,
            "changes": [{"change": change_kind(c), **d} for c, d in zip(chosen, finding_docs, strict=True)]
            + [{"change": "host_back" if h.came_back else "host_gone", "code": None, "gpu": None, **d}
               for h, d in zip(changes.hosts, host_docs, strict=True)],
            "findings": finding_docs, "hosts": host_docs}


def listed_changes(changes: ChangeSet) -> tuple[FindingChange, ...]:
    """The findings the sweep document's ``changes`` block lists: every one that changed (new, resolved, the
    run it started to flap) and every carried one; not those merely still open."""
    return tuple(c for c in changes.findings
                 if c.state is not ChangeState.ONGOING or c.finding.carried or c.became_flapping)


def annotate(document: Mapping[str, Any], report: SweepReport, changes: ChangeSet,
             run_id: int | None = None) -> dict[str, object]:
    """A ``gpudiag.sweep/4`` document (:func:`gpudiag.report.json_report.to_document`) with each finding's
    fingerprint and change, and the ``changes`` and ``history`` blocks."""
    by_fp = changes.by_fingerprint()
    keys = gpu_keys(report)
    hosts = []
    for host_doc, host in zip(document["hosts"], report.hosts, strict=True):
        findings = []
        for finding_doc, (fp, _, _) in zip(host_doc["findings"], fingerprints(host, keys), strict=True):
            change = by_fp[fp]
            findings.append({**finding_doc, "fingerprint": fp, "change": {
                "state": change.state.value, "since": change.finding.since, "runs": change.finding.runs,
                "flapping": change.flapping}})
        hosts.append({**host_doc, "findings": findings})
    return {**document, "hosts": hosts, "changes": changes_document(changes, listed_changes(changes)),
            "history": {"run": run_id}}
