"""``gpudiag inventory``: the expanded host list with each host's effective settings, as a table."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from gpudiag.report.terminal import safe_text

COLUMNS = ("name", "target", "user", "port", "identity_file", "known_hosts", "jump", "groups", "logs")


def _cell(value: object) -> Text:
    if value is None or value == () or value == []:
        return Text("-")
    if isinstance(value, (list, tuple)):
        return safe_text(", ".join(str(v) for v in value))
    return safe_text(str(value))  # Text, not str: "[...]" in a value is not rich markup


def render_inventory(rows: Sequence[Mapping[str, object]], *, width: int = 160) -> str:
    """One row per host (as ``gpudiag.inventory.describe`` gives them), then the host count."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in COLUMNS:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(_cell(row.get(c)) for c in COLUMNS))
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, no_color=True, color_system=None, highlight=False, _environ={})
    console.print(table)
    console.print(f"{len(rows)} hosts")
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())
