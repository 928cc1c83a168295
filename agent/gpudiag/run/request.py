"""One run as the command line asks for it, checked before any connection.

:func:`check` says in one line what a :class:`~gpudiag.model.request.SweepRequest` cannot do;
:func:`selected_hosts` gives the hosts every source of its selection names (then ``--shard``'s part), and
stops, on leaving, what a source started for the run (the demo cluster's servers: :mod:`gpudiag.sources.demo`);
:func:`prepare` builds what the sweep takes: the SSH transport's options, the sweep options with the check
settings the inventory and the flags set, and each host's log plan, built once. Every configuration error
(inventory, ``--shard``, thresholds, ssh config, identity files, log entries and packs) raises here as one
line, before anything connects. Nothing here prints.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpudiag.model.request import HostSelection, SweepOptions, SweepRequest
from gpudiag.sources.selected import HostSource, SelectedHosts, stop_started
from gpudiag.transport.build import raise_open_file_limit, ssh_options
from gpudiag.transport.limits import kept_for

if TYPE_CHECKING:
    from gpudiag.logs import LogPlan
    from gpudiag.logs.plan import Planner
    from gpudiag.model import GroupNote, Host
    from gpudiag.transport.ssh import SshOptions


class RequestError(ValueError):
    """The request cannot be carried out as given; the message is one line for the operator."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedSweep:
    """A checked request: everything :func:`gpudiag.sweep.runner.sweep` takes, except the transport itself."""

    hosts: tuple[Host, ...]
    options: SweepOptions  # with the check settings the inventory and the flags set
    plans: Mapping[str, LogPlan]  # each host's log plan by host name, built once for the whole run
    ssh: SshOptions
    notes: tuple[str, ...] = ()  # lines for the operator (the kept connections the open-file limit does not fit)
    report_notes: tuple[GroupNote, ...] = ()  # what the report says once (Slurm's GPU allocations not read)


def check(request: SweepRequest) -> SweepRequest:
    """``request``, or the one-line error of what it cannot do (:class:`RequestError`, ``AuditConfigError``)."""
    if request.drain_on is not None and request.hosts.slurm is None:
        raise RequestError("--drain-on needs the nodes from Slurm: add --slurm-partition, --slurm-job, "
                           "--slurm-nodelist or --slurm-state")
    if request.audit is not None:
        from gpudiag.audit.scheduled import check as check_audit

        check_audit(request.audit, request.output.format)  # AuditConfigError (a ValueError): one line
    return request


@contextlib.contextmanager
def selected_hosts(selection: HostSelection, sources: Sequence[HostSource] | None = None) -> Iterator[SelectedHosts]:
    """The hosts every source of ``selection`` gives (:func:`gpudiag.sources.selection.select_hosts`), then
    ``--shard``'s part of them (a stable split by host name, the Slurm nodes with it). What a source started
    for the run (:attr:`SelectedHosts.started`) is stopped on leaving. ``sources``: the host sources to ask
    (default: :data:`gpudiag.sources.selection.SOURCES`)."""
    from gpudiag.sources.selection import SOURCES
    from gpudiag.sources.selection import select_hosts as from_sources

    selected = from_sources(selection, SOURCES if sources is None else sources)
    try:
        if selection.shard is not None:
            from gpudiag.sweep.shard import select_shard

            chosen = select_shard(selected.hosts, *selection.shard)
            names = {h.name for h in chosen}
            nodes = selected.slurm_nodes
            selected = dataclasses.replace(selected, hosts=tuple(chosen), slurm_nodes=None if nodes is None else {
                name: node for name, node in nodes.items() if name in names})
        yield selected
    finally:
        stop_started(selected)


def settings(request: SweepRequest, inventory: Mapping[str, object]) -> SweepOptions:
    """``request.sweep`` with the check settings: the defaults, the inventory's, then the flags'."""
    from gpudiag.checks import with_overrides

    layered = with_overrides(request.sweep.settings, inventory if request.inventory_settings else {})
    return dataclasses.replace(request.sweep, settings=with_overrides(layered, request.checks))


def log_planner(request: SweepRequest) -> Planner:
    """The run's log planner, built before any host source is asked: ``--pack`` files and ``--signature`` are
    checked here (``LogConfigError``, one line), before the demo cluster starts or anything connects."""
    from gpudiag.logs.plan import Planner

    return Planner(request.sweep.logs)


def prepare(request: SweepRequest, selected: SelectedHosts, planner: Planner | None = None) -> PreparedSweep:
    """Check ``request`` for ``selected`` hosts and build what the sweep needs, each thing once (each host's log
    plan with ``planner``, :func:`log_planner`'s, when given).

    Raises (one line each) ``SettingsError``, :class:`RequestError`, ``KeyLoadError``, ``LogConfigError``."""
    from gpudiag.logs import build_plans

    options = settings(request, selected.settings)
    ssh = ssh_options(request.ssh, selected.hosts, keep_connections=options.stream)
    notes: tuple[str, ...] = ()
    if options.stream:  # watch, the exporter: each kept connection holds a descriptor for the whole run
        fit = kept_for(len(selected.hosts), options.concurrency)
        ssh.max_kept = fit.kept if fit.note is not None else None
        options = dataclasses.replace(options, concurrency=fit.window)
        notes = (fit.note,) if fit.note is not None else ()
    else:
        raise_open_file_limit(options.concurrency)
    plans = build_plans(selected.hosts, options.logs, planner=planner)  # a broken log entry or pack fails here
    report_notes: tuple[GroupNote, ...] = ()
    if selected.slurm_nodes and options.gpus and not options.stream:  # Slurm gave the hosts: its jobs' GPUs
        options, said, report_notes = _with_allocations(options, tuple(selected.slurm_nodes))
        notes += said
    return PreparedSweep(hosts=selected.hosts, options=options, plans=plans, ssh=ssh, notes=notes,
                         report_notes=report_notes)


def _with_allocations(options: SweepOptions, nodes: tuple[str, ...]) -> tuple[SweepOptions, tuple[str, ...],
                                                                             tuple[GroupNote, ...]]:
    """``options`` with the GPUs Slurm gave each job running on ``nodes`` (read once, before the sweep), the
    lines for the operator, and the report's note when Slurm could not be asked (the sweep goes on without)."""
    from gpudiag.model import GroupNote
    from gpudiag.sources.slurm_jobs import allocations_or_failure

    details, failure = allocations_or_failure(nodes)
    said = tuple(line for line in (failure, details.note) if line is not None)
    failed = (GroupNote(group="slurm", kind="allocations unread", summary=failure, hosts=len(nodes)),) \
        if failure is not None else ()
    return dataclasses.replace(options, allocations=details.allocations), said, failed
