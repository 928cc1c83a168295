"""``gpudiag inventory``: the expanded host list with each host's effective settings."""

from __future__ import annotations

import typer

from gpudiag.cli.common import fail, selected_hosts, terminal_width, wants_json
from gpudiag.cli.options import command
from gpudiag.cli.params import Given

INVENTORY_SCHEMA = "gpudiag.sources.inventory/1"  # gpudiag inventory --format json: {"schema", "hosts": [...]}


@command("inventory")
def inventory(*, given: Given) -> None:
    """Print the expanded host list with each host's effective settings."""
    import json

    from gpudiag.cli import build
    from gpudiag.model.request import HostSelection
    from gpudiag.sources.inventory import InventoryError, describe

    try:
        with selected_hosts(build.value(given, HostSelection)) as selected:
            rows = describe(selected.hosts)
    except (InventoryError, ValueError) as exc:
        raise fail(str(exc)) from None
    if wants_json(given["fmt"], given["deprecated_json"]):
        typer.echo(json.dumps({"schema": INVENTORY_SCHEMA, "hosts": rows}, indent=2))
        return
    from gpudiag.report.inventory_table import render_inventory

    typer.echo(render_inventory(rows, width=terminal_width(), fold=given["fold"]), nl=False)
