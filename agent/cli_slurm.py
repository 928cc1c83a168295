"""Slurm on the command line: the ``--slurm-*`` and ``--drain-on`` flags of ``sweep`` and ``gpudiag undrain``.

Part of the command-line layer (with agent/cli.py, the only code that prints or sets the exit code).
``sweep`` calls two hooks: :func:`slurm_hosts` right after its host selection (Slurm gives the node list, an
inventory or the flags give the settings) and :func:`finish` instead of its own rendering when Slurm gave the
hosts (the report, each node's Slurm state and reason, and the drain actions). ``undrain`` is a command of
its own, registered on the app by gpudiag.cli; it borrows the sweep helpers from there.

In ``--format json`` the sweep document gets a ``"slurm"`` key: ``{"nodes": {name: {state, reason}},
"drain_on": level or null, "dry_run": bool, "actions": [...]}``; the actions are also written, one a line, on
stderr. In the table format they follow the report on stdout.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from gpudiag import cli_options as opt
from gpudiag.report import OutputFormat

if TYPE_CHECKING:
    from gpudiag.drain import Action, DrainLevel
    from gpudiag.model import Host, SweepReport
    from gpudiag.slurm import SlurmNode, SlurmSelection

SLURM_PARTITION = typer.Option([], "--slurm-partition", help="Sweep the nodes of this Slurm partition "
                               "(repeatable, or comma-separated).")
SLURM_JOB = typer.Option(None, "--slurm-job", help="Sweep the nodes allocated to this Slurm job.")
SLURM_NODELIST = typer.Option(None, "--slurm-nodelist", help="Sweep these Slurm nodes ('gpu[001-128]'), "
                              "expanded by scontrol show hostnames.")
SLURM_STATE = typer.Option([], "--slurm-state", help="Only Slurm nodes in these states (sinfo -t names: "
                           "drain,down,idle,mixed,...).")
DRAIN_ON = typer.Option(None, "--drain-on", help="Drain (scontrol) the Slurm nodes with a finding at this "
                        "level or worse: critical or warning. A dry run unless --yes.")
DRY_RUN = typer.Option(True, "--dry-run/--yes", help="Print the drain/resume actions (default) or run them.")
UNDRAIN_LEVEL = typer.Option("critical", "--drain-on", help="The level the nodes were drained on: a node "
                             "resumes when it has no finding at this level or worse (critical or warning).")


def selection(partitions: Sequence[str], job: str | None, nodelist: str | None,
              states: Sequence[str]) -> SlurmSelection:
    """The ``--slurm-*`` flags as one value (repeatable flags may also hold commas)."""
    from gpudiag.slurm import SlurmSelection, split_list

    return SlurmSelection(partitions=split_list(partitions), job=job, nodelist=nodelist, states=split_list(states))


def level(value: str | None) -> DrainLevel | None:
    from gpudiag.drain import DrainLevel

    if value is None:
        return None
    try:
        return DrainLevel(value.lower())
    except ValueError:
        raise ValueError(f"--drain-on {value}: choose critical or warning") from None


def slurm_hosts(hosts: Sequence[Host], chosen: SlurmSelection, *, user: str | None, port: int | None,
                identity_file: str | None, drain_on: str | None = None, exclude: Sequence[str] = ()
                ) -> tuple[list[Host], dict[str, SlurmNode] | None]:
    """Hook for ``sweep``: with ``--slurm-*`` flags, the Slurm nodes become the hosts (an inventory's host of
    the same name keeps its settings), less the ``--exclude`` patterns; ``nodes`` is None when no Slurm flag was
    given. Raises ``ValueError`` (one line) for a bad flag or when Slurm says no."""
    from gpudiag.inventory import select
    from gpudiag.slurm import SlurmError, hosts_for, select_nodes

    if chosen.empty:
        if drain_on is not None:
            raise ValueError("--drain-on needs the nodes from Slurm: add --slurm-partition, --slurm-job, "
                             "--slurm-nodelist or --slurm-state")
        return list(hosts), None
    level(drain_on)  # a bad level fails before Slurm is asked
    try:
        nodes = select_nodes(chosen)
    except SlurmError as exc:
        raise ValueError(str(exc)) from None
    if not nodes:
        raise ValueError("Slurm gave no nodes for the --slurm-* flags given")
    found = select(hosts_for(nodes, hosts, user=user, port=port, identity_file=identity_file), exclude=exclude)
    if not found:
        raise ValueError("--exclude leaves none of the nodes Slurm gave")
    kept = {host.name for host in found}
    return list(found), {node.name: node for node in nodes if node.name in kept}


def finish(report: SweepReport, fmt: OutputFormat, nodes: Mapping[str, SlurmNode], *, drain_on: str | None,
           dry_run: bool, quiet: bool) -> int:
    """Hook for ``sweep`` when Slurm gave the hosts: plan (and with ``--yes`` run) the drains, print the report
    with each node's Slurm state and the actions; returns the exit code (the report's)."""
    from gpudiag.drain import plan_drain

    chosen = level(drain_on)
    actions: tuple[Action, ...] = ()
    if chosen is not None:
        actions = plan_drain(report, nodes, chosen)
        if not dry_run and any(a.argv for a in actions):
            nodes = {**nodes, **_now(actions)}  # states read again: someone may have drained a node meanwhile
            actions = _apply(plan_drain(report, nodes, chosen))
    if not (quiet and report.exit_code == 0 and not actions):
        _print(report, fmt, nodes, actions, chosen, dry_run)
    return report.exit_code


def _now(actions: Sequence[Action]) -> dict[str, SlurmNode]:
    """The current Slurm state of the nodes ``actions`` would change: the sweep took a while."""
    from gpudiag.hostlist import fold
    from gpudiag.slurm import SlurmError, SlurmSelection, select_nodes

    try:
        return {n.name: n for n in select_nodes(SlurmSelection(nodelist=fold(a.node for a in actions if a.argv)))}
    except SlurmError as exc:
        raise ValueError(str(exc)) from None


def _apply(actions: tuple[Action, ...]) -> tuple[Action, ...]:
    from gpudiag.drain import apply
    from gpudiag.slurm import SlurmError, SubprocessRunner

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


def _print(report: SweepReport, fmt: OutputFormat, nodes: Mapping[str, SlurmNode], actions: Sequence[Action],
           drain_on: DrainLevel | None, dry_run: bool) -> None:
    from gpudiag.report import render

    lines = [a.line for a in actions]
    if fmt is OutputFormat.JSON:
        document = json.loads(render(report, fmt))
        document["slurm"] = slurm_document(nodes, actions, drain_on, dry_run)
        typer.echo(json.dumps(document, indent=2))
        for line in lines:
            typer.echo(f"gpudiag: {line}", err=True)
        return
    typer.echo(render(report, fmt, color=sys.stdout.isatty()) if fmt is OutputFormat.TABLE else render(report, fmt))
    by_host = {h.host: h for h in report.hosts}
    odd = [n for n in nodes.values() if n.state.rstrip("*") not in ("idle", "mixed", "allocated")
           or n.reason or (by_host.get(n.name) and by_host[n.name].findings)]
    if odd:
        typer.echo("Slurm:")
        for node in odd:
            typer.echo(f"  {node.name}  {node.state}" + (f"  ({node.reason})" if node.reason else ""))
    if actions:
        typer.echo("Actions" + (" (dry run: --yes runs them):" if dry_run else ":"))
        for line in lines:
            typer.echo(f"  {line}")


def undrain(
    slurm_partition: list[str] = SLURM_PARTITION,
    slurm_nodelist: str | None = SLURM_NODELIST,
    inventory: Path | None = opt.INVENTORY,
    user: str | None = opt.USER,
    port: int | None = opt.PORT,
    identity_file: str | None = opt.IDENTITY_FILE,
    drain_on: str = UNDRAIN_LEVEL,
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
    from gpudiag.cli import CannotRun, _fail, _run_sweep, _select_hosts, _settings
    from gpudiag.drain import plan_undrain
    from gpudiag.inventory import InventoryError
    from gpudiag.model import SweepReport
    from gpudiag.slurm import SlurmError, hosts_for, select_nodes
    from gpudiag.transport import KeyLoadError

    try:
        chosen = level(drain_on)
        assert chosen is not None
        wanted = selection(slurm_partition, None, slurm_nodelist, ["drain"])
        try:
            nodes = {n.name: n for n in select_nodes(wanted)}
        except SlurmError as exc:
            raise CannotRun(str(exc)) from None
        ours = [n for n in nodes.values() if n.drained_by_gpudiag]
        report = SweepReport(started_at="", duration_s=0.0, hosts=())
        if ours:
            known, overrides = (_select_hosts([], inventory, user, port, identity_file, [], [], False)
                                if inventory is not None else ([], {}))
            hosts = list(hosts_for(ours, known, user=user, port=port, identity_file=identity_file))
            report = _run_sweep(hosts, _settings(overrides, {}), samples=samples, interval=interval,
                                timeout=timeout, concurrency=concurrency, connect_timeout=connect_timeout,
                                login_timeout=10.0, known_hosts=known_hosts, accept_new=False,
                                ssh_config=ssh_config)
        actions = plan_undrain(report, nodes, chosen)
        if not dry_run and any(a.argv for a in actions):
            nodes = {**nodes, **_now(actions)}  # read again: someone may have re-drained a node with their reason
            actions = _apply(plan_undrain(report, nodes, chosen))
    except (InventoryError, KeyLoadError, CannotRun, ValueError) as exc:
        raise _fail(str(exc)) from None
    if fmt is OutputFormat.JSON:
        typer.echo(json.dumps(slurm_document({n.name: n for n in ours}, actions, chosen, dry_run)
                              | {"hosts_swept": [h.host for h in report.hosts]}, indent=2))
    else:
        if not nodes:
            typer.echo("gpudiag: no drained Slurm nodes")
        for action in actions:
            typer.echo(action.line + (" (dry run: --yes runs it)" if dry_run and action.argv else ""))
    failed = any(a.done is False for a in actions)
    raise typer.Exit(3 if failed else 0)  # a Slurm command that failed: gpudiag could not do its job
