"""The HTML page's jobs section: one row per job across its hosts (job, user, hosts folded, GPUs, median busy %
and power % of limit, verdict), the flagged jobs first, and the groups' notes. Pure text."""

from __future__ import annotations

from html import escape

from gpudiag.model import SweepReport
from gpudiag.report.findings_section import most_serious_first
from gpudiag.report.fold import host_label


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:.0f}"


def jobs_html(report: SweepReport) -> str:
    """``<h2>Jobs</h2>`` and its table, and the notes; "" when the sweep found neither."""
    out = ""
    if report.jobs:
        jobs = sorted(report.jobs, key=lambda j: (most_serious_first(j.severity), j.job))
        head = "".join(f"<th>{c}</th>" for c in ("job", "user", "hosts", "GPUs", "busy %", "power % of limit",
                                                "verdict"))
        rows = []
        for j in jobs:
            unanswered = sum(1 for g in j.gpus if g.gpu is None)
            gpus = f"{j.gpu_count}" + (f" (+{unanswered} host{'s' if unanswered != 1 else ''} not read)"
                                       if unanswered else "")
            cells = (j.job, j.user or "", host_label(j.hosts), gpus, _pct(j.utilization_pct),
                     _pct(j.power_pct_of_limit), j.verdict)
            css = f' class="{j.severity.label}"' if j.code is not None else ""
            rows.append(f"<tr{css}>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
        out += f'<h2>Jobs</h2><div class="wide"><table id="jobs"><tr>{head}</tr>{"".join(rows)}</table></div>'
    if report.notes:
        out += '<h2>Notes</h2><ul id="notes">' + "".join(f"<li>{escape(n.summary)}</li>" for n in report.notes) \
            + "</ul>"
    return out
