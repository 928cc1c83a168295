"""Slurm on the command line: the ``--slurm-*`` and ``--drain-on`` flags of ``sweep``, and ``gpudiag undrain``.

A command module (with :mod:`.app` and :mod:`.logs_commands`, the only code that prints or sets the exit code);
like them it imports :mod:`.common`, never :mod:`.app`. ``sweep`` puts the flags in its request
(:func:`selection` → ``HostSelection.slurm``; ``SweepRequest.drain_on`` and ``dry_run``):
:func:`gpudiag.cli.request.select_hosts` then takes the hosts from Slurm (an inventory or the flags give the
settings), and ``sweep`` calls :func:`drain` after the sweep: it plans (with ``--yes`` runs) the drains and adds
each node's Slurm state and reason to the report; the scheduled-audit step (gpudiag.cli.audit_commands.finish) then
records and prints that report with the :class:`Drained` parts (the ``slurm`` block, the lines after the table,
the actions). ``undrain`` is a command of its own, registered on the app by gpudiag.cli.app.

In ``--format json`` the sweep document gets a ``"slurm"`` key: ``{"nodes": {name: {state, reason}},
"drain_on": level or null, "dry_run": bool, "actions": [...]}``; the actions are also written, one a line, on
stderr. In the table format they follow the report on stdout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from gpudiag.cli import options as opt
from gpudiag.cli.common import (
    EXIT_CANNOT_RUN,
    configuration_errors,
    fail,
    selected_hosts,
    sweep_selected,
)
from gpudiag.model.choices import DrainLevel
from gpudiag.report import OutputFormat

if TYPE_CHECKING:
    from gpudiag.audit.drain import Action
    from gpudiag.cli.request import SweepRequest
    from gpudiag.model import SweepReport
    from gpudiag.sources.slurm import SlurmNode, SlurmSelection

SLURM_PARTITION = typer.Option([], "--slurm-partition", help="Sweep the nodes of this Slurm partition "
                               "(repeatable, or comma-separated).")
SLURM_JOB = typer.Option(None, "--slurm-job", help="Sweep the nodes allocated to this Slurm job.")
SLURM_NODELIST = typer.Option(None, "--slurm-nodelist", help="Sweep these Slurm nodes ('gpu[001-128]'), "
                              "expanded by scontrol show hostnames.")
SLURM_STATE = typer.Option([], "--slurm-state", help="Only Slurm nodes in these states (sinfo -t names: "
                           "drain,down,idle,mixed,...).")
DRAIN_ON = typer.Option(None, "--drain-on", help="Drain (scontrol) the Slurm nodes with a finding at this "
                        "level or worse. A dry run unless --yes.")
DRY_RUN = typer.Option(True, "--dry-run/--yes", help="Print the drain/resume actions (default) or run them.")
UNDRAIN_LEVEL = typer.Option(DrainLevel.CRITICAL, "--drain-on", help="The level the nodes were drained on: a "
                             "node resumes when it has no finding at this level or worse.")


def selection(partitions: Sequence[str], job: str | None, nodelist: str | None,
              states: Sequence[str]) -> SlurmSelection | None:
    """The ``--slurm-*`` flags as one value (repeatable flags may also hold commas); None when none is given."""
    from gpudiag.sources.slurm import SlurmSelection, split_list

    chosen = SlurmSelection(partitions=split_list(partitions), job=job, nodelist=nodelist,
                            states=split_list(states))
    return None if chosen.empty else chosen


@dataclass(frozen=True, slots=True, kw_only=True)
class Drained:
    """What the Slurm step of ``sweep`` did: the swept nodes (their states as read before any drain of this run)
    and the drain actions, planned or run."""

    nodes: Mapping[str, SlurmNode]
    actions: tuple[Action, ...] = ()

    def document(self, request: SweepRequest) -> dict[str, object]:
        """The JSON report's top-level ``slurm`` key."""
        return {"slurm": slurm_document(self.nodes, self.actions, request.drain_on, request.dry_run)}

    def tail(self, report: SweepReport, request: SweepRequest) -> str:
        """The lines printed after the table: the nodes worth a look with their Slurm state, and the actions."""
        by_host = {h.host: h for h in report.hosts}
        odd = [n for n in self.nodes.values() if n.state.rstrip("*") not in ("idle", "mixed", "allocated")
               or n.reason or (by_host.get(n.name) and by_host[n.name].findings)]
        lines = []
        if odd:
            lines.append("Slurm:")
            lines.extend(f"  {node.name}  {node.state}" + (f"  ({node.reason})" if node.reason else "")
                         for node in odd)
        if self.actions:
            lines.append("Actions" + (" (dry run: --yes runs them):" if request.dry_run else ":"))
            lines.extend(f"  {a.line}" for a in self.actions)
        return "\n".join(lines)


def drain(report: SweepReport, request: SweepRequest, nodes: Mapping[str, SlurmNode]) -> tuple[SweepReport, Drained]:
    """For ``sweep`` when Slurm gave the hosts: plan (and with ``--yes`` run) the drains; the report with each
    node's Slurm state and reason, and what was done. A Slurm command that cannot run: one line, exit 3."""
    from gpudiag.audit.drain import plan_drain

    actions: tuple[Action, ...] = ()
    try:
        if request.drain_on is not None:
            actions = plan_drain(report, nodes, request.drain_on)
            if not request.dry_run and any(a.argv for a in actions):
                nodes = {**nodes, **_now(actions)}  # states read again: someone may have drained a node meanwhile
                actions = _apply(plan_drain(report, nodes, request.drain_on))
    except ValueError as exc:
        raise fail(str(exc)) from None
    return with_scheduler_state(report, nodes), Drained(nodes=nodes, actions=actions)


def with_scheduler_state(report: SweepReport, nodes: Mapping[str, SlurmNode]) -> SweepReport:
    """``report`` with each host's Slurm state and reason (as read before any drain of this run)."""
    import dataclasses

    return dataclasses.replace(report, hosts=tuple(
        dataclasses.replace(h, scheduler_state=nodes[h.host].state, scheduler_reason=nodes[h.host].reason)
        if h.host in nodes else h for h in report.hosts))


def _now(actions: Sequence[Action]) -> dict[str, SlurmNode]:
    """The current Slurm state of the nodes ``actions`` would change: the sweep took a while."""
    from gpudiag.sources.hostlist import fold
    from gpudiag.sources.slurm import SlurmError, SlurmSelection, select_nodes

    try:
        return {n.name: n for n in select_nodes(SlurmSelection(nodelist=fold(a.node for a in actions if a.argv)))}
    except SlurmError as exc:
        raise ValueError(str(exc)) from None


def _apply(actions: tuple[Action, ...]) -> tuple[Action, ...]:
    from gpudiag.audit.drain import apply
    from gpudiag.sources.slurm import SlurmError, SubprocessRunner

    try:
        return apply(actions, SubprocessRunner())
    except SlurmError as exc:
        raise ValueError(str(exc)) from None


def slurm_document(nodes: Mapping[str, SlurmNode], actions: Sequence[Action], drain_on: DrainLevel | None,
                   dry_run: bool) -> dict[str, object]:
    """The ``"slurm"`` part of the JSON report."""
    return {
        "nodes": {name: {"state": n.state, "reason": n.reason, "partitions": list(n.partitions)}
                  for name, n in nodes.items()},
        "drain_on": drain_on.value if drain_on else None,
        "dry_run": dry_run,
        "actions": [a.as_dict() for a in actions],
    }


def undrain(
    slurm_partition: list[str] = SLURM_PARTITION,
    slurm_nodelist: str | None = SLURM_NODELIST,
    inventory: Path | None = opt.INVENTORY,
    user: str | None = opt.USER,
    port: int | None = opt.PORT,
    identity_file: str | None = opt.IDENTITY_FILE,
    drain_on: DrainLevel = UNDRAIN_LEVEL,
    dry_run: bool = DRY_RUN,
    fmt: OutputFormat = opt.FORMAT,
    concurrency: int = opt.CONCURRENCY,
    connect_timeout: float = opt.CONNECT_TIMEOUT,
    timeout: float = opt.TIMEOUT,
    samples: int = opt.SAMPLES,
    interval: float = opt.INTERVAL,
    known_hosts: str | None = opt.KNOWN_HOSTS,
    ssh_config: Path | None = opt.SSH_CONFIG,
) -> None:
    """Resume the Slurm nodes gpudiag drained whose findings cleared (a dry run unless --yes).

    Sweeps the drained nodes whose reason starts with "gpudiag:"; a node drained by someone else is never
    touched.
    """
    from gpudiag.audit.drain import plan_undrain
    from gpudiag.cli.request import HostSelection, SelectedHosts, SweepRequest
    from gpudiag.model import SweepReport
    from gpudiag.sources.slurm import SlurmError, SlurmSelection, hosts_for, select_nodes, split_list
    from gpudiag.sweep.runner import SweepOptions
    from gpudiag.transport.build import SshRequest

    try:
        # The hosts come from Slurm below; an inventory (-i) gives their settings, as it does for sweep.
        request = SweepRequest(
            hosts=HostSelection(inventory=inventory, user=user, port=port, identity_file=identity_file),
            ssh=SshRequest(connect_timeout_s=connect_timeout, known_hosts=known_hosts, ssh_config=ssh_config),
            sweep=SweepOptions(samples=samples, interval_s=interval, deadline_s=timeout, concurrency=concurrency))
        try:
            drained = select_nodes(SlurmSelection(partitions=split_list(slurm_partition), nodelist=slurm_nodelist,
                                                  states=("drain",)))
        except SlurmError as exc:
            raise ValueError(str(exc)) from None
        nodes = {n.name: n for n in drained}
        ours = [n for n in nodes.values() if n.drained_by_gpudiag]
        report = SweepReport(started_at="", duration_s=0.0, hosts=())
        if ours:
            known = selected_hosts(request.hosts) if inventory is not None else SelectedHosts(hosts=())
            hosts = hosts_for(ours, known.hosts, user=user, port=port, identity_file=identity_file)
            report = sweep_selected(request, SelectedHosts(hosts=hosts, settings=known.settings))
        actions = plan_undrain(report, nodes, drain_on)
        if not dry_run and any(a.argv for a in actions):
            nodes = {**nodes, **_now(actions)}  # read again: someone may have re-drained a node with their reason
            actions = _apply(plan_undrain(report, nodes, drain_on))
    except configuration_errors() as exc:
        raise fail(str(exc)) from None
    if fmt is OutputFormat.JSON:
        from gpudiag.report.json_report import dumps

        typer.echo(dumps(slurm_document({n.name: n for n in ours}, actions, drain_on, dry_run)
                         | {"hosts_swept": [h.host for h in report.hosts]}))
    else:
        if not nodes:
            typer.echo("gpudiag: no drained Slurm nodes")
        for action in actions:
            typer.echo(action.line + (" (dry run: --yes runs it)" if dry_run and action.argv else ""))
    failed = any(a.done is False for a in actions)
    raise typer.Exit(EXIT_CANNOT_RUN if failed else 0)  # a Slurm command that failed: gpudiag could not do its job
