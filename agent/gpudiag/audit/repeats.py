"""Repeats escalate: a GPU that needed the same action again and again this week needs more than that action.

With ``--history``, before the report is shown, drained or sent: a GPU finding whose action is
``restart_workload`` or higher, when the same GPU (the host and the GPU's key: its UUID, or its index) needed
the same action :data:`REPEATS` times or more within :data:`WINDOW_DAYS` days of recorded runs (this run
included; each time counted once however many runs it stayed open: a streak, known by when it began), is
raised one step on the ladder and says so: "needed a reset 3 times this week, so reboot_node". The history
records what the finding needed before the raise (:data:`gpudiag.model.actions.BEFORE_REPEATS`), so a raise
does not feed itself.

:func:`escalate` is pure (the times come in as values); :func:`escalate_with_history` reads them from the
history file (:meth:`gpudiag.audit.history.History.times_needed`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from gpudiag.model import Action, Finding, HostReport, SweepReport
from gpudiag.model.actions import BEFORE_REPEATS
from gpudiag.model.changes import gpu_keys

# Three times in a week: once is bad luck, twice may be the same bad job landing on the GPU again; a third
# time the action is not fixing the GPU (NVIDIA's own RESET_GPU advice: if it persists after a reset, reboot;
# after a reboot, replace).
REPEATS = 3
WINDOW_DAYS = 7.0
LEAST = Action.RESTART_WORKLOAD  # "needed watching three times" is not a repeat of anything done to the GPU

Times = Mapping[tuple[str, str, Action], frozenset[str]]


def _raised(finding: Finding, times: int) -> Finding:
    up = finding.action.raised()
    return dataclasses.replace(
        finding, action=up,
        summary=f"{finding.summary}; needed {finding.action.noun} {times} times this week, so {up.label}",
        evidence={**finding.evidence, BEFORE_REPEATS: finding.action.label, "times_needed_7d": times})


def escalate(report: SweepReport, times: Times) -> SweepReport:
    """``report`` with each GPU finding that repeats (``times``: (host, GPU key, action) -> each time it was
    needed in the window, this run's included) raised one step."""
    keys = gpu_keys(report)

    def host_of(host: HostReport) -> HostReport:
        findings = []
        for f in host.findings:
            if f.gpu is not None and f.action.at_least(LEAST) and f.action is not Action.REPLACE_GPU:
                key = (host.host, keys.get((host.host, f.gpu), f"index:{f.gpu}"), f.action)
                count = len(times.get(key, ()))
                if count >= REPEATS:
                    f = _raised(f, count)
            findings.append(f)
        return dataclasses.replace(host, findings=tuple(findings))

    return dataclasses.replace(report, hosts=tuple(host_of(h) for h in report.hosts))


def escalate_with_history(report: SweepReport, path: Path, *, now_s: float,
                          lock_wait_s: float = 10.0) -> SweepReport:
    """:func:`escalate` with the times read from the history at ``path`` (read only; a file that cannot be
    read raises :class:`gpudiag.audit.history.HistoryError`, which the audit step reports as well)."""
    from gpudiag.audit.history import History

    if not any(f.gpu is not None and f.action.at_least(LEAST) for f in report.findings):
        return report  # nothing that could repeat: the history is not opened
    with History.open(path, lock_wait_s=lock_wait_s) as history:
        times = history.times_needed(report, since_s=now_s - WINDOW_DAYS * 86400.0)
    return escalate(report, times)
