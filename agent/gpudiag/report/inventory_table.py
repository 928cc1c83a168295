"""``gpudiag inventory``: the expanded host list with each host's effective settings, as a table.

Hosts whose settings read the same (their own name taken out of the target) are one row under a host range,
as ``clush -b`` folds; a column that is unset on every host is left out, and at a narrow terminal the
columns that matter least go first (and the table says which).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table

from gpudiag.report.columns import COLUMN_GAP, Column, allot, fit
from gpudiag.report.fold import HOST_PLACEHOLDER, group_hosts, host_label
from gpudiag.report.terminal import safe, safe_text

COLUMNS = ("name", "target", "user", "port", "identity_file", "known_hosts", "jump", "groups", "logs")
_PRIORITY = {"name": 100, "target": 90, "groups": 80, "user": 70, "jump": 65, "port": 60, "logs": 50,
             "identity_file": 40, "known_hosts": 30}
# The columns that may wrap, down to this many cells; a path or a host name broken in two misleads, so the
# others are left out rather than wrapped.
_FOLDS_TO = {"name": 16, "target": 16, "logs": 20, "groups": 12}
UNSET = "-"


def log_text(entry: object) -> str:
    """A ``logs:`` entry as the operator wrote it: a path, ``@kernel``, ``server:path``, other keys after it
    ("/var/log/vllm.log (packs=vllm,nccl, tail_mib=32)")."""
    if not isinstance(entry, Mapping):
        return str(entry)
    path = str(entry.get("path", "?"))
    head = f"{entry['server']}:{path}" if entry.get("server") else path
    rest = [f"{k}={','.join(map(str, v)) if isinstance(v, (list, tuple)) else v}"
            for k, v in entry.items() if k not in ("path", "server")]
    return f"{head} ({', '.join(rest)})" if rest else head


def cell(column: str, value: object) -> str:
    """One setting as text: lists joined, log entries as written, unset as ``-``."""
    if value is None or value == () or value == []:
        return UNSET
    if isinstance(value, (list, tuple)):
        return ", ".join(log_text(v) if column == "logs" else str(v) for v in value)
    return str(value)


def hosts_count(n: int) -> str:
    """ "1 host", "6 hosts"."""
    return f"{n} host{'' if n == 1 else 's'}"


def render_inventory(rows: Sequence[Mapping[str, object]], *, width: int = 160, fold: bool = True) -> str:
    """One row per host (as ``gpudiag.sources.inventory.describe`` gives them), hosts with the same settings folded
    unless not ``fold``, in ``width`` columns; then the host count."""
    cells = [{c: safe(cell(c, row.get(c))) for c in COLUMNS} for row in rows]
    # A host's target is usually its own name: hosts fold on the target with their name taken out.
    keyed = [(r["name"], tuple(HOST_PLACEHOLDER if c == "target" and r[c] == r["name"] else r[c]
                               for c in COLUMNS[1:])) for r in cells]
    table_rows = [(host_label(names) if len(names) > 1 else names[0],
                   *(host_label(names) if v == HOST_PLACEHOLDER and len(names) > 1 else
                     names[0] if v == HOST_PLACEHOLDER else v for v in key))
                  for names, key in group_hosts(keyed, fold=fold)]
    # Left out: a setting unset on every host, and the target where every host's is its own name.
    used = [i for i, c in enumerate(COLUMNS) if c == "name" or any(
        r[i] != UNSET and (c != "target" or r[i] != r[0]) for r in table_rows)]
    columns = [Column(header=COLUMNS[i], priority=_PRIORITY[COLUMNS[i]], fold_to=_FOLDS_TO.get(COLUMNS[i]))
               for i in used]
    natural = [max(cell_len(COLUMNS[i]), *(cell_len(r[i]) for r in table_rows)) for i in used]
    shown = fit(columns, natural, width)
    widths = allot(columns, natural, shown, width)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, COLUMN_GAP - 1, 0, 0))
    for p in shown:
        table.add_column(columns[p].header, overflow="fold", max_width=widths.get(p))
    for row in table_rows:
        table.add_row(*(safe_text(row[used[p]]) for p in shown))
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, no_color=True, color_system=None, highlight=False, _environ={})
    console.print(table)
    left_out = [columns[p].header for p in range(len(used)) if p not in shown]
    if left_out:
        console.print(safe_text(f"(not shown at {width} columns: {', '.join(left_out)})"))
    folded = f", {len(table_rows)} row{'' if len(table_rows) == 1 else 's'}" if len(table_rows) != len(rows) else ""
    console.print(safe_text(f"{hosts_count(len(rows))}{folded}"))
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())
