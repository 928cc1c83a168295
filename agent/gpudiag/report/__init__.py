"""Report formatters: each turns a :class:`~gpudiag.model.SweepReport` into text and prints nothing.

Every format implements one protocol (:class:`~gpudiag.report.view.Format`: ``render(report, view) -> str``)
and :data:`FORMATS` is the one explicit table from the ``--format`` choice (:class:`OutputFormat`) to its
module; :func:`render` is the one entry the CLI and the scheduled audit call. A new format is one module with
a ``render`` function plus one entry here. The Prometheus text (``--prom-file``, not a ``--format`` choice)
implements the same protocol (:mod:`gpudiag.report.prometheus`).
"""

from __future__ import annotations

from collections.abc import Callable

from gpudiag.model import SweepReport
from gpudiag.model.choices import OutputFormat
from gpudiag.report.view import Format, ReportView, Trends

__all__ = ["FORMATS", "Format", "OutputFormat", "ReportView", "Trends", "render"]



# Each format's module is imported on use: the CLI starts without them, and rich is imported only when a
# table is drawn.
def _table() -> Format:
    from gpudiag.report import table

    return table


def _json() -> Format:
    from gpudiag.report import json_report

    return json_report


def _html() -> Format:
    from gpudiag.report import html

    return html


FORMATS: tuple[tuple[OutputFormat, Callable[[], Format]], ...] = (
    (OutputFormat.TABLE, _table),
    (OutputFormat.JSON, _json),
    (OutputFormat.HTML, _html),
)


def render(report: SweepReport, fmt: OutputFormat | str, view: ReportView | None = None) -> str:
    """``report`` as text in format ``fmt``, shown as ``view`` asks (default: :class:`ReportView`'s defaults).

    Raises ``ValueError`` for an unknown format name.
    """
    chosen = OutputFormat(fmt)
    (load,) = [load for name, load in FORMATS if name is chosen]
    return load().render(report, view if view is not None else ReportView())
