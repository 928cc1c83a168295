"""The ``gpudiag`` command: the only code that prints or sets the exit code.

Exit codes, for cron and Nagios: 0 all well, 1 a warning (or a reading that should be there is missing),
2 a critical finding or a host that did not answer, 3 gpudiag could not run (bad inventory, bad flags).
Click reports usage errors with exit 2 by default; :func:`main` turns them into 3 so that 2 always
means "something on the cluster is critical".
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from gpudiag import cli_audit
from gpudiag import cli_options as opt
from gpudiag.report import OutputFormat

if TYPE_CHECKING:  # the CLI imports the heavy layers lazily, so `gpudiag --help` starts fast
    from gpudiag.checks import CheckSettings
    from gpudiag.logs import LogOptions
    from gpudiag.model import Host, RemoteResult, SweepReport
    from gpudiag.runner import SweepOptions
    from gpudiag.transport import RemoteCommand, Transport

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False)
T = TypeVar("T")

EXIT_CANNOT_RUN = 3
_EVENT_LOOP = {"name": "asyncio"}


@app.callback()
def _global(event_loop: str = typer.Option("asyncio", "--event-loop", envvar="GPUDIAG_EVENT_LOOP",
                                           help="asyncio (default) or uvloop (faster, when installed).")) -> None:
    """Agentless GPU health sweep over SSH: what is wrong with the GPUs of a cluster."""
    if event_loop not in ("asyncio", "uvloop"):
        raise _fail(f"--event-loop {event_loop}: choose asyncio or uvloop")
    _EVENT_LOOP["name"] = event_loop


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the chosen event loop; uvloop falls back to asyncio, saying so, when not installed."""
    if _EVENT_LOOP["name"] == "uvloop":
        try:
            import uvloop
        except ImportError:
            typer.echo("gpudiag: uvloop is not installed; using asyncio", err=True)
        else:
            loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
            try:
                asyncio.set_event_loop(loop)
                return loop.run_until_complete(coro)
            finally:
                asyncio.set_event_loop(None)
                loop.close()
    return asyncio.run(coro)


class CannotRun(Exception):
    """gpudiag cannot start: the message is one line for the operator."""


def _fail(message: str) -> typer.Exit:
    typer.echo(f"gpudiag: {message}", err=True)
    return typer.Exit(EXIT_CANNOT_RUN)


def _select_hosts(targets: list[str], inventory: Path | None, user: str | None, port: int | None,
                  identity_file: str | None, limit: list[str], exclude: list[str],
                  local: bool) -> tuple[list[Host], dict[str, object]]:
    """(hosts, inventory check overrides) from an inventory and/or ad hoc targets."""
    from gpudiag.inventory import hosts_from_patterns, load_inventory, select
    from gpudiag.model import Host  # noqa: F811 - at run time, not only for the type checker

    hosts: list[Host] = []
    overrides: dict[str, object] = {}
    if inventory is not None:
        inv = load_inventory(inventory)
        hosts.extend(inv.hosts)
        overrides = dict(inv.settings)
    if targets:
        hosts.extend(hosts_from_patterns(targets, user=user, port=port, identity_file=identity_file))
    if local:
        hosts.append(Host(name="localhost"))
    if inventory is not None and (user or port or identity_file):
        import dataclasses
        hosts = [dataclasses.replace(h, user=user or h.user, port=port or h.port,
                                     identity_file=identity_file or h.identity_file) for h in hosts]
    unique = {h.name: h for h in reversed(hosts)}  # a host given twice is swept once (first wins)
    hosts = [h for h in hosts if unique.get(h.name) is h]
    hosts = list(select(tuple(hosts), limit=limit, exclude=exclude))
    return hosts, overrides


def _settings(overrides: dict[str, object], flags: dict[str, float | None]) -> CheckSettings:
    from gpudiag.checks import CheckSettings, with_overrides

    settings = with_overrides(CheckSettings(), overrides)
    return with_overrides(settings, {k: v for k, v in flags.items() if v is not None})


class _RoutingTransport:
    """``localhost`` runs here without SSH; every other host goes over SSH."""

    def __init__(self, ssh: Transport, local: Transport) -> None:
        self.ssh, self.local = ssh, local

    async def run(self, host: Host, command: RemoteCommand) -> RemoteResult:
        return await (self.local if host.is_local else self.ssh).run(host, command)

    async def close(self) -> None:
        await self.ssh.close()


@app.command()
def sweep(
    targets: list[str] = typer.Argument(None, help="Hosts or patterns (gpu[01-16]), ~/.ssh/config aliases, "
                                                   "or localhost."),
    inventory: Path | None = opt.INVENTORY,
    user: str | None = opt.USER,
    port: int | None = opt.PORT,
    identity_file: str | None = opt.IDENTITY_FILE,
    limit: list[str] = opt.LIMIT,
    exclude: list[str] = opt.EXCLUDE,
    demo: bool = typer.Option(False, "--demo", help="Sweep a built-in simulated cluster over real SSH on "
                                                    "loopback (no GPU, no cluster needed)."),
    local: bool = typer.Option(False, "--local", help="Also read this machine's GPUs, without SSH."),
    fmt: OutputFormat = opt.FORMAT,
    concurrency: int = opt.CONCURRENCY,
    connect_timeout: float = opt.CONNECT_TIMEOUT,
    login_timeout: float = opt.LOGIN_TIMEOUT,
    timeout: float = opt.TIMEOUT,
    samples: int = opt.SAMPLES,
    interval: float = opt.INTERVAL,
    source: str = opt.SOURCE,
    known_hosts: str | None = opt.KNOWN_HOSTS,
    ssh_config: Path | None = opt.SSH_CONFIG,
    accept_new_host_keys: bool = opt.ACCEPT_NEW,
    busy_utilization_pct: float | None = typer.Option(None, "--busy-util-pct", help="BUSY_LOW_POWER: "
                                                         "utilization that counts as busy (default 90)."),
    low_power_pct: float | None = typer.Option(None, "--low-power-pct", help="BUSY_LOW_POWER: power "
                                                  "share of the enforced limit that counts as low (60)."),
    bandwidth_pct: float | None = typer.Option(None, "--bandwidth-mem-util-pct", help="BUSY_LOW_POWER: "
                                                  "memory utilization meaning bandwidth-bound (60)."),
    shard: str | None = typer.Option(None, "--shard", help="Sweep only shard I of N (e.g. 1/4): a stable "
                                     "split by host name, for several controllers; merge with gpudiag merge."),
    save_raw: Path | None = typer.Option(None, "--save-raw", help="Also keep each host's raw collector "
                                         "document in this folder (<host>.json): captures for tests."),
    log: list[str] = opt.LOG,
    pack: list[str] = opt.PACK,
    log_tail_mib: float = opt.LOG_TAIL_MIB,
    quiet: bool = opt.QUIET,
    history: Path | None = cli_audit.HISTORY, keep_days: float | None = cli_audit.KEEP_DAYS,
    history_lock_wait: float = cli_audit.LOCK_WAIT, only_changes: bool = cli_audit.ONLY_CHANGES,
    flap_changes: int = cli_audit.FLAP_CHANGES, flap_window: int = cli_audit.FLAP_WINDOW,
    notify: list[str] = cli_audit.NOTIFY, notify_cmd: str | None = cli_audit.NOTIFY_CMD,
    renotify: str | None = cli_audit.RENOTIFY, prom_file: Path | None = cli_audit.PROM_FILE,
    output: Path | None = cli_audit.OUTPUT,
) -> None:
    """Sweep hosts over SSH, read their GPUs and logs, and report what is wrong."""
    from gpudiag.audit import AuditConfigError, audit, check
    from gpudiag.checks import SettingsError
    from gpudiag.inventory import InventoryError
    from gpudiag.transport import KeyLoadError

    try:
        audit_options = cli_audit.audit_options(
            history=history, keep_days=keep_days, lock_wait_s=history_lock_wait, only_changes=only_changes,
            flap_changes=flap_changes, flap_window=flap_window, notify=notify, notify_cmd=notify_cmd,
            renotify=renotify, prom_file=prom_file, output=output, quiet=quiet)
        check(audit_options, fmt)
        logs = _log_options(log, pack, log_tail_mib)
        if demo:
            report = _run_demo(samples, interval, timeout, concurrency, logs)
        else:
            hosts, overrides = _select_hosts(targets or [], inventory, user, port, identity_file, limit,
                                             exclude, local)
            if shard is not None:
                from gpudiag.shard import parse_shard, select_shard

                hosts = list(select_shard(hosts, *parse_shard(shard)))
            if not hosts and shard is None:
                raise CannotRun("no hosts to sweep: give targets, -i INVENTORY, --local or --demo")
            settings = _settings(overrides, {"busy_utilization_pct": busy_utilization_pct,
                                             "low_power_pct": low_power_pct,
                                             "bandwidth_memory_utilization_pct": bandwidth_pct})
            report = _run_sweep(hosts, settings, samples=samples, interval=interval, timeout=timeout,
                                concurrency=concurrency, connect_timeout=connect_timeout,
                                login_timeout=login_timeout, known_hosts=known_hosts,
                                accept_new=accept_new_host_keys, ssh_config=ssh_config, source=source,
                                raw_dir=save_raw, logs=logs)
    except (InventoryError, KeyLoadError, SettingsError, CannotRun, AuditConfigError, ValueError) as exc:
        raise _fail(str(exc)) from None
    outcome = audit(report, fmt, audit_options, color=sys.stdout.isatty())
    for line in outcome.stderr:
        typer.echo(f"gpudiag: {line}", err=True)
    if outcome.stdout:
        typer.echo(outcome.stdout)
    raise typer.Exit(outcome.exit_code)


def _prepare(hosts: list[Host], settings: CheckSettings, *, samples: int, interval: float, timeout: float,
             concurrency: int, connect_timeout: float, login_timeout: float, known_hosts: str | None,
             accept_new: bool, ssh_config: Path | None = None, source: str = "auto",
             raw_dir: Path | None = None, keep_connections: bool = False, logs: LogOptions | None = None,
             gpus: bool = True) -> tuple[Transport, SweepOptions]:
    """The transport and sweep options the flags ask for; configuration errors raise before any connection."""
    from gpudiag.runner import SweepOptions
    from gpudiag.transport import LocalTransport, SshOptions, SshTransport

    options = SshOptions(connect_timeout_s=connect_timeout, login_timeout_s=login_timeout,
                         accept_new_host_keys=accept_new, keep_connections=keep_connections)
    if known_hosts:
        options.known_hosts = (known_hosts,)
    if ssh_config is not None:
        if not ssh_config.is_file():
            raise CannotRun(f"{ssh_config}: no such SSH config file")
        options.ssh_config = [str(ssh_config)]
    for host in hosts:  # a key that cannot be read is a configuration error: fail before any connection
        if host.identity_file:
            options.keyring.load(host.identity_file)
    if source not in ("auto", "nvidia-smi"):
        raise CannotRun(f"--source {source}: choose auto or nvidia-smi")
    _raise_open_file_limit(concurrency)
    from gpudiag.logs import LogOptions, build_plans

    logs = logs or LogOptions()
    build_plans(hosts, logs)  # a broken log entry or pack fails here (LogConfigError), before any connection
    sweep_options = SweepOptions(samples=samples, interval_s=interval, deadline_s=timeout,
                                 concurrency=concurrency, settings=settings, source=source, raw_dir=raw_dir,
                                 logs=logs, gpus=gpus, context=gpus, stream=keep_connections)
    return _RoutingTransport(SshTransport(options), LocalTransport()), sweep_options


def _run_sweep(hosts: list[Host], settings: CheckSettings, **flags: Any) -> SweepReport:
    from gpudiag.runner import sweep as run_sweep

    transport, sweep_options = _prepare(hosts, settings, **flags)
    return run_async(run_sweep(hosts, transport, sweep_options))


def _run_demo(samples: int, interval: float, timeout: float, concurrency: int, logs: LogOptions | None = None,
              gpus: bool = True) -> SweepReport:
    from gpudiag.logs import build_plans
    from gpudiag.simulate.demo import sweep_demo

    if logs is not None:
        build_plans([], logs)  # --pack and --signature are checked before the demo cluster starts
    return run_async(sweep_demo(samples=samples, interval_s=interval, deadline_s=timeout,
                                  concurrency=concurrency, logs=logs, gpus=gpus))


def _log_options(paths: list[str], packs: list[str], tail_mib: float, signature: str | None = None,
                 keep: int = 3) -> LogOptions:
    from gpudiag.logs import LogOptions

    return LogOptions(paths=tuple(paths), pack_files=tuple(packs), tail_mib=tail_mib, only_signature=signature,
                      keep=keep)


def _raise_open_file_limit(concurrency: int) -> None:
    """Each host in flight holds a socket or two: raise the soft limit toward the hard one if needed."""
    try:
        import resource
    except ImportError:  # not on this platform
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = concurrency * 4 + 64
    if soft != resource.RLIM_INFINITY and soft < wanted:
        new = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))


@app.command()
def local(
    fmt: OutputFormat = opt.FORMAT,
    samples: int = opt.SAMPLES,
    interval: float = opt.INTERVAL,
    timeout: float = opt.TIMEOUT,
    source: str = opt.SOURCE,
    log: list[str] = opt.LOG,
    pack: list[str] = opt.PACK,
    log_tail_mib: float = opt.LOG_TAIL_MIB,
    quiet: bool = opt.QUIET,
) -> None:
    """Read this machine's GPUs (no SSH) and logs, through the same checks and report."""
    from gpudiag.checks import CheckSettings
    from gpudiag.model import Host, SmiStatus

    try:
        report = _run_sweep([Host(name="localhost")], CheckSettings(), samples=samples, interval=interval,
                            timeout=timeout, concurrency=1, connect_timeout=10.0, login_timeout=10.0,
                            known_hosts=None, accept_new=False, source=source,
                            logs=_log_options(log, pack, log_tail_mib))
    except (CannotRun, ValueError) as exc:
        raise _fail(str(exc)) from None
    code = report.exit_code
    (host,) = report.hosts
    no_gpu = host.readings is not None and host.readings.smi_status is SmiStatus.MISSING
    if quiet and code == 0:
        pass
    elif no_gpu and fmt is OutputFormat.TABLE and not log:  # with --log, the logs' findings still count
        why = host.readings.nvml_unavailable if host.readings else None
        typer.echo("gpudiag: no NVIDIA GPU can be read on this machine: nvidia-smi is not installed"
                   + (f" and NVML does not load ({why})" if why else ""))
    else:
        from gpudiag.report import render

        typer.echo(render(report, fmt))
    raise typer.Exit(code)


@app.command("inventory")
def inventory_cmd(
    inventory: Path = typer.Option(..., "--inventory", "-i", help="Inventory YAML file."),
    limit: list[str] = typer.Option([], "--limit", help="Only these groups or host patterns."),
    exclude: list[str] = typer.Option([], "--exclude", help="Leave out these host patterns."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Print the expanded host list with each host's effective settings."""
    import json

    from gpudiag.inventory import InventoryError, describe

    try:
        hosts, _ = _select_hosts([], inventory, None, None, None, limit, exclude, False)
    except (InventoryError, ValueError) as exc:
        raise _fail(str(exc)) from None
    rows = describe(hosts)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    from gpudiag.report.inventory_table import render_inventory

    typer.echo(render_inventory(rows), nl=False)


@app.command()
def watch(
    targets: list[str] = typer.Argument(None, help="Hosts or patterns, as for sweep."),
    inventory: Path | None = opt.INVENTORY,
    user: str | None = opt.USER,
    port: int | None = opt.PORT,
    identity_file: str | None = opt.IDENTITY_FILE,
    limit: list[str] = opt.LIMIT,
    exclude: list[str] = opt.EXCLUDE,
    every: float = typer.Option(5.0, "--every", min=0.0, help="Seconds from one refresh to the next."),
    count: int = typer.Option(0, "--count", min=0, help="Stop after this many refreshes (0: until Ctrl-C)."),
    samples: int = typer.Option(2, "--samples", min=1, max=600, help="Samples per GPU per refresh."),
    interval: float = opt.INTERVAL,
    concurrency: int = opt.CONCURRENCY,
    connect_timeout: float = opt.CONNECT_TIMEOUT,
    timeout: float = opt.TIMEOUT,
    known_hosts: str | None = opt.KNOWN_HOSTS,
    ssh_config: Path | None = opt.SSH_CONFIG,
    plain: bool = typer.Option(False, "--plain", help="Print each refresh below the last (no redraw)."),
) -> None:
    """Keep one connection per host and refresh a live view: bars, findings as they appear and clear."""
    from gpudiag.inventory import InventoryError
    from gpudiag.report.live import LiveScreen, render_watch
    from gpudiag.transport import KeyLoadError
    from gpudiag.watch import watch as run_watch

    try:
        hosts, overrides = _select_hosts(targets or [], inventory, user, port, identity_file, limit, exclude, False)
        if not hosts:
            raise CannotRun("no hosts to watch: give targets or -i INVENTORY")
        settings = _settings(overrides, {})
        transport, options = _prepare(hosts, settings, samples=samples, interval=interval, timeout=timeout,
                                      concurrency=concurrency, connect_timeout=connect_timeout, login_timeout=10.0,
                                      known_hosts=known_hosts, accept_new=False, ssh_config=ssh_config,
                                      keep_connections=True)
    except (InventoryError, KeyLoadError, CannotRun, ValueError) as exc:
        raise _fail(str(exc)) from None
    live = sys.stdout.isatty() and not plain
    screen = LiveScreen() if live else None

    def show(refresh: int, report: SweepReport, change: Any) -> None:
        text = render_watch(refresh, count, report, appeared=change.appeared, cleared=change.cleared, color=live)
        if screen is not None:
            screen.show(text)
        else:
            typer.echo(text)

    try:
        if screen is not None:
            with screen:
                last = run_async(run_watch(hosts, transport, options, every_s=every, count=count, on_refresh=show))
        else:
            last = run_async(run_watch(hosts, transport, options, every_s=every, count=count, on_refresh=show))
    except KeyboardInterrupt:
        typer.echo("gpudiag: watch stopped", err=True)
        raise typer.Exit(130) from None
    raise typer.Exit(last.exit_code if last else 0)


@app.command()
def merge(
    reports: list[Path] = typer.Argument(..., help="JSON reports of gpudiag sweep --format json (shards)."),
    fmt: OutputFormat = typer.Option(OutputFormat.TABLE, "--format", "-f", help="table or json."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print nothing when all is well (exit 0)."),
) -> None:
    """Merge the JSON reports of several sweeps (e.g. --shard 1/4 ... 4/4) into one report."""
    import json

    from gpudiag.report.json_report import from_document
    from gpudiag.shard import ShardError
    from gpudiag.shard import merge as merge_reports

    loaded = []
    for path in reports:
        try:
            loaded.append((str(path), from_document(json.loads(path.read_text()))))
        except (OSError, ValueError) as exc:
            raise _fail(f"{path}: {exc}") from None
    try:
        report = merge_reports(loaded)
    except ShardError as exc:
        raise _fail(str(exc)) from None
    if not (quiet and report.exit_code == 0):
        from gpudiag.report import render

        typer.echo(render(report, fmt))
    raise typer.Exit(report.exit_code)


# gpudiag signatures / gpudiag grep live in agent/cli_logs.py (this module would pass 400 lines).
from gpudiag.cli_logs import grep, signatures  # noqa: E402 - they use the helpers above

app.command()(signatures)
app.command()(grep)
app.command("history")(cli_audit.history)
app.command("exporter")(cli_audit.exporter)


def _click_classes(name: str) -> tuple[type[BaseException], ...]:
    """``name`` from click and from the copy of click that newer typers vendor (``typer._click``)."""
    import importlib

    found = []
    for module in ("click.exceptions", "typer._click.exceptions"):
        try:
            found.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    return tuple(found)


def main() -> None:
    """Console entry point: run the app, mapping click's usage errors (exit 2) to exit 3."""
    try:
        code = app(standalone_mode=False)
    except _click_classes("ClickException") as exc:
        exc.show()  # type: ignore[attr-defined]
        sys.exit(EXIT_CANNOT_RUN)
    except _click_classes("Abort"):
        typer.echo("gpudiag: interrupted", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
