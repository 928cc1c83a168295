"""Which hosts a command sweeps: the :class:`HostSelection` the flags ask for, and the host sources that answer it.

Each source is one :class:`HostSource` in the explicit tuple :data:`SOURCES`, asked in that order: the demo
cluster (``--demo``, :mod:`gpudiag.sources.demo`), the inventory file (gpudiag's YAML, or an Ansible inventory),
the targets on the command line (names, patterns, ``@group``, ``^file``, ``-``), this machine (``--local``), then
Slurm (``--slurm-*``: its nodes replace the hosts found so far, a known host of the same name keeping its
settings). A new source is one module plus one entry here. After the sources: a host given twice is swept once
(the first wins), ``--limit``/``--exclude`` narrow (``--shard`` is the run's:
:func:`gpudiag.run.request.selected_hosts`). What a source starts for the run (the demo's servers) it lists in
:attr:`SelectedHosts.started`, stopped when the run is over.
Every error is one line (:class:`SelectionError` or the source's own ``ValueError``), before anything connects.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from gpudiag.model.request import HostSelection
from gpudiag.sources.demo import DemoCluster
from gpudiag.sources.selected import HostSource, SelectedHosts, stop_started


class SelectionError(ValueError):
    """The hosts cannot be selected as asked; the message is one line for the operator."""



class InventoryFile:
    """``-i FILE``: gpudiag's inventory YAML, or an Ansible inventory (INI or YAML), with its check settings."""

    narrows = False

    def wanted(self, selection: HostSelection) -> bool:
        return selection.inventory is not None

    def add(self, selection: HostSelection, so_far: SelectedHosts) -> SelectedHosts:
        from gpudiag.sources.inventory import load_inventory

        assert selection.inventory is not None
        inventory = load_inventory(selection.inventory)
        return dataclasses.replace(so_far, hosts=so_far.hosts + inventory.hosts, settings=dict(inventory.settings),
                                   read_as=inventory.read_as)


class CommandLineTargets:
    """The targets on the command line: names, patterns (``gpu[01-16]``), ``user@host:port``, ``@group``,
    ``^file``, ``-`` (stdin)."""

    narrows = False

    def wanted(self, selection: HostSelection) -> bool:
        return bool(selection.targets)

    def add(self, selection: HostSelection, so_far: SelectedHosts) -> SelectedHosts:
        from gpudiag.sources.inventory import hosts_from_patterns

        hosts = hosts_from_patterns(selection.targets, user=selection.user, port=selection.port,
                                    identity_file=selection.identity_file)
        return dataclasses.replace(so_far, hosts=so_far.hosts + tuple(hosts))


class ThisMachine:
    """``--local``: this machine too, without SSH."""

    narrows = False

    def wanted(self, selection: HostSelection) -> bool:
        return selection.local

    def add(self, selection: HostSelection, so_far: SelectedHosts) -> SelectedHosts:
        from gpudiag.model import Host

        return dataclasses.replace(so_far, hosts=(*so_far.hosts, Host(name="localhost")))


class SlurmNodes:
    """``--slurm-partition``/``--slurm-job``/``--slurm-nodelist``/``--slurm-state``: Slurm's nodes replace the
    hosts found so far (a known host of the same name is used as it is), less ``--exclude``."""

    narrows = True

    def wanted(self, selection: HostSelection) -> bool:
        return selection.slurm is not None

    def add(self, selection: HostSelection, so_far: SelectedHosts) -> SelectedHosts:
        from gpudiag.sources.inventory import select
        from gpudiag.sources.slurm import SlurmError, hosts_for, select_nodes

        assert selection.slurm is not None
        try:
            nodes = select_nodes(selection.slurm)
        except SlurmError as exc:
            raise SelectionError(str(exc)) from None
        if not nodes:
            raise SelectionError("Slurm gave no nodes for the --slurm-* flags given")
        found = select(hosts_for(nodes, so_far.hosts, user=selection.user, port=selection.port,
                                 identity_file=selection.identity_file), exclude=selection.exclude)
        if not found:
            raise SelectionError("--exclude leaves none of the nodes Slurm gave")
        if selection.slurm.job:  # a job's nodes are one group for the fleet checks (DRIVER_DRIFT)
            found = tuple(dataclasses.replace(h, groups=(*h.groups, f"job {selection.slurm.job}")) for h in found)
        kept = {host.name for host in found}
        return dataclasses.replace(so_far, hosts=tuple(found),
                                   slurm_nodes={node.name: node for node in nodes if node.name in kept})


# The host sources, in the order they are asked. The demo cluster comes first (a target naming one of its hosts
# is that host: the first of a name wins); Slurm comes last: it narrows what the others found.
SOURCES: tuple[HostSource, ...] = (DemoCluster(), InventoryFile(), CommandLineTargets(), ThisMachine(), SlurmNodes())


def select_hosts(selection: HostSelection, sources: Sequence[HostSource] = SOURCES) -> SelectedHosts:
    """The hosts from every source the selection asks, in order, each once (the first wins), then narrowed."""
    from gpudiag.model.ssh_target import not_ascii, not_printable
    from gpudiag.sources.inventory import check_user, select, valid_jump

    if selection.user is not None:
        check_user(selection.user)  # a NUL, a control character or a space fails before any connection
    if selection.jump is not None and (problem := not_ascii(selection.jump)) is not None:
        raise SelectionError(f"-J {selection.jump!r}: {problem}")
    if selection.identity_file is not None and (problem := not_printable(selection.identity_file)) is not None:
        raise SelectionError(f"--identity-file {selection.identity_file!r}: {problem}")
    if selection.jump is not None and not valid_jump(selection.jump):
        raise SelectionError(f"-J {selection.jump}: expected [user@]host[:port] (an IPv6 host in brackets: "
                             "ops@[::1]:22)")
    selected = SelectedHosts(hosts=())
    try:
        for source in sources:
            if source.wanted(selection) and not source.narrows:
                selected = source.add(selection, selected)
        hosts = list(selected.hosts)
        if selection.inventory is not None and (selection.user or selection.port or selection.identity_file):
            # The flags override the inventory's settings, and so every host's.
            hosts = [dataclasses.replace(h, user=selection.user or h.user, port=selection.port or h.port,
                                         identity_file=selection.identity_file or h.identity_file) for h in hosts]
        if selection.jump is not None:
            hosts = [dataclasses.replace(h, jump=selection.jump) if not h.is_local else h for h in hosts]
        unique = {h.name: h for h in reversed(hosts)}  # a host given twice is swept once (first wins)
        selected = dataclasses.replace(selected, hosts=tuple(select([h for h in hosts if unique.get(h.name) is h],
                                                                    selection.limit, selection.exclude)))
        for source in sources:  # the narrowing sources: they see the hosts the others gave, deduplicated
            if source.wanted(selection) and source.narrows:
                selected = source.add(selection, selected)
    except BaseException:
        stop_started(selected)  # a later step's error: what a source started stops now
        raise
    return selected
