"""``gpudiag undrain``: resume the Slurm nodes gpudiag drained whose findings cleared."""

from __future__ import annotations

import typer

from gpudiag.cli.common import configuration_errors, fail, selected_hosts, sweep_selected
from gpudiag.cli.options import command
from gpudiag.cli.params import Given
from gpudiag.model.report import EXIT_CANNOT_RUN
from gpudiag.report import OutputFormat


@command("undrain")
def undrain(*, given: Given) -> None:
    """Resume the Slurm nodes gpudiag drained whose findings cleared (a dry run unless --yes).

    Sweeps the drained nodes whose reason starts with "gpudiag:"; a node drained by someone else is never
    touched.
    """
    import contextlib
    import dataclasses

    from gpudiag.audit.drain import plan_undrain
    from gpudiag.cli import build
    from gpudiag.cli.slurm import apply, now, slurm_document
    from gpudiag.model import SweepReport
    from gpudiag.model.request import SlurmSelection, SweepRequest
    from gpudiag.sources.inventory import select
    from gpudiag.sources.selected import SelectedHosts
    from gpudiag.sources.slurm import SlurmError, hosts_for, select_nodes, split_list

    drain_on, dry_run = given["drain_on"], given["dry_run"]
    try:
        # The hosts come from Slurm below; an inventory (-i) gives their settings, as it does for sweep.
        request = build.request(given, {SweepRequest: {"drain_on": None}})
        selection = request.hosts
        try:
            drained = select_nodes(SlurmSelection(partitions=split_list(given["slurm_partition"]),
                                                  nodelist=given["slurm_nodelist"], states=("drain",)))
        except SlurmError as exc:
            raise ValueError(str(exc)) from None
        nodes = {n.name: n for n in drained}
        ours = [n for n in nodes.values() if n.drained_by_gpudiag]
        report = SweepReport(started_at="", duration_s=0.0, hosts=())
        if ours:
            with (selected_hosts(selection) if selection.inventory is not None
                  else contextlib.nullcontext(SelectedHosts(hosts=()))) as known:
                hosts = list(select(hosts_for(ours, known.hosts, user=selection.user, port=selection.port,
                                         identity_file=selection.identity_file), selection.limit, selection.exclude))
                if selection.jump is not None:  # checked by selected_hosts when an inventory is given
                    hosts = [dataclasses.replace(h, jump=selection.jump) for h in hosts]
                report = sweep_selected(request, SelectedHosts(hosts=tuple(hosts), settings=known.settings))
        actions = plan_undrain(report, nodes, drain_on)
        if not dry_run and any(a.argv for a in actions):
            nodes = {**nodes, **now(actions)}  # read again: someone may have re-drained a node with their reason
            actions = apply(plan_undrain(report, nodes, drain_on))
    except configuration_errors() as exc:
        raise fail(str(exc)) from None
    if given["fmt"] is OutputFormat.JSON:
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
