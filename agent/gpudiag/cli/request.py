"""One sweep as the command line asks for it: parsed once into typed values, checked before any connection.

The commands (``sweep``, ``local``, ``watch``, ``grep``, ``undrain``) build one :class:`SweepRequest` from their
flags.
:func:`select_hosts` and :func:`prepare` turn it into what the runner takes - the hosts, the SSH
transport's options, the sweep options with the check settings that the inventory and the flags set,
and each host's log plan, built once - and :func:`prepare_demo` does the same for the demo cluster.
Every configuration error (inventory, ``--shard``, thresholds, ssh config, identity files, log entries
and packs) raises here as one line, before anything connects. Nothing here prints.

Only the standard library (and the light ``gpudiag.report``, which the CLI loads anyway) is imported at
the top: the CLI imports this module on start and ``gpudiag --help`` must stay fast. The layers below
are imported where they are used.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gpudiag.report import OutputFormat
from gpudiag.transport.build import SshRequest, raise_open_file_limit

if TYPE_CHECKING:
    from gpudiag.audit.scheduled import AuditOptions
    from gpudiag.demo.demo import DemoNode
    from gpudiag.logs import LogPlan
    from gpudiag.logs.plan import Planner
    from gpudiag.model import Host
    from gpudiag.model.choices import DrainLevel
    from gpudiag.sources.slurm import SlurmNode, SlurmSelection
    from gpudiag.sweep.runner import SweepOptions
    from gpudiag.transport.ssh import SshOptions


class RequestError(ValueError):
    """The request cannot be carried out as given; the message is one line for the operator."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HostSelection:
    """Which hosts: an inventory and/or ad hoc targets, narrowed by ``--limit``, ``--exclude``, ``--shard``."""

    targets: tuple[str, ...] = ()  # host names or patterns (gpu[01-16]), ~/.ssh/config aliases, localhost
    inventory: Path | None = None  # -i: an inventory YAML file
    user: str | None = None  # --user, --port, --identity-file: override the targets' and the inventory's
    port: int | None = None
    identity_file: str | None = None
    jump: str | None = None  # -J [user@]bastion[:port]: every host through this bastion (overrides the inventory's)
    limit: tuple[str, ...] = ()  # only these groups or host patterns
    exclude: tuple[str, ...] = ()  # leave out these host patterns
    local: bool = False  # also this machine, without SSH
    shard: tuple[int, int] | None = None  # --shard I/N as (I, N), counted from 1: a stable split by host name
    slurm: SlurmSelection | None = None
    """``--slurm-*``: Slurm's nodes replace the hosts (an inventory's or a target's host of the same name keeps
    its settings); ``--exclude`` and ``--shard`` still apply. None: no Slurm flag given."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Thresholds:
    """Check settings given on the command line; ``None``: not given. They win over the inventory's."""

    busy_utilization_pct: float | None = None  # --busy-util-pct
    low_power_pct: float | None = None  # --low-power-pct
    bandwidth_memory_utilization_pct: float | None = None  # --bandwidth-mem-util-pct

    def overrides(self) -> dict[str, float]:
        """The given ones, by :class:`~gpudiag.checks.CheckSettings` field name."""
        return {f.name: value for f in dataclasses.fields(self) if (value := getattr(self, f.name)) is not None}


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputRequest:
    """How the report is printed."""

    format: OutputFormat = OutputFormat.TABLE
    quiet: bool = False  # print nothing when all is well, only the findings when not
    samples_detail: bool = False  # JSON: every raw sample too, not only each GPU's combined readings
    width: int = 160  # the table's width in terminal cells (the CLI: the terminal's, or 160 for a pipe or file)
    fold: bool = True  # --no-fold: every host and GPU on its own row (a rendering choice; the JSON keeps all)
    progress: bool = False  # live progress on stderr while the sweep runs (the CLI decides: --progress, a tty)


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepRequest:
    """A sweep (or a watch, or a log search) as the flags ask for it, built once by the CLI."""

    sweep: SweepOptions
    """Sampling, limits, ``--source``, ``--log``/``--pack`` (``logs``). Its ``settings`` are the defaults:
    :func:`prepare` lays the inventory's settings and then :attr:`thresholds` over them."""
    hosts: HostSelection = field(default_factory=HostSelection)
    ssh: SshRequest = field(default_factory=SshRequest)
    thresholds: Thresholds = field(default_factory=Thresholds)
    inventory_settings: bool = True  # False: the inventory's check settings are not read (grep reads no GPU)
    demo: bool = False  # sweep the built-in simulated cluster instead of hosts
    output: OutputRequest = field(default_factory=OutputRequest)
    drain_on: DrainLevel | None = None  # --drain-on: drain the Slurm nodes with a finding at this level or worse
    dry_run: bool = True  # --dry-run/--yes: print the drain actions, or run them
    workers: int | None = 1  # --workers: processes that share the sweep (None: auto, from the cores and hosts)
    audit: AuditOptions | None = None
    """``sweep``'s scheduled-audit flags (``--history``, ``--notify``, ``--prom-file``, ``--output``, ...), checked
    here with the output format (:func:`gpudiag.audit.scheduled.check`); None for the commands that have none."""

    def __post_init__(self) -> None:
        if self.drain_on is not None and self.hosts.slurm is None:
            raise RequestError("--drain-on needs the nodes from Slurm: add --slurm-partition, --slurm-job, "
                               "--slurm-nodelist or --slurm-state")
        if self.workers != 1 and self.demo:
            raise RequestError("--workers: the demo cluster runs inside this one process; drop --workers or --demo")
        if self.audit is not None:
            from gpudiag.audit.scheduled import check

            check(self.audit, self.output.format)  # AuditConfigError (a ValueError): one line


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectedHosts:
    """The hosts a :class:`HostSelection` names, and the check settings their inventory sets."""

    hosts: tuple[Host, ...]
    settings: Mapping[str, object] = field(default_factory=dict)  # the inventory's ``settings:``, unchecked
    read_as: str | None = None  # what the inventory was read as, when not gpudiag's format (an Ansible one)
    slurm_nodes: Mapping[str, SlurmNode] | None = None  # the swept Slurm nodes by name, when Slurm gave the hosts


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedSweep:
    """A checked request: everything :func:`gpudiag.sweep.runner.sweep` takes, except the transport itself."""

    hosts: tuple[Host, ...]
    options: SweepOptions  # with the check settings the inventory and the flags set
    plans: Mapping[str, LogPlan]  # each host's log plan by host name, built once for the whole run
    ssh: SshOptions


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``--shard I/N`` as ``(I, N)``; None when not given. A bad value raises ``ShardError`` (one line)."""
    if text is None:
        return None
    from gpudiag.sweep.shard import parse_shard as parse

    return parse(text)


def select_hosts(selection: HostSelection) -> SelectedHosts:
    """The hosts from an inventory and/or ad hoc targets, in order, each once (the first wins)."""
    from gpudiag.model import Host
    from gpudiag.sources.inventory import hosts_from_patterns, load_inventory, select

    hosts: list[Host] = []
    settings: Mapping[str, object] = {}
    read_as = None
    user, port, identity_file = selection.user, selection.port, selection.identity_file
    if user is not None:
        from gpudiag.sources.inventory import check_user

        check_user(user)  # a NUL, a control character or a space fails before any connection
    if selection.inventory is not None:
        inventory = load_inventory(selection.inventory)
        hosts.extend(inventory.hosts)
        settings = dict(inventory.settings)
        read_as = inventory.read_as
    if selection.targets:
        hosts.extend(hosts_from_patterns(selection.targets, user=user, port=port, identity_file=identity_file))
    if selection.local:
        hosts.append(Host(name="localhost"))
    if selection.inventory is not None and (user or port or identity_file):
        hosts = [dataclasses.replace(h, user=user or h.user, port=port or h.port,
                                     identity_file=identity_file or h.identity_file) for h in hosts]
    if selection.jump is not None:
        from gpudiag.sources.inventory import valid_jump

        if not valid_jump(selection.jump):
            raise RequestError(f"-J {selection.jump}: expected [user@]host[:port] (an IPv6 host in brackets: "
                               "ops@[::1]:22)")
        hosts = [dataclasses.replace(h, jump=selection.jump) if not h.is_local else h for h in hosts]
    unique = {h.name: h for h in reversed(hosts)}  # a host given twice is swept once (first wins)
    chosen = select([h for h in hosts if unique.get(h.name) is h], selection.limit, selection.exclude)
    nodes = None
    if selection.slurm is not None:
        chosen, nodes = _slurm_hosts(selection.slurm, selection, chosen)
    if selection.shard is not None:
        from gpudiag.sweep.shard import select_shard

        chosen = select_shard(chosen, *selection.shard)
        if nodes is not None:
            nodes = {name: node for name, node in nodes.items() if name in {h.name for h in chosen}}
    return SelectedHosts(hosts=tuple(chosen), settings=settings, read_as=read_as, slurm_nodes=nodes)


def _slurm_hosts(wanted: SlurmSelection, selection: HostSelection,
                 known: Sequence[Host]) -> tuple[tuple[Host, ...], dict[str, SlurmNode]]:
    """The nodes Slurm gives for ``wanted`` as hosts (a ``known`` host of the same name is used as it is), less
    ``--exclude``; and the nodes by name. Slurm saying no raises :class:`RequestError` (one line)."""
    from gpudiag.sources.inventory import select
    from gpudiag.sources.slurm import SlurmError, hosts_for, select_nodes

    try:
        nodes = select_nodes(wanted)
    except SlurmError as exc:
        raise RequestError(str(exc)) from None
    if not nodes:
        raise RequestError("Slurm gave no nodes for the --slurm-* flags given")
    found = select(hosts_for(nodes, known, user=selection.user, port=selection.port,
                             identity_file=selection.identity_file), exclude=selection.exclude)
    if not found:
        raise RequestError("--exclude leaves none of the nodes Slurm gave")
    kept = {host.name for host in found}
    return found, {node.name: node for node in nodes if node.name in kept}


def _settings(request: SweepRequest, inventory: Mapping[str, object]) -> SweepOptions:
    """``request.sweep`` with the check settings: the defaults, the inventory's, then the flags'."""
    from gpudiag.checks import with_overrides

    settings = with_overrides(request.sweep.settings, inventory if request.inventory_settings else {})
    return dataclasses.replace(request.sweep, settings=with_overrides(settings, request.thresholds.overrides()))


def prepare(request: SweepRequest, selected: SelectedHosts) -> PreparedSweep:
    """Check ``request`` for ``selected`` hosts and build what the sweep needs, each thing once.

    Raises (one line each) ``SettingsError``, :class:`RequestError`, ``KeyLoadError``, ``LogConfigError``."""
    from gpudiag.logs import build_plans

    options = _settings(request, selected.settings)
    ssh = request.ssh.options(selected.hosts, keep_connections=options.stream)
    raise_open_file_limit(options.concurrency)
    plans = build_plans(selected.hosts, options.logs)  # a broken log entry or pack fails here
    return PreparedSweep(hosts=selected.hosts, options=options, plans=plans, ssh=ssh)


def prepare_demo(request: SweepRequest) -> tuple[SweepOptions, Planner, tuple[DemoNode, ...]]:
    """The demo's sweep options, log planner and nodes: ``--pack`` and ``--signature`` are checked here, before
    the demo cluster starts (the demo builds its hosts' plans from the planner once); targets, ``--limit``,
    ``--exclude`` and ``--shard`` pick among the demo's hosts. An option that cannot apply to the demo (an
    inventory, a user, an SSH config...) is refused in one line rather than silently ignored."""
    from gpudiag.demo.demo import select_demo_nodes
    from gpudiag.logs.plan import Planner

    given = demo_conflicts(request)
    if given:
        raise RequestError(f"--demo has its own hosts: {', '.join(given)} cannot apply "
                           f"(leave {'it' if len(given) == 1 else 'them'} out)")
    hosts = request.hosts
    nodes = select_demo_nodes(hosts.targets, hosts.limit, hosts.exclude, hosts.shard)
    options = _settings(request, {})
    return options, Planner(options.logs), nodes


def demo_conflicts(request: SweepRequest) -> list[str]:
    """The options given with ``--demo`` that cannot apply to it: where the hosts come from and how SSH
    reaches them (the demo has its own hosts, keys and known_hosts), and Slurm's drain."""
    hosts, ssh = request.hosts, request.ssh
    given = {"-i/--inventory": hosts.inventory is not None, "--user": hosts.user is not None,
             "--port": hosts.port is not None, "--identity-file": hosts.identity_file is not None,
             "--jump": hosts.jump is not None, "--local": hosts.local, "--slurm-*": hosts.slurm is not None,
             "--known-hosts": ssh.known_hosts is not None, "--ssh-config": ssh.ssh_config is not None,
             "--accept-new-host-keys": ssh.accept_new_host_keys, "--drain-on": request.drain_on is not None}
    return [name for name, present in given.items() if present]
