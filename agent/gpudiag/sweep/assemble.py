"""The one place a :class:`~gpudiag.model.SweepReport` is put together from host reports: the sweep in this
process (:func:`gpudiag.sweep.runner.sweep`), the ``--workers`` processes' reports merged in the parent
(:func:`gpudiag.sweep.workers.sweep_in_workers`) and ``gpudiag merge``'s shards (:func:`gpudiag.sweep.shard.merge`)
all call :func:`assemble_report`, so the report's fields, the per-host steps that need the whole run (the GPUs
Slurm gave each job), the checks across hosts and the codes switched off are decided once.

In the sweep layer, not :mod:`gpudiag.run`, because the runner and the workers below the run call it too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from gpudiag.checks.allocated import with_allocated_idle
from gpudiag.checks.fleet import with_fleet_findings
from gpudiag.model import CheckSettings, GroupNote, HostReport, JobView, SweepReport
from gpudiag.model.request import SweepOptions


def assemble_report(hosts: Sequence[HostReport], *, started_at: str, duration_s: float,
                    settings: CheckSettings | None, groups: Mapping[str, Sequence[str]] | None,
                    options: SweepOptions | None = None, hosts_judged: bool = False,
                    stopped_by: str | None = None, fleet_judged: bool | None = None,
                    jobs: Iterable[JobView] = (), notes: Iterable[GroupNote] = ()) -> SweepReport:
    """The report of ``hosts`` (in that order).

    ``options``: the run's. Each host is judged against the GPUs Slurm gave its jobs (GPU_ALLOCATED_IDLE)
    unless ``hosts_judged`` (a worker judged its own share); the checks across hosts use its expectations; its
    ``skip`` codes (``--skip``) are left out of every host, so neither the exit code nor a host's action counts
    them. ``groups`` (host -> its groups, for the whole run's hosts): the checks across hosts (DRIVER_DRIFT, the
    job view) are judged within them and the report says it was; None: not judged here (a worker's share of a
    larger sweep, a part of the hosts, merged shards), and ``fleet_judged`` says whether they were (default:
    not). ``jobs``, ``notes``: what merged shards said already."""
    report = SweepReport(started_at=started_at, duration_s=duration_s, hosts=tuple(hosts), stopped_by=stopped_by,
                         settings=settings, fleet_judged=groups is not None or bool(fleet_judged),
                         jobs=tuple(jobs), notes=tuple(notes))
    if options is not None and not hosts_judged:  # per host, so a worker's share and a partial run judge it too
        report = with_allocated_idle(report, options.allocations, options.settings)
    if groups is not None:
        report = with_fleet_findings(report, groups, expectations=options.expectations if options else (),
                                     expect_action=options.expect_action if options else SweepOptions().expect_action,
                                     allocations=options.allocations if options else (), settings=settings)
    skip = options.skip if options is not None else ()
    if not skip:
        return report
    return dataclasses.replace(report, hosts=tuple(
        dataclasses.replace(h, findings=tuple(f for f in h.findings if f.code not in skip)) for h in report.hosts))
