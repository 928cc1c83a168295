"""For how long a finding has stood, said in its own sentence, and what that time makes of it: with
``--history``, a GPU held idle, or allocated to a job and idle, says for how many runs and hours it has been so
("; so for 3 runs over 2.0 h (since ...)"), the operator's next question after "whose is it", and grows critical
once the same holder has kept it idle for ``held_idle_critical_hours`` (24 h by default). Pure: the streak
(``since``, ``runs``) is the change set's (:mod:`gpudiag.audit.changes`), which knows a finding across runs by its
fingerprint: the GPU and its holder (evidence ``holder``: for GPU_HELD_IDLE the holding process's job, container
or pid, for GPU_ALLOCATED_IDLE ``job <id>``), so another job on the same GPU starts a new streak.

The rule (docs/findings.md): one run sees an idle GPU as a warning (its sentence says how much is held and by
whom); from the second run in a row the sentence says for how long; from ``held_idle_critical_hours`` on, the
finding is critical and says so. The action stays what the ladder gives the code (the GPU needs nothing; its
owner does)."""

from __future__ import annotations

import dataclasses

from gpudiag.model import Finding, Severity, SweepReport
from gpudiag.model.changes import ChangeSet, epoch_of, fingerprints, gpu_keys
from gpudiag.model.settings import CheckSettings

STREAK_CODES = ("GPU_HELD_IDLE", "GPU_ALLOCATED_IDLE")  # the findings whose sentence says how long they have stood


def _grown(f: Finding, runs: int, since: str, hours: float, critical_hours: float) -> Finding:
    summary = f"{f.summary}; so for {runs} runs over {hours:.1f} h (since {since})"
    severity = f.severity
    if hours >= critical_hours:
        severity = Severity.CRITICAL
        summary += f": held and unused for {hours / 24.0:.1f} days" if hours >= 48.0 else \
            f": held and unused for {hours:.0f} h"
        summary += f", past the {critical_hours:g} h that makes it critical"
    return dataclasses.replace(f, severity=severity, summary=summary, evidence={
        **f.evidence, "streak_runs": runs, "streak_since": since, "streak_hours": hours,
        "held_idle_critical_hours": critical_hours})


def with_streaks(report: SweepReport, changes: ChangeSet) -> SweepReport:
    """``report`` with each finding of :data:`STREAK_CODES` open for two runs or more told for how long: its
    sentence gains "; so for 3 runs over 2.0 h (since ...)", its evidence ``streak_runs``, ``streak_since``,
    ``streak_hours``; one open for ``held_idle_critical_hours`` or more (the report's settings) is critical
    and says so. A finding seen for the first time is left as it is."""
    critical_hours = (report.settings or CheckSettings()).held_idle_critical_hours
    by_fp = changes.by_fingerprint()
    keys = gpu_keys(report)
    now = epoch_of(report.started_at)
    hosts = []
    for host in report.hosts:
        found: list[Finding] = []
        for fp, _, f in fingerprints(host, keys):
            change = by_fp.get(fp)
            if f.code not in STREAK_CODES or change is None or change.finding.runs < 2:
                found.append(f)
                continue
            runs, since = change.finding.runs, change.finding.since
            hours = round(max(0.0, now - epoch_of(since)) / 3600.0, 1)
            found.append(_grown(f, runs, since, hours, critical_hours))
        hosts.append(dataclasses.replace(host, findings=tuple(found)))
    return dataclasses.replace(report, hosts=tuple(hosts))
