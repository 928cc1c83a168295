"""``gpudiag signatures`` and ``gpudiag grep``: the log-evidence commands, registered on the app by gpudiag.cli.

Part of the command-line layer (with agent/cli.py, the only code that prints or sets the exit code); the
helpers they share with ``sweep`` (host selection, the sweep itself, the demo) come from gpudiag.cli.
"""

from __future__ import annotations

from pathlib import Path

import typer

from gpudiag import cli_options as opt


def signatures(
    pack: list[str] = typer.Option([], "--pack", help="Only this pack: a name, or a pack file (YAML) to load "
                                   "and show (repeatable)."),
) -> None:
    """List the signature packs: their configuration echoes, signatures and expectations."""
    from gpudiag.cli import _fail
    from gpudiag.logs import PackError, Registry
    from gpudiag.report.logs_report import render_signatures

    files = [p for p in pack if "/" in p or p.endswith((".yaml", ".yml"))]
    try:
        registry = Registry.with_builtins(files)
    except PackError as exc:
        raise _fail(str(exc)) from None
    unknown = [p for p in pack if p not in files and p not in registry.packs]
    if unknown:
        raise _fail(f"--pack {unknown[0]}: no such pack (known: {', '.join(registry.packs)}; or give a file)")
    chosen = [registry.packs[p] for p in pack if p in registry.packs] + [
        p for p in registry.packs.values() if p.origin in files]
    typer.echo(render_signatures(dict.fromkeys(chosen) if pack else registry.packs.values()))


def grep(
    targets: list[str] = typer.Argument(None, help="Hosts or patterns, as for sweep."),
    signature: str = typer.Option(..., "--signature", "-s", help="The signature to look for (gpudiag signatures "
                                  "lists them)."),
    inventory: Path | None = opt.INVENTORY,
    user: str | None = opt.USER,
    port: int | None = opt.PORT,
    identity_file: str | None = opt.IDENTITY_FILE,
    limit: list[str] = opt.LIMIT,
    exclude: list[str] = opt.EXCLUDE,
    log: list[str] = opt.LOG,
    pack: list[str] = opt.PACK,
    log_tail_mib: float = opt.LOG_TAIL_MIB,
    lines: int = typer.Option(3, "--lines", "-n", min=1, max=100, help="Recent matching lines shown per log."),
    demo: bool = typer.Option(False, "--demo", help="Search the built-in simulated cluster's logs."),
    local: bool = typer.Option(False, "--local", help="Also search this machine's logs, without SSH."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of text."),
    concurrency: int = opt.CONCURRENCY,
    connect_timeout: float = opt.CONNECT_TIMEOUT,
    login_timeout: float = opt.LOGIN_TIMEOUT,
    timeout: float = opt.TIMEOUT,
    known_hosts: str | None = opt.KNOWN_HOSTS,
    ssh_config: Path | None = opt.SSH_CONFIG,
    accept_new_host_keys: bool = opt.ACCEPT_NEW,
) -> None:
    """Run one signature across hosts' logs; hosts with identical output are shown once.

    Exit 0 when a line matched somewhere, 1 when none did, 2 when a host or a log could not be read."""
    from gpudiag.checks import CheckSettings
    from gpudiag.cli import CannotRun, _fail, _log_options, _run_demo, _run_sweep, _select_hosts
    from gpudiag.inventory import InventoryError
    from gpudiag.report.logs_report import grep_document, grep_exit_code, render_grep
    from gpudiag.transport import KeyLoadError

    try:
        logs = _log_options(log, pack, log_tail_mib, signature=signature, keep=lines)
        if demo:
            report = _run_demo(1, 0.0, timeout, concurrency, logs, gpus=False)
        else:
            hosts, _ = _select_hosts(targets or [], inventory, user, port, identity_file, limit, exclude, local)
            if not hosts:
                raise CannotRun("no hosts to search: give targets, -i INVENTORY, --local or --demo")
            report = _run_sweep(hosts, CheckSettings(), samples=1, interval=0.0, timeout=timeout,
                                concurrency=concurrency, connect_timeout=connect_timeout, login_timeout=login_timeout,
                                known_hosts=known_hosts, accept_new=accept_new_host_keys, ssh_config=ssh_config,
                                logs=logs, gpus=False)
    except (InventoryError, KeyLoadError, CannotRun, ValueError) as exc:
        raise _fail(str(exc)) from None
    typer.echo(grep_document(report, signature) if as_json else render_grep(report, signature))
    raise typer.Exit(grep_exit_code(report, signature))
