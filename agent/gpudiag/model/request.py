"""The settings one run is asked for, as frozen values: where each option's default is written, once.

Every option of the command line names the field it fills here (``(SweepOptions, "samples")``,
:mod:`gpudiag.cli.options`) and its default is read from that field, so a default lives in one place. The
values are the model's so that the command line can read them on start (``gpudiag sweep -h`` quotes them)
without importing a layer that sweeps; the layers that act on them (:mod:`gpudiag.run`, the sweep, the
transport, the audit) import them from here, or from where they are re-exported.

:class:`SweepRequest` is the whole request: built once by the CLI (one generic fill,
:func:`gpudiag.cli.build.request`), checked by :func:`gpudiag.run.request.check`, carried out by
:mod:`gpudiag.run`. Standard library only; see :mod:`gpudiag.model`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gpudiag.model.actions import Action
from gpudiag.model.changes import FlapRule
from gpudiag.model.choices import DrainLevel, OutputFormat, Source, Via
from gpudiag.model.jobs import JobAllocation
from gpudiag.model.settings import CheckSettings, VersionExpectation

DEFAULT_TAIL_MIB = 8.0  # a log's last MiB scanned when neither the entry nor --log-tail-mib says
# Also the defaults of the transport's own values (transport/ssh.py SshOptions, transport/base.py RemoteCommand),
# which a test or a lower layer builds without a request: one number each.
DEFAULT_DEADLINE_S = 30.0
DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_LOGIN_TIMEOUT_S = 10.0
DEFAULT_LOCK_WAIT_S = 10.0  # the history's (audit/history.py) when opened without a request
# Runs older than this are pruned unless --keep-days says otherwise: at the contrib's 5-minute cadence a
# 40-GPU fleet writes about 100 KB a run, so 30 days hold about 0.9 GB; the repeats (7 days) and the HTML
# trends (30 runs) need far less.
DEFAULT_KEEP_DAYS = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class LogOptions:
    """What the command line adds to every host's logs."""

    paths: tuple[str, ...] = ()  # --log
    pack_files: tuple[str, ...] = ()  # --pack
    tail_mib: float = DEFAULT_TAIL_MIB  # for entries that do not say
    only_signature: str | None = None  # gpudiag grep: search this one signature in every log
    keep: int = 3  # recent matching lines kept per signature
    discover: bool = True  # scan the logs of the inference servers found on the GPUs (their stdout/stderr)


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepOptions:
    """How to sweep: sampling, limits, thresholds (the CLI fills it once, :mod:`gpudiag.cli.build`)."""

    samples: int = 5
    interval_s: float = 0.5
    deadline_s: float = DEFAULT_DEADLINE_S
    # Hosts in flight. A host mostly waits (the 2 s sampling window, the network) and costs this side ~7 ms
    # of CPU, so 256 keep one core busy instead of waiting on the window 64 at a time.
    concurrency: int = 256
    stdout_limit_bytes: int = 4 * 1024 * 1024
    source: Source = Source.AUTO  # --source: NVML where it loads, else nvidia-smi; or nvidia-smi only
    raw_dir: Path | None = None  # keep each host's raw collector output here (<host>.json): captures, debugging
    logs: LogOptions = field(default_factory=LogOptions)  # --log, --pack: added to every host's inventory logs
    context: bool = True  # read the GPU topology and whether the node is a VM
    gpus: bool = True  # False: read no GPU (a log search)
    stream: bool = False  # watch: one collector process per host answers every refresh (a kept connection)
    idle_s: float | None = None  # watch: a kept collector asked nothing for this long leaves (None: its default)
    settings: CheckSettings = field(default_factory=CheckSettings)
    skip: tuple[str, ...] = ()  # --skip CODE: these finding codes are not reported (a check switched off)
    # The fleet step's inputs: the versions the operator expects per GPU model (--expect, [fleet]), and the GPUs
    # the scheduler gave each running job on the swept nodes (read once, before the sweep, where Slurm gave them)
    expectations: tuple[VersionExpectation, ...] = ()
    expect_action: Action = Action.WATCH  # --expect-action: the rung of a host off the operator's expectation
    allocations: tuple[JobAllocation, ...] = ()
    active: bool = False  # --active: the active test of the idle GPUs (gpudiag_node.active), within the deadline


@dataclass(frozen=True, slots=True, kw_only=True)
class SlurmSelection:
    """Which nodes to take from Slurm; the filters combine (a node must pass each one given)."""

    partitions: tuple[str, ...] = ()  # --slurm-partition gpu,debug
    job: str | None = None  # --slurm-job 81723: the job's allocated nodes
    nodelist: str | None = None  # --slurm-nodelist 'gpu[001-128]'
    states: tuple[str, ...] = ()  # --slurm-state drain,down,idle (sinfo's state names)

    @property
    def empty(self) -> bool:
        """No filter given: Slurm is not asked at all."""
        return not (self.partitions or self.job or self.nodelist or self.states)


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
    demo: bool = False  # also the built-in simulated cluster's hosts (gpudiag.sources.demo)
    shard: tuple[int, int] | None = None  # --shard I/N as (I, N), counted from 1: split by the run, not here
    slurm: SlurmSelection | None = None
    """``--slurm-*``: Slurm's nodes replace the hosts (an inventory's or a target's host of the same name keeps
    its settings); ``--exclude`` and ``--shard`` still apply. None: no Slurm flag given."""

    @property
    def partial(self) -> bool:
        """Whether the run sweeps only part of the hosts the sources give (--limit, --exclude, --shard): its
        groups are seen in part, so the checks across hosts (DRIVER_DRIFT) are not judged."""
        return bool(self.limit or self.exclude or self.shard)


@dataclass(frozen=True, slots=True, kw_only=True)
class SshRequest:
    """The SSH options the flags ask for; :func:`gpudiag.transport.build.ssh_options` makes the transport's
    options from them."""

    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    login_timeout_s: float = DEFAULT_LOGIN_TIMEOUT_S
    known_hosts: str | None = None  # None: ~/.ssh/known_hosts and gpudiag's own
    ssh_config: Path | None = None  # None: ~/.ssh/config
    accept_new_host_keys: bool = False
    max_startups: int | None = None  # --max-startups: handshakes at once per bastion and per sshd (None: default)
    connect_rate_per_s: float | None = None  # --connect-rate: new connections a second (None: no rate)
    max_handshakes: int | None = None  # at once in the whole sweep (None: the default); a worker's part of it


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditOptions:
    """The scheduled-audit flags of ``gpudiag sweep``, parsed once."""

    history: Path | None = None  # --history PATH
    keep_days: float | None = None  # --keep-days N: prune runs older than this (None: DEFAULT_KEEP_DAYS)
    lock_wait_s: float = DEFAULT_LOCK_WAIT_S  # --history-lock-wait S: then one line and exit 3
    only_changes: bool = False  # --only-changes: print only new and resolved findings
    flap: FlapRule = field(default_factory=FlapRule)  # --flap-changes K --flap-window M
    notify_urls: tuple[str, ...] = ()  # --notify URL (repeatable)
    notify_cmd: str | None = None  # --notify-cmd CMD (argv, no shell; JSON on stdin)
    renotify_s: float | None = None  # --renotify 12h: send a finding still open again after this long
    prom_file: Path | None = None  # --prom-file PATH
    output: Path | None = None  # --output FILE: the report, any format
    output_format: OutputFormat | None = None  # --output-format: the --output file's format (None: --format)
    json_file: Path | None = None  # --json-file FILE: also the whole report as JSON (an archive beside a mail)
    # The options that chose the run's hosts, as given ("--exclude", "gpu07", "--shard", "1/4"): kept with the
    # run in the history. Empty: every host of the source.
    selection: tuple[str, ...] = ()


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

    sweep: SweepOptions = field(default_factory=SweepOptions)
    """Sampling, limits, ``--source``, ``--log``/``--pack`` (``logs``). Its ``settings`` are the defaults:
    :func:`gpudiag.run.request.prepare` lays the inventory's settings and then :attr:`checks` over them."""
    hosts: HostSelection = field(default_factory=HostSelection)
    ssh: SshRequest = field(default_factory=SshRequest)
    checks: Mapping[str, object] = field(default_factory=dict)
    """The :class:`CheckSettings` given on the command line, by field name (``--low-power-pct 40``:
    ``{"low_power_pct": 40.0}``); they win over the inventory's."""
    inventory_settings: bool = True  # False: the inventory's check settings are not read (grep reads no GPU)
    output: OutputRequest = field(default_factory=OutputRequest)
    drain_on: DrainLevel | None = None  # --drain-on: a finding at this level or worse, or an action at least it
    dry_run: bool = True  # --dry-run/--yes: print the drain actions, or run them
    workers: int | None = 1  # --workers: processes that share the sweep (None: auto, from the cores and hosts)
    via: Via = Via.SSH  # --via: gpudiag's SSH fan-out, ClusterShell's, or one srun step
    clush_topology: Path | None = None  # --via clush: ClusterShell's topology.conf (None: its own default)
    audit: AuditOptions | None = None
    """``sweep``'s scheduled-audit flags (``--history``, ``--notify``, ``--prom-file``, ``--output``, ...), checked
    with the output format (:func:`gpudiag.audit.scheduled.check`); None for the commands that have none."""
