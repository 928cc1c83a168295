"""The one place a :class:`~gpudiag.model.SweepReport` is put together from host reports: the sweep in this
process (:func:`gpudiag.sweep.runner.sweep`), the ``--workers`` processes' reports merged in the parent
(:func:`gpudiag.sweep.workers.sweep_in_workers`) and ``gpudiag merge``'s shards (:func:`gpudiag.sweep.shard.merge`)
all call :func:`assemble_report`, so the report's fields and the checks across hosts are decided once.

In the sweep layer, not :mod:`gpudiag.run`, because the runner and the workers below the run call it too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence

from gpudiag.checks.fleet import with_fleet_findings
from gpudiag.model import CheckSettings, HostReport, SweepReport


def assemble_report(hosts: Sequence[HostReport], *, started_at: str, duration_s: float,
                    settings: CheckSettings | None, groups: Mapping[str, Sequence[str]] | None,
                    stopped_by: str | None = None, fleet_judged: bool | None = None,
                    skip: Collection[str] = ()) -> SweepReport:
    """The report of ``hosts`` (in that order). ``groups`` (host -> its groups, for the whole run's hosts):
    the checks across hosts (DRIVER_DRIFT) are judged within them and the report says it was; None: they are
    not judged here (a worker's share of a larger sweep, a part of the hosts, merged shards), and
    ``fleet_judged`` says whether they were (default: not). ``skip``: finding codes switched off (``--skip``):
    left out of every host, so that neither the exit code nor a host's action counts them."""
    report = SweepReport(started_at=started_at, duration_s=duration_s, hosts=tuple(hosts), stopped_by=stopped_by,
                         settings=settings, fleet_judged=groups is not None or bool(fleet_judged))
    report = with_fleet_findings(report, groups) if groups is not None else report
    if not skip:
        return report
    return dataclasses.replace(report, hosts=tuple(
        dataclasses.replace(h, findings=tuple(f for f in h.findings if f.code not in skip)) for h in report.hosts))
