"""Report formatters: each turns a :class:`~gpudiag.model.SweepReport` into text and prints nothing.

``OutputFormat`` maps the CLI's ``--format`` choice to a formatter through one explicit table.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from gpudiag.model import SweepReport

__all__ = ["OutputFormat", "render"]


class OutputFormat(str, enum.Enum):
    """The ``--format`` choices."""

    TABLE = "table"
    JSON = "json"
    HTML = "html"  # one self-contained page (gpudiag.report.html); written with --output FILE


# Options that only shape how text looks; formats that have no use for them ignore them, so the CLI can
# pass the same options whatever the format.
_PRESENTATION_OPTIONS = frozenset({"width", "color", "fold", "findings_only"})
_JSON_OPTIONS = frozenset({"samples_detail"})  # every raw sample too, not only each GPU's combined readings


def _render_json(report: SweepReport, **options: Any) -> str:
    from gpudiag.report.json_report import render_json  # imported on use: the CLI starts without it

    unknown = sorted(set(options) - _PRESENTATION_OPTIONS - _JSON_OPTIONS)
    if unknown:
        raise TypeError(f"the json format takes no option {', '.join(unknown)}")
    return render_json(report, samples_detail=bool(options.get("samples_detail", False)))


def _render_table(report: SweepReport, **options: Any) -> str:
    from gpudiag.report.table import render_table  # rich is imported only when a table is drawn

    return render_table(report, **options)


def _render_html(report: SweepReport, **options: Any) -> str:
    from gpudiag.report.html import render_html  # imported on use, like the others

    return render_html(report)


_RENDERERS: dict[OutputFormat, Callable[..., str]] = {
    OutputFormat.TABLE: _render_table,
    OutputFormat.JSON: _render_json,
    OutputFormat.HTML: _render_html,
}


def render(report: SweepReport, fmt: OutputFormat | str, **options: Any) -> str:
    """``report`` as text in format ``fmt``; ``options`` go to the formatter (table: ``width``, ``color``,
    ``fold``, ``findings_only``; json: ``samples_detail``).

    Raises ``ValueError`` for an unknown format name.
    """
    return _RENDERERS[OutputFormat(fmt)](report, **options)
