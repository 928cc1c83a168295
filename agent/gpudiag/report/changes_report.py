"""What changed since the last recorded run, as JSON (the ``changes`` block of the sweep document, and the
body of every notification); the text (``--only-changes``) is :mod:`gpudiag.report.changes_text`. Pure.

The change set's JSON (``gpudiag.audit.changes/1``)::

    {"schema": "gpudiag.audit.changes/1", "started_at": "...", "previous_started_at": "..." | null,
     "findings": [{"state": "new" | "ongoing" | "resolved", "fingerprint": "gpu01|uuid:GPU-…|BUSY_LOW_POWER",
                   "code", "severity", "host", "gpu", "gpu_key", "summary",
                   "since": "<started_at of the first run it was open>", "runs": <consecutive runs open>,
                   "carried": <its host did not answer: kept open, unverified>,
                   "flapping": <changed state flap-changes times in the last flap-window runs>,
                   "became_flapping": <this run is the one it started to flap>,
                   "renotify": <sent again because it stayed open past --renotify>}],
     "hosts": [{"host", "status", "previous_status", "came_back"}]}

In the sweep document (``gpudiag.sweep/3``; these are added fields, no field changes meaning), each finding
gains ``fingerprint`` and ``change`` (``state``, ``since``, ``runs``, ``flapping``), and the document gains
``changes``: the block above, without the open findings already listed per host (only ``resolved`` and
``carried`` ones), plus ``history``: ``{"run": <id>}``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from gpudiag.model import SweepReport
from gpudiag.model.changes import ChangeSet, ChangeState, FindingChange, fingerprints, gpu_keys

CHANGES_SCHEMA = "gpudiag.audit.changes/1"


def change_document(change: FindingChange, *, renotify: bool = False) -> dict[str, Any]:
    f = change.finding
    return {"state": change.state.value, "fingerprint": f.fingerprint, "code": f.code,
            "severity": f.severity.label, "host": f.host, "gpu": f.gpu, "gpu_key": f.gpu_key, "summary": f.summary,
            "since": f.since, "runs": f.runs, "carried": f.carried, "flapping": change.flapping,
            "became_flapping": change.became_flapping, "renotify": renotify}


def changes_document(changes: ChangeSet, findings: tuple[FindingChange, ...] | None = None,
                     renotified: Collection[str] = ()) -> dict[str, Any]:
    """The change set as ``gpudiag.audit.changes/1`` JSON values; ``findings``: only these (default: all)."""
    chosen = changes.findings if findings is None else findings
    return {"schema": CHANGES_SCHEMA, "started_at": changes.started_at,
            "previous_started_at": changes.previous_started_at,
            "findings": [change_document(c, renotify=c.finding.fingerprint in renotified) for c in chosen],
            "hosts": [{"host": h.host, "status": h.status, "previous_status": h.previous_status,
                       "came_back": h.came_back} for h in changes.hosts]}


def annotate(document: Mapping[str, Any], report: SweepReport, changes: ChangeSet,
             run_id: int | None = None) -> dict[str, Any]:
    """A ``gpudiag.sweep/3`` document (:func:`gpudiag.report.json_report.to_document`) with each finding's
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
    elsewhere = tuple(c for c in changes.findings if c.state is ChangeState.RESOLVED or c.finding.carried)
    return {**document, "hosts": hosts, "changes": changes_document(changes, elsewhere),
            "history": {"run": run_id}}
