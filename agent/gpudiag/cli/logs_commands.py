"""``gpudiag signatures`` and ``gpudiag grep``: the log-evidence commands, registered on the app by gpudiag.cli.app.

Part of the command-line layer (with :mod:`.app`, the only code that prints or sets the exit code); what
they share with ``sweep`` (the request, the sweep itself, the demo) comes from gpudiag.cli.common and
gpudiag.cli.request, never from gpudiag.cli.app (which imports this module).
"""

from __future__ import annotations

from pathlib import Path

import typer

from gpudiag.cli import options as opt
from gpudiag.cli.common import configuration_errors, fail, output_request, sweep_report, terminal_width
from gpudiag.model.choices import TextFormat
from gpudiag.report import OutputFormat


def signatures(
    pack: list[str] = typer.Option([], "--pack", help="Only this pack: a name, or a pack file (YAML) to load "
                                   "and show (repeatable)."),
) -> None:
    """List the signature packs: their configuration echoes, signatures and expectations."""
    from gpudiag.logs import PackError, Registry
    from gpudiag.report.logs_report import render_signatures

    files = [p for p in pack if "/" in p or p.endswith((".yaml", ".yml"))]
    try:
        registry = Registry.with_builtins(files)
    except PackError as exc:
        raise fail(str(exc)) from None
    unknown = [p for p in pack if p not in files and p not in registry.packs]
    if unknown:
        raise fail(f"--pack {unknown[0]}: no such pack (known: {', '.join(registry.packs)}; or give a file)")
    chosen = [registry.packs[p] for p in pack if p in registry.packs] + [
        p for p in registry.packs.values() if p.origin in files]
    typer.echo(render_signatures(dict.fromkeys(chosen) if pack else registry.packs.values(), width=terminal_width()))


def grep(
    targets: list[str] = typer.Argument(None, help="Hosts or patterns, as for sweep."),
    signature: str = typer.Option(..., "--signature", "-s", help="The signature to look for (gpudiag signatures "
                                  "lists them)."),
    inventory: Path | None = opt.INVENTORY,
    user: str | None = opt.USER,
    port: int | None = opt.PORT,
    identity_file: str | None = opt.IDENTITY_FILE,
    jump: str | None = opt.JUMP,
    limit: list[str] = opt.LIMIT,
    exclude: list[str] = opt.EXCLUDE,
    log: list[str] = opt.LOG,
    pack: list[str] = opt.PACK,
    log_tail_mib: float = opt.LOG_TAIL_MIB,
    lines: int = typer.Option(3, "--lines", "-n", min=1, max=100, help="Recent matching lines shown per log."),
    demo: bool = typer.Option(False, "--demo", help="Search the built-in simulated cluster's logs."),
    local: bool = typer.Option(False, "--local", help="Also search this machine's logs, without SSH."),
    fmt: TextFormat = opt.TEXT_FORMAT,
    deprecated_json: bool = opt.JSON_ALIAS,
    concurrency: int = opt.CONCURRENCY,
    connect_timeout: float = opt.CONNECT_TIMEOUT,
    login_timeout: float = opt.LOGIN_TIMEOUT,
    timeout: float = opt.TIMEOUT,
    known_hosts: str | None = opt.KNOWN_HOSTS,
    ssh_config: Path | None = opt.SSH_CONFIG,
    accept_new_host_keys: bool = opt.ACCEPT_NEW,
    fold: bool = opt.FOLD,
    progress: bool | None = opt.PROGRESS,
    workers: str = opt.WORKERS,
    max_startups: int | None = opt.MAX_STARTUPS,
    connect_rate: str | None = opt.CONNECT_RATE,
) -> None:
    """Run one signature across hosts' logs; hosts with identical output are shown once.

    Exit 0 when a line matched somewhere, 1 when none did, 2 when a host or a log could not be read."""
    from gpudiag.cli.request import HostSelection, SweepRequest
    from gpudiag.logs import LogOptions
    from gpudiag.report.logs_report import grep_document, grep_exit_code, render_grep
    from gpudiag.sweep.runner import SweepOptions
    from gpudiag.sweep.workers import parse_workers
    from gpudiag.transport.build import SshRequest
    from gpudiag.transport.pacing import parse_rate

    # A log search reads no GPU (and so no topology); the inventory's GPU thresholds do not apply.
    logs = LogOptions(paths=tuple(log), pack_files=tuple(pack), tail_mib=log_tail_mib, only_signature=signature,
                      keep=lines)
    as_json = opt.wants_json(fmt, deprecated_json)
    try:
        request = SweepRequest(
            hosts=HostSelection(targets=tuple(targets or ()), inventory=inventory, user=user, port=port,
                                identity_file=identity_file, jump=jump, limit=tuple(limit), exclude=tuple(exclude),
                                local=local),
            ssh=SshRequest(connect_timeout_s=connect_timeout, login_timeout_s=login_timeout, known_hosts=known_hosts,
                           ssh_config=ssh_config, accept_new_host_keys=accept_new_host_keys,
                           max_startups=max_startups, connect_rate_per_s=parse_rate(connect_rate)),
            sweep=SweepOptions(samples=1, interval_s=0.0, deadline_s=timeout, concurrency=concurrency, logs=logs,
                               gpus=False, context=False),
            workers=parse_workers(workers), inventory_settings=False, demo=demo,
            output=output_request(OutputFormat.JSON if as_json else OutputFormat.TABLE, fold=fold, progress=progress))
        report = sweep_report(request, no_hosts="no hosts to search: give targets, -i INVENTORY, --local or --demo")
    except configuration_errors() as exc:
        raise fail(str(exc)) from None
    typer.echo(grep_document(report, signature) if as_json else render_grep(report, signature,
                                                                             width=request.output.width, fold=fold))
    raise typer.Exit(report.exit_code if report.stopped_by else grep_exit_code(report, signature))
