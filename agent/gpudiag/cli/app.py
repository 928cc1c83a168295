"""The ``gpudiag`` command: the only code that prints or sets the exit code.

Exit codes, for cron and Nagios: 0 all well, 1 a warning (or a reading that should be there is missing),
2 a critical finding or a host that did not answer, 3 gpudiag could not run (bad inventory, bad flags).
Click reports usage errors with exit 2 by default; :func:`main` turns them into 3 so that 2 always
means "something on the cluster is critical".
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from gpudiag.cli import audit_commands, logs_commands, slurm_commands
from gpudiag.cli import options as opt
from gpudiag.cli.common import (
    EXIT_CANNOT_RUN,
    configuration_errors,
    fail,
    output_request,
    render_report,
    run_async,
    selected_hosts,
    sweep_report,
    sweep_selected,
    terminal_width,
    use_event_loop,
)
from gpudiag.model.choices import DrainLevel, EventLoop, Source, TextFormat
from gpudiag.report import OutputFormat

INVENTORY_SCHEMA = "gpudiag.sources.inventory/1"  # gpudiag inventory --format json: {"schema", "hosts": [...]}

# The CLI imports the layers below (and the request, ~1 ms per dataclass) where a command runs, so that
# `gpudiag --help` starts fast.
if TYPE_CHECKING:
    from gpudiag.model import SweepReport
    from gpudiag.sweep.watch import Changes

# -h as well as --help, on every command (click passes help_option_names down to the subcommands' contexts).
app = typer.Typer(add_completion=False, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]})


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"gpudiag {version('gpudiag')}")
        except PackageNotFoundError:  # run from a source tree that was never installed
            typer.echo("gpudiag (not installed: version unknown)")
        raise typer.Exit(0)


@app.callback(invoke_without_command=True)
def _global(ctx: typer.Context,
            event_loop: EventLoop = typer.Option(EventLoop.ASYNCIO, "--event-loop", envvar="GPUDIAG_EVENT_LOOP",
                                                 help="asyncio (default) or uvloop (faster, when installed)."),
            _show_version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                               help="Print gpudiag's version and exit."),
            ) -> None:
    """Agentless GPU health sweep over SSH: what is wrong with the GPUs of a cluster."""
    if ctx.invoked_subcommand is None:  # bare `gpudiag`: the help, and success (not a usage error)
        typer.echo(ctx.get_help())
        raise typer.Exit(0)
    use_event_loop(event_loop)


@app.command()
def sweep(
    targets: list[str] = typer.Argument(None, help="Hosts or patterns (gpu[01-16]), ~/.ssh/config aliases, "
                                                   "or localhost."),
    inventory: Path | None = opt.INVENTORY,
    user: str | None = opt.USER,
    port: int | None = opt.PORT,
    identity_file: str | None = opt.IDENTITY_FILE,
    jump: str | None = opt.JUMP,
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
    source: Source = opt.SOURCE,
    known_hosts: str | None = opt.KNOWN_HOSTS,
    ssh_config: Path | None = opt.SSH_CONFIG,
    accept_new_host_keys: bool = opt.ACCEPT_NEW,
    busy_utilization_pct: float | None = typer.Option(None, "--busy-util-pct", help="BUSY_LOW_POWER: "
                                                         "utilization that counts as busy (default 90)."),
    low_power_pct: float | None = typer.Option(None, "--low-power-pct", help="BUSY_LOW_POWER: power "
                                                  "share of the enforced limit that counts as low (60)."),
    bandwidth_pct: float | None = typer.Option(None, "--bandwidth-mem-util-pct", help="BUSY_LOW_POWER: "
                                                  "memory utilization meaning bandwidth-bound (60)."),
    workers: str = opt.WORKERS,
    max_startups: int | None = opt.MAX_STARTUPS,
    connect_rate: str | None = opt.CONNECT_RATE,
    shard: str | None = typer.Option(None, "--shard", help="Sweep only shard I of N (e.g. 1/4, or auto in a "
                                     "Slurm job array): a stable split by host name; merge with gpudiag merge."),
    save_raw: Path | None = typer.Option(None, "--save-raw", help="Also keep each host's raw collector "
                                         "document in this folder (<host>.json): captures for tests."),
    log: list[str] = opt.LOG,
    pack: list[str] = opt.PACK,
    log_tail_mib: float = opt.LOG_TAIL_MIB,
    samples_detail: bool = opt.SAMPLES_DETAIL,
    quiet: bool = opt.QUIET,
    fold: bool = opt.FOLD,
    progress: bool | None = opt.PROGRESS,
    slurm_partition: list[str] = slurm_commands.SLURM_PARTITION,
    slurm_job: str | None = slurm_commands.SLURM_JOB,
    slurm_nodelist: str | None = slurm_commands.SLURM_NODELIST,
    slurm_state: list[str] = slurm_commands.SLURM_STATE,
    drain_on: DrainLevel | None = slurm_commands.DRAIN_ON,
    dry_run: bool = slurm_commands.DRY_RUN,
    history: Path | None = audit_commands.HISTORY,
    keep_days: float | None = audit_commands.KEEP_DAYS,
    history_lock_wait: float = audit_commands.LOCK_WAIT,
    only_changes: bool = audit_commands.ONLY_CHANGES,
    flap_changes: int = audit_commands.FLAP_CHANGES,
    flap_window: int = audit_commands.FLAP_WINDOW,
    notify: list[str] = audit_commands.NOTIFY,
    notify_cmd: str | None = audit_commands.NOTIFY_CMD,
    renotify: str | None = audit_commands.RENOTIFY,
    prom_file: Path | None = audit_commands.PROM_FILE,
    output: Path | None = audit_commands.OUTPUT,
) -> None:
    """Sweep hosts over SSH, read their GPUs and logs, and report what is wrong."""
    from gpudiag.cli.request import HostSelection, SweepRequest, Thresholds, parse_shard
    from gpudiag.logs import LogOptions
    from gpudiag.sweep.runner import SweepOptions
    from gpudiag.sweep.workers import parse_workers
    from gpudiag.transport.build import SshRequest
    from gpudiag.transport.pacing import parse_rate

    try:
        request = SweepRequest(
            hosts=HostSelection(targets=tuple(targets or ()), inventory=inventory, user=user, port=port,
                                identity_file=identity_file, jump=jump, limit=tuple(limit), exclude=tuple(exclude),
                                local=local, shard=parse_shard(shard),
                                slurm=slurm_commands.selection(slurm_partition, slurm_job, slurm_nodelist,
                                                               slurm_state)),
            ssh=SshRequest(connect_timeout_s=connect_timeout, login_timeout_s=login_timeout,
                           known_hosts=known_hosts, ssh_config=ssh_config,
                           accept_new_host_keys=accept_new_host_keys, max_startups=max_startups,
                           connect_rate_per_s=parse_rate(connect_rate)),
            workers=parse_workers(workers),
            sweep=SweepOptions(samples=samples, interval_s=interval, deadline_s=timeout, concurrency=concurrency,
                               source=source, raw_dir=save_raw,
                               logs=LogOptions(paths=tuple(log), pack_files=tuple(pack), tail_mib=log_tail_mib)),
            thresholds=Thresholds(busy_utilization_pct=busy_utilization_pct, low_power_pct=low_power_pct,
                                  bandwidth_memory_utilization_pct=bandwidth_pct),
            demo=demo,
            output=output_request(fmt, quiet=quiet, samples_detail=samples_detail, fold=fold, progress=progress),
            drain_on=drain_on, dry_run=dry_run,
            audit=audit_commands.audit_options(history=history, keep_days=keep_days, lock_wait_s=history_lock_wait,
                                          only_changes=only_changes, flap_changes=flap_changes,
                                          flap_window=flap_window, notify=notify, notify_cmd=notify_cmd,
                                          renotify=renotify, prom_file=prom_file, output=output))
        if request.hosts.slurm is not None and not demo:  # Slurm gives the hosts: its nodes' states are kept
            selected = selected_hosts(request.hosts)
            report = sweep_selected(request, selected)
        else:
            selected = None
            report = sweep_report(request, no_hosts="no hosts to sweep: give targets, -i INVENTORY, --local, "
                                                    "--slurm-* or --demo")
    except configuration_errors() as exc:
        raise fail(str(exc)) from None
    # Slurm's drain step first (never after SIGINT/SIGTERM: that report is partial), so that the history, the
    # files and the notifications carry each node's Slurm state and the actions; then the audit step (record,
    # write, notify) prints the report (a stopped one exits 130/143).
    drained = None
    if selected is not None and selected.slurm_nodes is not None and report.stopped_by is None:
        report, drained = slurm_commands.drain(report, request, selected.slurm_nodes)
    raise typer.Exit(audit_commands.finish(report, request, drained))


@app.command()
def local(
    fmt: OutputFormat = opt.FORMAT,
    samples: int = opt.SAMPLES,
    interval: float = opt.INTERVAL,
    timeout: float = opt.TIMEOUT,
    source: Source = opt.SOURCE,
    log: list[str] = opt.LOG,
    pack: list[str] = opt.PACK,
    log_tail_mib: float = opt.LOG_TAIL_MIB,
    samples_detail: bool = opt.SAMPLES_DETAIL,
    quiet: bool = opt.QUIET,
    fold: bool = opt.FOLD,
) -> None:
    """Read this machine's GPUs (no SSH) and logs, through the same checks and report."""
    from gpudiag.cli.request import HostSelection, SweepRequest
    from gpudiag.logs import LogOptions
    from gpudiag.model import SmiStatus
    from gpudiag.sweep.runner import SweepOptions

    # The inventory's check settings do not apply here: there is no inventory (and so no SSH either).
    request = SweepRequest(
        hosts=HostSelection(local=True),
        sweep=SweepOptions(samples=samples, interval_s=interval, deadline_s=timeout, concurrency=1, source=source,
                           logs=LogOptions(paths=tuple(log), pack_files=tuple(pack), tail_mib=log_tail_mib)),
        output=output_request(fmt, quiet=quiet, samples_detail=samples_detail, fold=fold, progress=False))
    try:
        report = sweep_report(request)
    except configuration_errors() as exc:
        raise fail(str(exc)) from None
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
        typer.echo(render_report(report, request.output))
    raise typer.Exit(code)


@app.command("inventory")
def inventory_cmd(
    inventory: Path = typer.Option(..., "--inventory", "-i", help="Inventory YAML file."),
    limit: list[str] = typer.Option([], "--limit", help="Only these groups or host patterns."),
    exclude: list[str] = typer.Option([], "--exclude", help="Leave out these host patterns."),
    fmt: TextFormat = opt.TEXT_FORMAT,
    deprecated_json: bool = opt.JSON_ALIAS,
    fold: bool = opt.FOLD,
) -> None:
    """Print the expanded host list with each host's effective settings."""
    import json

    from gpudiag.cli.request import HostSelection
    from gpudiag.sources.inventory import InventoryError, describe

    try:
        selected = selected_hosts(HostSelection(inventory=inventory, limit=tuple(limit), exclude=tuple(exclude)))
    except (InventoryError, ValueError) as exc:
        raise fail(str(exc)) from None
    rows = describe(selected.hosts)
    if opt.wants_json(fmt, deprecated_json):
        typer.echo(json.dumps({"schema": INVENTORY_SCHEMA, "hosts": rows}, indent=2))
        return
    from gpudiag.report.inventory_table import render_inventory

    typer.echo(render_inventory(rows, width=terminal_width(), fold=fold), nl=False)


@app.command()
def watch(
    targets: list[str] = typer.Argument(None, help="Hosts or patterns, as for sweep."),
    inventory: Path | None = opt.INVENTORY,
    user: str | None = opt.USER,
    port: int | None = opt.PORT,
    identity_file: str | None = opt.IDENTITY_FILE,
    jump: str | None = opt.JUMP,
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
    max_startups: int | None = opt.MAX_STARTUPS,
    connect_rate: str | None = opt.CONNECT_RATE,
    plain: bool = typer.Option(False, "--plain", help="Print each refresh below the last (no redraw)."),
    demo: bool = typer.Option(False, "--demo", help="Watch the built-in simulated cluster (as sweep --demo)."),
    fmt: TextFormat = typer.Option(TextFormat.TABLE, "--format", "-f", help="table (the live view) or json: one "
                                   "gpudiag.sweep/2 document per refresh, one a line (JSON Lines)."),
) -> None:
    """Keep one connection per host and refresh a live view: bars, findings as they appear and clear."""
    from gpudiag.cli.live import LiveScreen, render_watch
    from gpudiag.cli.request import HostSelection, RequestError, SweepRequest, prepare, prepare_demo
    from gpudiag.sweep.runner import SweepOptions
    from gpudiag.sweep.watch import watch as run_watch
    from gpudiag.transport.build import SshRequest, open_transport
    from gpudiag.transport.pacing import parse_rate

    # stream: one collector per host stays on its kept connection and answers every refresh.
    try:
        request = SweepRequest(
            hosts=HostSelection(targets=tuple(targets or ()), inventory=inventory, user=user, port=port,
                                identity_file=identity_file, jump=jump, limit=tuple(limit), exclude=tuple(exclude)),
            ssh=SshRequest(connect_timeout_s=connect_timeout, known_hosts=known_hosts, ssh_config=ssh_config,
                           max_startups=max_startups, connect_rate_per_s=parse_rate(connect_rate)),
            sweep=SweepOptions(samples=samples, interval_s=interval, deadline_s=timeout, concurrency=concurrency,
                               stream=True, idle_s=3 * every + timeout))  # three missed refreshes: the collector leaves
        if demo:
            options, planner, nodes = prepare_demo(request)
        else:
            selected = selected_hosts(request.hosts)
            if not selected.hosts:
                raise RequestError("no hosts to watch: give targets, -i INVENTORY or --demo")
            prepared = prepare(request, selected)
    except configuration_errors() as exc:
        raise fail(str(exc)) from None
    live = sys.stdout.isatty() and not plain and fmt is TextFormat.TABLE
    screen = LiveScreen() if live else None

    def show(refresh: int, report: SweepReport, change: Changes) -> None:
        if fmt is TextFormat.JSON:
            from gpudiag.report import ReportView, render

            typer.echo(render(report, OutputFormat.JSON, ReportView(one_line=True)))
            return
        text = render_watch(refresh, count, report, appeared=change.appeared, cleared=change.cleared, color=live,
                            width=terminal_width())  # asked each refresh: the terminal may have been resized
        if screen is not None:
            screen.show(text)
        else:
            typer.echo(text)

    try:
        with screen if screen is not None else contextlib.nullcontext():
            if demo:
                from gpudiag.demo.demo import watch_demo

                last = run_async(watch_demo(options, every_s=every, count=count, on_refresh=show, planner=planner,
                                            connect_timeout_s=connect_timeout, nodes=nodes))
            else:
                last = run_async(run_watch(prepared.hosts, open_transport(prepared.ssh), prepared.options,
                                           plans=prepared.plans, every_s=every, count=count, on_refresh=show))
    except KeyboardInterrupt:
        typer.echo("gpudiag: watch stopped", err=True)
        raise typer.Exit(130) from None
    raise typer.Exit(last.exit_code if last else 0)


@app.command()
def merge(
    reports: list[Path] = typer.Argument(..., help="JSON reports of gpudiag sweep --format json (shards)."),
    fmt: OutputFormat = typer.Option(OutputFormat.TABLE, "--format", "-f", help="table or json."),
    quiet: bool = opt.QUIET,
    fold: bool = opt.FOLD,
) -> None:
    """Merge the JSON reports of several sweeps (e.g. --shard 1/4 ... 4/4) into one report."""
    import json

    from gpudiag.report.json_report import from_document
    from gpudiag.sweep.shard import ShardError
    from gpudiag.sweep.shard import merge as merge_reports

    loaded = []
    for path in reports:
        try:
            loaded.append((str(path), from_document(json.loads(path.read_text()))))
        except (OSError, ValueError) as exc:
            raise fail(f"{path}: {exc}") from None
    try:
        report = merge_reports(loaded)
    except ShardError as exc:
        raise fail(str(exc)) from None
    if not (quiet and report.exit_code == 0):
        typer.echo(render_report(report, output_request(fmt, quiet=quiet, fold=fold, progress=False),
                                 color=sys.stdout.isatty()))
    raise typer.Exit(report.exit_code)


# gpudiag signatures / gpudiag grep live in logs_commands.py, gpudiag undrain in slurm_commands.py, gpudiag
# history / gpudiag exporter in audit_commands.py (this module would pass 400 lines); registered here, after
# the commands above, so that --help lists them in order.
app.command()(logs_commands.signatures)
app.command()(logs_commands.grep)
app.command()(slurm_commands.undrain)
app.command()(audit_commands.history)
app.command()(audit_commands.exporter)


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
        code = app(standalone_mode=False, prog_name="gpudiag")  # also as python -m gpudiag.cli.app
    except _click_classes("ClickException") as exc:
        exc.show()  # type: ignore[attr-defined]
        sys.exit(EXIT_CANNOT_RUN)
    except _click_classes("Abort"):
        typer.echo("gpudiag: interrupted", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
