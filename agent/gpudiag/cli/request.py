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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpudiag.report import OutputFormat
from gpudiag.sources.selection import HostSelection, SelectedHosts
from gpudiag.transport.build import SshRequest, raise_open_file_limit
from gpudiag.transport.limits import kept_for

__all__ = ["HostSelection", "OutputRequest", "PreparedSweep", "RequestError", "SelectedHosts", "SweepRequest",
           "Thresholds", "demo_conflicts", "parse_shard", "prepare", "prepare_demo", "select_hosts"]

if TYPE_CHECKING:
    from gpudiag.audit.scheduled import AuditOptions
    from gpudiag.demo.demo import DemoNode
    from gpudiag.logs import LogPlan
    from gpudiag.logs.plan import Planner
    from gpudiag.model import GroupNote, Host
    from gpudiag.model.choices import DrainLevel
    from gpudiag.sweep.runner import SweepOptions
    from gpudiag.transport.ssh import SshOptions


class RequestError(ValueError):
    """The request cannot be carried out as given; the message is one line for the operator."""


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
    drain_on: DrainLevel | None = None  # --drain-on: a finding at this level or worse, or an action at least it
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
class PreparedSweep:
    """A checked request: everything :func:`gpudiag.sweep.runner.sweep` takes, except the transport itself."""

    hosts: tuple[Host, ...]
    options: SweepOptions  # with the check settings the inventory and the flags set
    plans: Mapping[str, LogPlan]  # each host's log plan by host name, built once for the whole run
    ssh: SshOptions
    notes: tuple[str, ...] = ()  # lines for the operator (the kept connections the open-file limit does not fit)
    report_notes: tuple[GroupNote, ...] = ()  # what the report says once (Slurm's GPU allocations not read)


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``--shard I/N`` as ``(I, N)``; None when not given. A bad value raises ``ShardError`` (one line)."""
    if text is None:
        return None
    from gpudiag.sweep.shard import parse_shard as parse

    return parse(text)


def select_hosts(selection: HostSelection) -> SelectedHosts:
    """The hosts every source of ``selection`` gives (:func:`gpudiag.sources.selection.select_hosts`), then
    ``--shard``'s part of them (a stable split by host name, the Slurm nodes with it)."""
    from gpudiag.sources.selection import select_hosts as from_sources

    selected = from_sources(selection)
    if selection.shard is None:
        return selected
    from gpudiag.sweep.shard import select_shard

    chosen = select_shard(selected.hosts, *selection.shard)
    names = {h.name for h in chosen}
    nodes = selected.slurm_nodes
    return dataclasses.replace(selected, hosts=tuple(chosen), slurm_nodes=None if nodes is None else {
        name: node for name, node in nodes.items() if name in names})


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
    notes: tuple[str, ...] = ()
    if options.stream:  # watch, the exporter: each kept connection holds a descriptor for the whole run
        fit = kept_for(len(selected.hosts), options.concurrency)
        ssh.max_kept = fit.kept if fit.note is not None else None
        options = dataclasses.replace(options, concurrency=fit.window)
        notes = (fit.note,) if fit.note is not None else ()
    else:
        raise_open_file_limit(options.concurrency)
    plans = build_plans(selected.hosts, options.logs)  # a broken log entry or pack fails here
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
