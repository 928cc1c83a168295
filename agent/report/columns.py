"""Which columns of a table fit a terminal's width: the most important first, the rest left out (and said).

A column has a priority and an elastic floor: a column that folds its text (a host range, the reasons)
needs only its floor, a column that never wraps needs its widest cell. Pure, no rich: widths come in as
numbers of terminal cells.
"""

from __future__ import annotations

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
