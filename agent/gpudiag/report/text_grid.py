"""A table of plain-text cells drawn as the GPU table's rich ``Table`` draws it when every column gets its widest
cell (a wide terminal or a pipe, no colour): the headers, a rule under them, the rows, a blank line between
sections, each column two cells from the next (:data:`~gpudiag.report.columns.COLUMN_GAP`).

Why not rich there: rich measures and renders every cell as a renderable of its own, about 6 ms of CPU per
8-GPU host (14 with other work on the machine): a 1000-host sweep's table cost several times the sweep. This
writes the same text in a small fraction of that. Pure, no rich: the terminal width of a cell (``measure``,
rich's ``cell_len`` in :mod:`gpudiag.report.table`) comes in as a function. tests/unit/report/test_text_grid.py
checks that the text is rich's, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gpudiag.report.columns import COLUMN_GAP

Cell = tuple[str, ...]  # the lines of one cell (most cells have one)
RULE = "\N{BOX DRAWINGS LIGHT HORIZONTAL}"


def draw(headers: Sequence[str], left: Sequence[bool], sections: Sequence[Sequence[Sequence[Cell]]],
         measure: Callable[[str], int], width: int) -> list[str] | None:
    """The table's lines (trailing blanks kept, as rich pads them): ``headers`` over the rule, then each
    section's rows (each row one cell per column, a cell its lines), a blank line between two sections.
    ``left``: per column, left-aligned (text) or right-aligned (numbers). None when the columns at their
    widest cells do not fit in ``width``: rich folds them then, and draws the table itself."""
    widths = [measure(h) for h in headers]
    for rows in sections:
        for row in rows:
            for i, cell in enumerate(row):
                for line in cell:
                    size = measure(line)
                    if size > widths[i]:
                        widths[i] = size
    full = sum(widths) + COLUMN_GAP * (len(widths) - 1)
    if full > width:
        return None
    gap = " " * COLUMN_GAP

    def line_of(texts: Sequence[str]) -> str:
        parts = []
        for i, text in enumerate(texts):
            pad = " " * (widths[i] - measure(text))
            parts.append(text + pad if left[i] else pad + text)
        return gap.join(parts)

    lines = [line_of(headers), RULE * full]
    blank = " " * full
    for n, rows in enumerate(sections):
        if n:
            lines.append(blank)
        for row in rows:
            height = max(len(cell) for cell in row)
            for k in range(height):
                lines.append(line_of([cell[k] if k < len(cell) else "" for cell in row]))
    return lines
