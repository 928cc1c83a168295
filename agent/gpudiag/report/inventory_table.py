"""``gpudiag inventory``: the expanded host list with each host's effective settings, as a table.

Hosts whose settings read the same (their own name taken out of the target) are one row under a host range,
as ``clush -b`` folds; a column that is unset on every host is left out, and at a narrow terminal the
columns that matter least go first (and the table says which).

A host name, an address or a path is never broken in two: a cell wraps only between its words (after a
comma of a host range or a list), and a column is never narrower than its longest word. The table is drawn
as plain text, not with rich: rich measured and rendered every cell as a renderable of its own, 27 s for
100,000 unfolded hosts.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence

from rich.cells import cell_len

from gpudiag.report.columns import COLUMN_GAP, Column, allot, fit
from gpudiag.report.fold import HOST_PLACEHOLDER, group_hosts, host_label
from gpudiag.report.terminal import safe
from gpudiag.report.text_grid import RULE

COLUMNS = ("name", "target", "user", "port", "identity_file", "known_hosts", "jump", "groups", "logs")
_PRIORITY = {"name": 100, "target": 90, "groups": 80, "user": 70, "jump": 65, "port": 60, "logs": 50,
             "identity_file": 40, "known_hosts": 30}
# The columns that may wrap between their words, down to this many cells (or their longest word); a path or a
# host name broken in two misleads, so the others are left out rather than wrapped.
_FOLDS_TO = {"name": 16, "target": 16, "logs": 20, "groups": 12}
# A host range "gpu[01-04,07],cpu[1-2]" breaks after a comma outside its brackets only.
_RANGE_PART = re.compile(r"(?:[^,\[]|\[[^\]]*\])+,?")
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


def _width(text: str) -> int:
    return len(text) if text.isascii() else cell_len(text)  # the fast path: nearly every cell is ASCII


def _words(column: str, text: str) -> list[str]:
    """What a cell may be broken between: a host range after its commas, other text at its spaces."""
    return _RANGE_PART.findall(text) or [text] if column in ("name", "target") else text.split(" ")


def _wrapped(column: str, text: str, width: int) -> list[str]:
    """``text`` in lines of ``width`` cells, broken only between words (a longer word stands alone, whole)."""
    if _width(text) <= width:
        return [text]
    if column not in ("name", "target"):
        return textwrap.wrap(text, width=width, break_long_words=False, break_on_hyphens=False) or [text]
    lines = [""]
    for word in _words(column, text):
        if lines[-1] and _width(lines[-1]) + _width(word) > width:
            lines.append("")
        lines[-1] += word
    return lines


def _draw(headers: Sequence[str], rows: Sequence[Sequence[str]], columns: Sequence[str],
          widths: Sequence[int]) -> list[str]:
    """The header, a rule, then each row (its wrapped cells side by side), columns ``COLUMN_GAP`` apart."""
    gap = " " * COLUMN_GAP

    def line(cells: Sequence[str]) -> str:
        return gap.join(c + " " * (w - _width(c)) for c, w in zip(cells, widths, strict=True)).rstrip()

    out = [line(headers), RULE * (sum(widths) + COLUMN_GAP * (len(widths) - 1))]
    for row in rows:
        cells = [_wrapped(c, text, w) for c, text, w in zip(columns, row, widths, strict=True)]
        for k in range(max(len(lines) for lines in cells)):
            out.append(line([lines[k] if k < len(lines) else "" for lines in cells]))
    return out


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
    names = [COLUMNS[i] for i in used]
    natural = [max(_width(name), *(_width(r[i]) for r in table_rows)) for i, name in zip(used, names, strict=True)]
    # A folding column goes no narrower than its longest word: nothing is broken in the middle.
    longest = [max(_width(name), *(_width(w) for r in table_rows for w in _words(name, r[i])))
               if name in _FOLDS_TO else 0 for i, name in zip(used, names, strict=True)]
    columns = [Column(header=name, priority=_PRIORITY[name],
                      fold_to=max(_FOLDS_TO[name], least) if name in _FOLDS_TO else None)
               for name, least in zip(names, longest, strict=True)]
    shown = fit(columns, natural, width)
    folded_widths = allot(columns, natural, shown, width)
    widths = [folded_widths.get(p, natural[p]) for p in shown]
    out = _draw([names[p] for p in shown], [[r[used[p]] for p in shown] for r in table_rows],
                [names[p] for p in shown], widths)
    left_out = [names[p] for p in range(len(used)) if p not in shown]
    if left_out:
        out.append(f"(not shown at {width} columns: {', '.join(left_out)})")
    folded = f", {len(table_rows)} row{'' if len(table_rows) == 1 else 's'}" if len(table_rows) != len(rows) else ""
    out.append(f"{hosts_count(len(rows))}{folded}")
    return "".join(line + "\n" for line in out)
