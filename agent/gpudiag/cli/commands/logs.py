"""``gpudiag signatures`` and ``gpudiag grep``: the log-evidence commands."""

from __future__ import annotations

import typer

from gpudiag.cli.common import configuration_errors, fail, sweep_report, terminal_width, wants_json
from gpudiag.cli.options import LOGS_PANEL, command
from gpudiag.cli.params import Given
from gpudiag.report import OutputFormat


@command("signatures")
def signatures(pack: list[str] = typer.Option([], "--pack", metavar="PACK", help="Only this pack: a name, or a "
                                              "pack file (YAML) to load and show (repeatable)."),
               *, given: Given) -> None:
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


SIGNATURE = typer.Option(..., "--signature", "-s", metavar="NAME", rich_help_panel=LOGS_PANEL,
                         help="The signature to look for (gpudiag signatures lists them).")
LINES = typer.Option(3, "--lines", "-n", min=1, max=100, metavar="N", rich_help_panel=LOGS_PANEL,
                     help="Recent matching lines shown per log.")


@command("grep")
def grep(signature: str = SIGNATURE, lines: int = LINES, *, given: Given) -> None:
    """Run one signature across hosts' logs; hosts with identical output are shown once.

    Exit 0 when a line matched somewhere, 1 when none did, 2 when a host or a log could not be read."""
    from gpudiag.cli import build
    from gpudiag.model.request import LogOptions, OutputRequest, SweepOptions, SweepRequest
    from gpudiag.report.logs_report import grep_document, grep_exit_code, render_grep

    # A log search reads no GPU (and so no topology); the inventory's GPU thresholds do not apply.
    as_json = wants_json(given["fmt"], given["deprecated_json"])
    try:
        request = build.request(given, {
            SweepOptions: {"samples": 1, "interval_s": 0.0, "gpus": False, "context": False},
            LogOptions: {"only_signature": signature, "keep": lines},
            OutputRequest: {"format": OutputFormat.JSON if as_json else OutputFormat.TABLE},
            SweepRequest: {"inventory_settings": False}})
        report = sweep_report(request, no_hosts="no hosts to search: give targets, -i INVENTORY, --local or --demo")
    except configuration_errors() as exc:
        raise fail(str(exc)) from None
    typer.echo(grep_document(report, signature) if as_json else render_grep(report, signature,
                                                                             width=request.output.width,
                                                                             fold=given["fold"]))
    raise typer.Exit(report.exit_code if report.stopped_by else grep_exit_code(report, signature))
