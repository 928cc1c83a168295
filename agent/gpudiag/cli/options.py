"""Every option of the gpudiag commands, declared once, in the groups that share a help panel; and
:data:`TAKES`, the one table of which groups each command takes (the commands and tests/unit/cli read it).

A group is taken whole: ``watch`` cannot lack ``--login-timeout`` while ``sweep`` has it. A command's own
options (``--every``, ``--listen``, ``--signature``...) stay in its module. Help texts are short: ``gpudiag
sweep -h`` at 80 columns cuts no option name (tests/unit/cli/test_options.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gpudiag.cli import config
from gpudiag.cli.params import Group, Param, Setting, Takes, ascii_port, takes
from gpudiag.model.actions import Action
from gpudiag.model.changes import FlapRule
from gpudiag.model.choices import DrainLevel, OutputFormat, Source, TextFormat, Via
from gpudiag.model.request import (
    AuditOptions,
    HostSelection,
    LogOptions,
    OutputRequest,
    SlurmSelection,
    SshRequest,
    SweepOptions,
    SweepRequest,
)
from gpudiag.model.settings import CheckSettings, VersionExpectation

HOSTS_PANEL, SSH_PANEL, SAMPLING_PANEL, CHECKS_PANEL = "Hosts", "SSH", "Sampling", "Checks"
LOGS_PANEL, OUTPUT_PANEL, AUDIT_PANEL, SLURM_PANEL, FLEET_PANEL = "Logs", "Output", "Audit", "Slurm", "Fleet"


def _check_default(field: str) -> str:
    """``(default 90)``: the default of a check setting, read from :class:`gpudiag.model.settings.CheckSettings`
    where it is declared (not through gpudiag.checks, whose package loads the checks and the signature packs)."""
    from gpudiag.model.settings import CheckSettings

    return f"(default {getattr(CheckSettings(), field):g})"


# How an option's text becomes its setting's value, imported where an option is given (not on start).
def _shard(text: str) -> tuple[int, int]:
    from gpudiag.sweep.shard import parse_shard

    return parse_shard(text)


def _workers(text: str) -> int | None:
    from gpudiag.sweep.workers import parse_workers

    return parse_workers(text)


def _rate(text: str) -> float | None:
    from gpudiag.transport.pacing import parse_rate

    return parse_rate(text)


def _duration(text: str) -> float | None:
    from gpudiag.audit.scheduled import parse_duration

    return parse_duration(text) if text else None


def _split(values: list[str]) -> tuple[str, ...]:
    if not values:
        return ()
    from gpudiag.sources.slurm import split_list

    return split_list(values)


# A parser of a repeatable option returns at once when none was given: the run's imports stay as they were.
def _codes(words: list[str]) -> tuple[str, ...]:
    if not words:
        return ()
    from gpudiag.checks.actions import finding_codes

    return finding_codes(words, flag="--skip")


def _expectations(texts: list[str]) -> tuple[VersionExpectation, ...]:
    if not texts:
        return ()
    from gpudiag.checks.settings import parse_expectations

    return parse_expectations(texts)


def _expect_action(text: str) -> Action:
    from gpudiag.checks.settings import parse_expect_action

    return parse_expect_action(text)


def _output_format(fmt: TextFormat) -> OutputFormat:
    return OutputFormat(fmt.value)


def _in(panel: str, *params: Param) -> Group:
    return Group(panel, tuple(p.but(panel=panel) for p in params))


TARGETS = Param(name="targets", type=list[str] | None, default=None, fills=Setting(HostSelection, "targets"),
                argument=True,
                help="Hosts or patterns (gpu[01-16]), ~/.ssh/config aliases, or localhost.")
INVENTORY = Param(name="inventory", type=Path | None, fills=Setting(HostSelection, "inventory"),
                  decls=("--inventory", "-i"),
                  panel=HOSTS_PANEL, help="Inventory YAML file.", extra={"metavar": "FILE"})
LIMIT = Param(name="limit", type=list[str], fills=Setting(HostSelection, "limit"),
              decls=("--limit",), panel=HOSTS_PANEL,
              extra={"metavar": "PATTERN"}, help="Only these groups or host patterns (repeatable).")
EXCLUDE = Param(name="exclude", type=list[str], fills=Setting(HostSelection, "exclude"),
                decls=("--exclude",), panel=HOSTS_PANEL,
                extra={"metavar": "PATTERN"}, help="Leave out these host patterns (repeatable).")
HOSTS = _in(HOSTS_PANEL,
    INVENTORY,
    Param(name="user", type=str | None, fills=Setting(HostSelection, "user"),
          decls=("--user", "-u"), help="SSH user for the targets.",
          extra={"metavar": "USER"}),
    Param(name="port", type=int | None, fills=Setting(HostSelection, "port"),
          decls=("--port", "-p"), help="SSH port for the targets.",
          extra={"metavar": "PORT", "parser": ascii_port}),
    Param(name="identity_file", type=str | None, fills=Setting(HostSelection, "identity_file"),
          decls=("--identity-file",),
          help="Private key (loaded once per run).", extra={"metavar": "FILE"}),
    Param(name="jump", type=str | None, fills=Setting(HostSelection, "jump"),
          decls=("--jump", "-J"), extra={"metavar": "HOST"},
          help="Reach every host through this bastion, \\[user@]host[:port] (ssh -J; an IPv6 one in brackets: "
               "ops@\\[::1]:22)."),
    LIMIT,
    EXCLUDE,
)
DEMO = Param(name="demo", type=bool, fills=Setting(HostSelection, "demo"), decls=("--demo",), panel=HOSTS_PANEL,
             help="The built-in simulated cluster, over real SSH on loopback (no GPU, no cluster needed).")
LOCAL = Param(name="local", type=bool, fills=Setting(HostSelection, "local"), decls=("--local",), panel=HOSTS_PANEL,
              help="Also this machine, without SSH.")



SSH = _in(SSH_PANEL,
    Param(name="connect_timeout", type=float, fills=Setting(SshRequest, "connect_timeout_s"),
          decls=("--connect-timeout",),
          extra={"min": 0.1, "metavar": "S"},
          help="Seconds from the TCP connect to a logged-in session, SSH banner, key exchange and authentication "
               "included (a dead host costs this much; the shorter of this and --login-timeout fires)."),
    Param(name="login_timeout", type=float, fills=Setting(SshRequest, "login_timeout_s"), decls=("--login-timeout",),
          extra={"min": 0.1, "metavar": "S"},
          help="Seconds from the TCP connection made to a logged-in session. Whichever of the two timeouts "
               "fires, the host is unreachable (timeout)."),
    Param(name="known_hosts", type=str | None, fills=Setting(SshRequest, "known_hosts"),
          decls=("--known-hosts",), extra={"metavar": "FILE"},
          help="known_hosts file to trust (default: ~/.ssh/known_hosts and gpudiag's own); with "
               "--accept-new-host-keys, new keys are recorded in it."),
    Param(name="ssh_config", type=Path | None, fills=Setting(SshRequest, "ssh_config"),
          decls=("--ssh-config", "-F"), extra={"metavar": "FILE"},
          help="OpenSSH client config to read instead of ~/.ssh/config (HostName, User, Port, IdentityFile...)."),
    Param(name="accept_new_host_keys", type=bool, fills=Setting(SshRequest, "accept_new_host_keys"),
          decls=("--accept-new-host-keys",),
          help="Record keys of hosts never seen before (never changed ones), as ssh's accept-new does: in "
               "--known-hosts FILE (or the inventory's known_hosts:) when "
               "given, else in gpudiag's own known_hosts."),
    Param(name="max_startups", type=int | None, fills=Setting(SshRequest, "max_startups"), decls=("--max-startups",),
          extra={"min": 1, "metavar": "N"},
          help="SSH handshakes under way at once per bastion and per sshd address (default 8: under OpenSSH's "
               "MaxStartups 10, past which sshd drops new connections). A logged-in session holds none."),
    Param(name="connect_rate", type=str | None, default=None, fills=Setting(SshRequest, "connect_rate_per_s", _rate),
          decls=("--connect-rate",), extra={"metavar": "N/s"},
          help="New SSH connections a second at most, e.g. 50/s or 3000/min (default: no rate, only "
               "--max-startups)."),
)
SAMPLING = _in(SAMPLING_PANEL,
    Param(name="samples", type=int, fills=Setting(SweepOptions, "samples"),
          decls=("--samples",), extra={"min": 1, "max": 600, "metavar": "N"},
          help="Samples per GPU (per refresh, for watch and exporter)."),
    Param(name="interval", type=float, fills=Setting(SweepOptions, "interval_s"), decls=("--interval",),
          extra={"min": 0.0, "max": 60.0, "metavar": "S"}, help="Seconds between samples."),
    Param(name="source", type=Source, fills=Setting(SweepOptions, "source"),
          decls=("--source",), extra={"metavar": "SOURCE"},
          help="auto: NVML where the bundled binding loads on the node, else nvidia-smi; nvidia-smi: never NVML."),
)
TIMEOUT = Param(name="timeout", type=float, fills=Setting(SweepOptions, "deadline_s"),
                decls=("--timeout",), panel=FLEET_PANEL,
                extra={"min": 1.0, "metavar": "S"},
                help="Per-host deadline for the collection (seconds); the remote process is ended.")
FLEET = _in(FLEET_PANEL,
    Param(name="concurrency", type=int, fills=Setting(SweepOptions, "concurrency"),
          decls=("--concurrency",), extra={"min": 1, "metavar": "N"},
          help="Hosts in flight at once."),
    TIMEOUT,
)
WORKERS = Param(name="workers", type=str, default="1", fills=Setting(SweepRequest, "workers", _workers),
                decls=("--workers",), panel=FLEET_PANEL,
                extra={"metavar": "N|auto"},
                help="Processes that share the sweep, each a shard of the hosts with its own event loop, merged "
                     "into one report (auto: one per usable core, at most 8, and at least 50 hosts each).")
VIA = _in(FLEET_PANEL,
    Param(name="via", type=Via, fills=Setting(SweepRequest, "via"), decls=("--via",),
          extra={"metavar": "ENGINE"},
          help="ssh (gpudiag's own), clush (ClusterShell: its gateway tree where topology.conf sets one) or "
               "slurm (one srun step; the nodes it cannot reach over SSH)."),
    Param(name="clush_topology", type=Path | None, fills=Setting(SweepRequest, "clush_topology"),
          decls=("--clush-topology",), extra={"metavar": "FILE"},
          help="--via clush: this topology.conf (default: ClusterShell's own)."),
)
SHARD = Param(name="shard", type=str | None, default=None, fills=Setting(HostSelection, "shard", _shard),
              decls=("--shard",), panel=FLEET_PANEL,
              extra={"metavar": "I/N"},
              help="Sweep only shard I of N (e.g. 1/4, or auto in a Slurm job array): a stable split by host "
                   "name; merge with gpudiag merge.")
CHECKS = _in(CHECKS_PANEL,
    # None: not given, so the inventory's or the default applies (laid over each other when the run is prepared)
    Param(name="busy_utilization_pct", type=float | None, default=None,
          fills=Setting(CheckSettings, "busy_utilization_pct"), decls=("--busy-util-pct",),
          extra={"metavar": "PCT"}, help="BUSY_LOW_POWER: utilization that counts as busy",
          late_help=lambda: _check_default("busy_utilization_pct") + "."),
    Param(name="low_power_pct", type=float | None, default=None, fills=Setting(CheckSettings, "low_power_pct"),
          decls=("--low-power-pct",), extra={"metavar": "PCT"},
          help="BUSY_LOW_POWER: power share of the enforced limit that counts as low",
          late_help=lambda: _check_default("low_power_pct") + "."),
    Param(name="bandwidth_memory_utilization_pct", type=float | None, default=None,
          fills=Setting(CheckSettings, "bandwidth_memory_utilization_pct"), decls=("--bandwidth-mem-util-pct",),
          extra={"metavar": "PCT"},
          help="BUSY_LOW_POWER: memory utilization meaning bandwidth-bound",
          late_help=lambda: _check_default("bandwidth_memory_utilization_pct") + "."),
    Param(name="skip", type=list[str], fills=Setting(SweepOptions, "skip", _codes), decls=("--skip",),
          extra={"metavar": "CODE"},
          help="Do not report this finding code (repeatable, or comma-separated): the check is off; e.g. "
               "POWER_LIMIT_REDUCED on nodes capped on purpose."),
    Param(name="expect", type=list[str], fills=Setting(SweepOptions, "expectations", _expectations),
          decls=("--expect",), extra={"metavar": "MODEL:FACT=V"},
          help="DRIVER_DRIFT: what a GPU model's hosts must run, e.g. \"NVIDIA H200:driver=580.159.04\" (FACT: "
               "driver, cuda, vbios; MODEL * for all; repeatable; the config's \\[fleet.\"MODEL\"])."),
    Param(name="expect_action", type=str | None, default=None,
          fills=Setting(SweepOptions, "expect_action", _expect_action), decls=("--expect-action",),
          extra={"metavar": "ACTION"},
          help="The action for a host off --expect (default watch; e.g. drain_and_inspect)."),
)
ACTIVE = Param(name="active", type=bool, fills=Setting(SweepOptions, "active"), decls=("--active",),
               panel=CHECKS_PANEL,
               help="Also load each idle GPU (no process, 0% busy, checked again just before) through the CUDA "
                    "driver: fp32 FMA rate, memory copy and PCIe bandwidth, judged against the model's published "
                    "figures and its peers. Costs ~4 s per node (at most 10, within --timeout) of full load on "
                    "the idle GPUs; a GPU in use is never touched.")
LOGS = _in(LOGS_PANEL,
    Param(name="log", type=list[str], fills=Setting(LogOptions, "paths"), decls=("--log",), extra={"metavar": "PATH"},
          help="Also scan this log (repeatable): a path (~ is the node's home) or @kernel (journalctl -k / dmesg: "
               "Xids)."),
    Param(name="pack", type=list[str], fills=Setting(LogOptions, "pack_files"),
          decls=("--pack",), extra={"metavar": "FILE"},
          help="A signature pack file (YAML) to use too (repeatable)."),
    Param(name="log_tail_mib", type=float, fills=Setting(LogOptions, "tail_mib"), decls=("--log-tail-mib",),
          extra={"min": 0.001, "max": 1024.0, "metavar": "MIB"},
          help="Scan only the last N MiB of each log (and its rotations)."),
)
FORMAT = Param(name="fmt", type=OutputFormat, fills=Setting(OutputRequest, "format"), decls=("--format", "-f"),
               panel=OUTPUT_PANEL, extra={"metavar": "FORMAT"},
               help="table, json or html (one self-contained page; sweep writes it to --output FILE).")
# inventory, grep and watch print a table (text) or JSON; --json was their flag before --format (kept, hidden).
TEXT_FORMAT = FORMAT.but(type=TextFormat, default=TextFormat.TABLE, help="table or json.",
                         fills=Setting(OutputRequest, "format", _output_format))
JSON_ALIAS = Param(name="deprecated_json", type=bool, default=False, decls=("--json",), panel=OUTPUT_PANEL,
                   help="Deprecated: --format json.", extra={"hidden": True})
QUIET = Param(name="quiet", type=bool, fills=Setting(OutputRequest, "quiet"),
              decls=("--quiet", "-q"), panel=OUTPUT_PANEL,
              help="For cron: print nothing when all is well (exit 0), only the findings when not.")
FOLD = Param(name="fold", type=bool, fills=Setting(OutputRequest, "fold"),
             decls=("--fold/--no-fold",), panel=OUTPUT_PANEL,
             help="Fold hosts (and GPUs of a host) that read the same into one row, as clush -b does; --no-fold "
                  "shows every row (the JSON always has every host).")
PROGRESS = Param(name="progress", type=bool | None, default=None, decls=("--progress/--no-progress",),
                 panel=OUTPUT_PANEL, extra={"show_default": False},
                 help="Live progress on stderr while hosts answer (default: when stdout and stderr are a terminal "
                      "and not --quiet).")
SAMPLES_DETAIL = Param(name="samples_detail", type=bool, fills=Setting(OutputRequest, "samples_detail"),
                       decls=("--samples-detail",),
                       panel=OUTPUT_PANEL, help="JSON: also every raw sample of each GPU (by default each GPU's "
                                                "combined readings and its sample count).")
OUTPUT = Param(name="output", type=Path | None, fills=Setting(AuditOptions, "output"),
               decls=("--output", "-o"), panel=OUTPUT_PANEL,
               extra={"metavar": "FILE"},
               help="Write the report (any --format) to this file, not stdout; stdout gets one summary line "
                    "(none with --quiet). The exit code is the same.")
SAVE_RAW = Param(name="save_raw", type=Path | None, fills=Setting(SweepOptions, "raw_dir"),
                 decls=("--save-raw",), panel=OUTPUT_PANEL,
                 extra={"metavar": "DIR"},
                 help="Also keep each host's raw collector document in this folder (<host>.json): captures for "
                      "tests.")
AUDIT = _in(AUDIT_PANEL,
    Param(name="history", type=Path | None, fills=Setting(AuditOptions, "history"),
          decls=("--history",), extra={"metavar": "FILE"},
          help="Record each run in this SQLite file and say what changed (e.g. history.sqlite in "
               "~/.local/state/gpudiag)."),
    Param(name="keep_days", type=float | None, fills=Setting(AuditOptions, "keep_days"),
          decls=("--keep-days",), extra={"metavar": "DAYS"},
          help="Prune recorded runs older than this many days (default 30)."),
    Param(name="history_lock_wait", type=float, fills=Setting(AuditOptions, "lock_wait_s"),
          decls=("--history-lock-wait",),
          extra={"min": 0.0, "metavar": "S"}, help="Seconds to wait for another run's history write, then exit 3."),
    Param(name="only_changes", type=bool, fills=Setting(AuditOptions, "only_changes"), decls=("--only-changes",),
          help="Print only new and resolved findings (nothing when nothing changed); the exit code still says "
               "the current state."),
    Param(name="flap_changes", type=int, fills=Setting(FlapRule, "changes"),
          decls=("--flap-changes",), extra={"min": 2, "metavar": "N"},
          help="A finding that changed state this many times..."),
    Param(name="flap_window", type=int, fills=Setting(FlapRule, "window"),
          decls=("--flap-window",), extra={"min": 2, "metavar": "RUNS"},
          help="...in this many runs is flapping: said once, then not announced while it flaps."),
    Param(name="notify", type=list[str], fills=Setting(AuditOptions, "notify_urls"),
          decls=("--notify",), extra={"metavar": "URL"},
          help="Send new, resolved and re-notified findings to this URL (repeatable): an http(s) webhook gets a "
               "JSON POST; other schemes need Apprise."),
    Param(name="notify_cmd", type=str | None, fills=Setting(AuditOptions, "notify_cmd"),
          decls=("--notify-cmd",), extra={"metavar": "CMD"},
          help="Run this command (no shell) with the change set as JSON on stdin."),
    Param(name="renotify", type=str | None, default=None, fills=Setting(AuditOptions, "renotify_s", _duration),
          decls=("--renotify",), extra={"metavar": "AFTER"},
          help="Send a finding still open again after this long (12h, 30m, 2d)."),
    Param(name="prom_file", type=Path | None, fills=Setting(AuditOptions, "prom_file"),
          decls=("--prom-file",), extra={"metavar": "FILE"},
          help="Write the node_exporter textfile-collector file (PATH.prom, atomically); a partial run keeps "
               "the other hosts, marked as carried."),
    Param(name="output_format", type=OutputFormat | None, fills=Setting(AuditOptions, "output_format"),
          decls=("--output-format",), extra={"metavar": "FORMAT"},
          help="The --output file's format (default: --format): e.g. a text mail on stdout and the JSON in "
               "the file."),
    Param(name="json_file", type=Path | None, fills=Setting(AuditOptions, "json_file"),
          decls=("--json-file",), extra={"metavar": "FILE"},
          help="Also write the whole report as JSON to this file (the archive beside a short text mail)."),
)
SLURM_PARTITION = Param(name="slurm_partition", type=list[str], fills=Setting(SlurmSelection, "partitions", _split),
                        decls=("--slurm-partition",),
                        panel=SLURM_PANEL, extra={"metavar": "NAME"},
                        help="Sweep the nodes of this Slurm partition (repeatable, or comma-separated).")
SLURM_NODELIST = Param(name="slurm_nodelist", type=str | None, fills=Setting(SlurmSelection, "nodelist"),
                       decls=("--slurm-nodelist",),
                       panel=SLURM_PANEL, extra={"metavar": "NODES"},
                       help="Sweep these Slurm nodes ('gpu\\[001-128]'), expanded by scontrol show hostnames.")
SLURM = Group(SLURM_PANEL, (
    SLURM_PARTITION,
    Param(name="slurm_job", type=str | None, fills=Setting(SlurmSelection, "job"),
          decls=("--slurm-job",), panel=SLURM_PANEL,
          extra={"metavar": "JOB"}, help="Sweep the nodes allocated to this Slurm job."),
    SLURM_NODELIST,
    Param(name="slurm_state", type=list[str], fills=Setting(SlurmSelection, "states", _split),
          decls=("--slurm-state",), panel=SLURM_PANEL,
          extra={"metavar": "STATE"},
          help="Only Slurm nodes in these states (sinfo -t names: drain, down, idle, mixed...)."),
))
DRY_RUN = Param(name="dry_run", type=bool, fills=Setting(SweepRequest, "dry_run"),
                decls=("--dry-run/--yes",), panel=SLURM_PANEL,
                help="Print the drain/resume actions (default) or run them.")
DRAIN = Group(SLURM_PANEL, (
    Param(name="drain_on", type=DrainLevel | None, fills=Setting(SweepRequest, "drain_on"),
          decls=("--drain-on",), panel=SLURM_PANEL,
          extra={"metavar": "LEVEL"},
          help="Drain (scontrol) the Slurm nodes with a finding at this level (warning, critical) or worse, or "
               "whose action is at least this one (watch, restart_workload, reset_gpu, check_node, reboot_node, "
               "drain_and_inspect, replace_gpu). A dry run unless --yes."),
    DRY_RUN,
))
UNDRAIN_LEVEL = DRAIN.members[0].but(type=DrainLevel, default=DrainLevel.CRITICAL,
                                     help="The level the nodes were drained on: a node resumes when it has no "
                                          "finding at this level or worse (an action: its action is below it).")


CONFIG = Param(name="config", type=Path | None, default=None, decls=("--config",),
               help="Read option values from this TOML file (\\[sweep], \\[watch]... tables; \\[defaults] for every "
                    "command). Default: $XDG_CONFIG_HOME/gpudiag/config.toml when it exists.",
               extra={"envvar": config.ENV, "is_eager": True, "callback": config.load, "metavar": "FILE",
                      "show_envvar": False})

# What every command that reaches hosts takes: where they are and how SSH gets there, and the fan-out.
REACHING_HOSTS: tuple[Group, ...] = (HOSTS, SSH, FLEET)

# The one table: what each command takes besides its own options (the order is the help's panel order).
# tests/unit/cli/test_options.py reads it and checks every command's click options against it.
TAKES: dict[str, tuple[Takes, ...]] = {
    "sweep": (TARGETS, *REACHING_HOSTS, DEMO, LOCAL, SAMPLING, CHECKS, ACTIVE, LOGS, FORMAT, QUIET, FOLD, PROGRESS,
              SAMPLES_DETAIL, OUTPUT, SAVE_RAW, AUDIT, SLURM, DRAIN, WORKERS, SHARD, VIA),
    "local": (SAMPLING, TIMEOUT, CHECKS, ACTIVE, LOGS, FORMAT, QUIET, FOLD, SAMPLES_DETAIL),
    "inventory": (INVENTORY.but(type=Path, default=...), LIMIT, EXCLUDE, TEXT_FORMAT, JSON_ALIAS, FOLD),
    "watch": (TARGETS, *REACHING_HOSTS, DEMO, SAMPLING.but(samples=2), CHECKS,
              TEXT_FORMAT.but(help="table (the live view) or json: one gpudiag.sweep/4 document per refresh, one "
                                   "a line (JSON Lines).")),
    "merge": (FORMAT, QUIET, FOLD),
    "signatures": (),
    "grep": (TARGETS, *REACHING_HOSTS, DEMO, LOCAL, LOGS, TEXT_FORMAT, JSON_ALIAS, FOLD, PROGRESS, WORKERS),
    "undrain": (*REACHING_HOSTS, SLURM_PARTITION, SLURM_NODELIST, UNDRAIN_LEVEL, DRY_RUN, SAMPLING, CHECKS, FORMAT),
    "history": (),
    "exporter": (TARGETS, *REACHING_HOSTS, DEMO, SAMPLING.but(samples=2), CHECKS),
}


def command(name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Decorate the command ``name`` with what :data:`TAKES` says it takes."""
    return takes(name, *TAKES[name], CONFIG)
