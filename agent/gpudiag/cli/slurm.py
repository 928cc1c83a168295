"""Slurm's steps of ``sweep`` and ``undrain``: planning (with ``--yes`` running) the drains and resumes.

The ``--slurm-*`` and ``--drain-on`` options are in :mod:`gpudiag.cli.options` (the Slurm panel) and reach the
request as its :class:`~gpudiag.model.request.SlurmSelection`: :func:`gpudiag.run.request.selected_hosts` then
takes the hosts from Slurm (an inventory or the flags give the settings), and ``sweep`` calls :func:`drain` after
the sweep: it plans (with ``--yes`` runs) the drains and adds each node's Slurm state and reason to the report; the
scheduled-audit step (:func:`gpudiag.cli.commands.sweep.finish`) then records and prints that report with the
:class:`Drained` parts (the ``slurm`` block, the lines after the table, the actions).

In ``--format json`` the sweep document gets a ``"slurm"`` key: ``{"nodes": {name: {state, reason}},
"drain_on": level or null, "dry_run": bool, "actions": [...]}``; the actions are also written, one a line, on
stderr. In the table format they follow the report on stdout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpudiag.cli.common import fail
from gpudiag.model.choices import DrainLevel

if TYPE_CHECKING:
    from gpudiag.audit.drain import Action
    from gpudiag.model import SweepReport
    from gpudiag.model.request import SweepRequest
    from gpudiag.sources.slurm import SlurmNode

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
                nodes = {**nodes, **now(actions)}  # states read again: someone may have drained a node meanwhile
                actions = apply(plan_drain(report, nodes, request.drain_on))
    except ValueError as exc:
        raise fail(str(exc)) from None
    return with_scheduler_state(report, nodes), Drained(nodes=nodes, actions=actions)


def with_scheduler_state(report: SweepReport, nodes: Mapping[str, SlurmNode]) -> SweepReport:
    """``report`` with each host's Slurm state and reason (as read before any drain of this run)."""
    import dataclasses

    return dataclasses.replace(report, hosts=tuple(
        dataclasses.replace(h, scheduler_state=nodes[h.host].state, scheduler_reason=nodes[h.host].reason)
        if h.host in nodes else h for h in report.hosts))


def now(actions: Sequence[Action]) -> dict[str, SlurmNode]:
    """The current Slurm state of the nodes ``actions`` would change: the sweep took a while."""
    from gpudiag.model.request import SlurmSelection
    from gpudiag.sources.hostlist import fold
    from gpudiag.sources.slurm import SlurmError, select_nodes

    try:
        return {n.name: n for n in select_nodes(SlurmSelection(nodelist=fold(a.node for a in actions if a.argv)))}
    except SlurmError as exc:
        raise ValueError(str(exc)) from None


def apply(actions: tuple[Action, ...]) -> tuple[Action, ...]:
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
