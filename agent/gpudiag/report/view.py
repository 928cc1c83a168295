"""The one seam between a report and its reader: the :class:`Format` protocol every format implements, and the
:class:`ReportView` that says how the reader wants it shown.

A format is ``render(report, view) -> str``: one signature for all of them, so the CLI and the scheduled audit
call one :func:`gpudiag.report.render` and never a formatter's own keywords. A format reads the fields of the
view it has a use for and ignores the rest (the JSON has no width; the table no raw samples), so a caller
builds one view whatever the format. The thresholds the checks judged by are not in the view: they are part of
the report (:attr:`gpudiag.model.SweepReport.settings`), so every format shows the ones the run used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from gpudiag.model import SweepReport
from gpudiag.model.changes import ChangeSet, FlapRule

# (host, GPU index) -> (reading, values over the recorded runs, oldest first): the HTML's sparklines.
Trends = Mapping[tuple[str, int], tuple[tuple[str, tuple[float | None, ...]], ...]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportView:
    """How a report is to be shown; every field has the value that suits a file or a pipe."""

    width: int = 160  # table: the columns it has (the CLI gives the terminal's)
    color: bool = False  # table: ANSI colours
    fold: bool = True  # table: identical hosts and GPUs folded into one row (clush -b)
    findings_only: bool = False  # table: only the findings and the exit line (--quiet when something is wrong)
    samples_detail: bool = False  # json: every raw sample too, not only each GPU's combined readings
    one_line: bool = False  # json: the document on one line (gpudiag watch: one document a line)
    changes: ChangeSet | None = None  # with --history: what changed since the last recorded run
    run_id: int | None = None  # json, with changes: the run's id in the history
    flap: FlapRule = field(default_factory=FlapRule)  # table, with changes: how flapping was judged
    trends: Trends | None = None  # html, with --history: readings of the flagged GPUs over the recorded runs
    extra: Mapping[str, object] = field(default_factory=dict)  # json: top-level blocks (the Slurm step's)
    tail: str = ""  # table: lines printed after the table (the Slurm states and actions)


class Format(Protocol):
    """A report format: a module (or object) with this one function. Pure: returns text, prints nothing."""

    def render(self, report: SweepReport, view: ReportView) -> str:
        """``report`` as this format's text, shown as ``view`` asks."""
        ...
