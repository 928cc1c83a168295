"""Which columns of a table fit a terminal's width: the most important first, the rest left out (and said).

A column has a priority and an elastic floor: a column that folds its text (a host range, the reasons)
needs only its floor, a column that never wraps needs its widest cell. Pure, no rich: widths come in as
numbers of terminal cells.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

COLUMN_GAP = 2  # one cell of padding right of each cell plus the blank divider


@dataclass(frozen=True, slots=True, kw_only=True)
class Column:
    """A column as declared by a table: its header, how much it matters, how narrow it may fold."""

    header: str
    priority: int  # higher stays longer; columns of equal priority keep their order
    fold_to: int | None = None  # folds its text down to this many cells; None: never wraps


def needed(column: Column, natural: int) -> int:
    """The cells ``column`` needs when its widest cell (or header) is ``natural`` cells."""
    return natural if column.fold_to is None else min(natural, column.fold_to)


def fit(columns: Sequence[Column], natural: Sequence[int], width: int) -> tuple[int, ...]:
    """The positions of the columns to show in ``width`` cells, in their order: columns are taken by
    priority while they fit (a wide one that does not fit leaves room to a narrower one after it). The
    first column always shows."""
    chosen: set[int] = set()
    used = -COLUMN_GAP
    by_priority = sorted(range(len(columns)), key=lambda i: (-columns[i].priority, i))
    for position in by_priority:
        cost = needed(columns[position], natural[position]) + COLUMN_GAP
        if used + cost <= width or not chosen:
            chosen.add(position)
            used += cost
    return tuple(sorted(chosen))


def total(columns: Sequence[Column], natural: Sequence[int], positions: Sequence[int], *,
          elastic: bool = False) -> int:
    """The width of the columns at ``positions``: each at its widest cell, or at what it needs when ``elastic``."""
    widths = [needed(columns[p], natural[p]) if elastic else natural[p] for p in positions]
    return sum(widths) + COLUMN_GAP * (len(widths) - 1)


def allot(columns: Sequence[Column], natural: Sequence[int], positions: Sequence[int], width: int) -> dict[int, int]:
    """The widths of the folding columns among ``positions`` in ``width`` cells: each its floor, then the room
    left given to them by priority, each up to its widest cell (so the host column is not squeezed for the
    reasons)."""
    spare = width - total(columns, natural, positions, elastic=True)
    widths = {}
    for position in sorted(positions, key=lambda p: (-columns[p].priority, p)):
        if columns[position].fold_to is None:
            continue
        floor = needed(columns[position], natural[position])
        grow = max(0, min(spare, natural[position] - floor))
        widths[position] = floor + grow
        spare -= grow
    return widths


def wrap(head: str, text: str, width: int, *, indent: int = 6) -> list[str]:
    """``head`` then ``text`` on one line when it fits in ``width``; else ``text`` wrapped under itself beside
    ``head`` when ``head`` is short, or under ``head`` indented by ``indent``. Words longer than a line
    (a path, a log line's token) are cut; nothing passes ``width`` (plain text: one cell a character)."""
    if len(head) + len(text) <= width:
        return [head + text]
    hang = len(head) if len(head) <= width // 2 else indent
    body = textwrap.wrap(text, width=max(10, width - hang), break_long_words=True, break_on_hyphens=False) or [""]
    if hang == len(head):
        return [head + body[0], *(" " * hang + line for line in body[1:])]
    return [head.rstrip(), *(" " * hang + line for line in body)]


def plain_table(header: Sequence[str], rows: Sequence[Sequence[str]], width: int,
                priorities: Sequence[int]) -> str:
    """A plain-text table in ``width`` columns: the columns that matter least (``priorities``, higher kept
    longer) left out until it fits, the last column shown wrapped under itself; one line a row when wide."""
    natural = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    columns = [Column(header=h, priority=p, fold_to=20 if i == len(header) - 1 else None)
               for i, (h, p) in enumerate(zip(header, priorities, strict=True))]
    shown = fit(columns, natural, width)
    out = []
    for row in (header, *rows):
        cells = [str(row[p]) for p in shown]
        head = "".join(c.ljust(natural[p] + COLUMN_GAP) for c, p in zip(cells[:-1], shown[:-1], strict=True))
        out += [line.rstrip() for line in wrap(head, cells[-1], width)]
    left_out = [header[p] for p in range(len(header)) if p not in shown]
    if left_out:
        out.append(f"(not shown at {width} columns: {', '.join(left_out)})")
    return "".join(line + "\n" for line in out)
