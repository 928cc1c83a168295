"""The table's jobs section: one line per job across its hosts (job, user, hosts folded, GPUs, median busy % and
power % of the enforced limit, the verdict), the jobs with a verdict first; the groups' notes after it. Pure
text through rich, in the width it is given: at 80 columns the hosts and the verdict wrap in their columns.
"""

from __future__ import annotations

from rich import box
from rich.console import RenderableType
from rich.padding import Padding
from rich.table import Table

from gpudiag.model import JobView, SweepReport
from gpudiag.report.findings_section import most_serious_first
from gpudiag.report.fold import host_label
from gpudiag.report.terminal import safe_text

QUIET_SHOWN = 20  # quiet jobs listed in the table (all of them are in the JSON, the HTML page and Prometheus)
SEVERITY_STYLES = {"critical": "bold red", "warning": "yellow", "unknown": "magenta"}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _gpus(job: JobView) -> str:
    shown = str(job.gpu_count)
    unanswered = sum(1 for g in job.gpus if g.gpu is None)
    return shown + ("+?" if unanswered else "")  # a host of the job did not answer: its GPUs are not known


def jobs_section(report: SweepReport, *, width: int, color: bool) -> list[RenderableType]:
    """The jobs and notes, or nothing when the sweep found no job and no note."""
    out: list[RenderableType] = []
    jobs = sorted(report.jobs, key=lambda j: (most_serious_first(j.severity), j.job))
    if jobs:
        flagged = [j for j in jobs if j.code is not None]
        quiet = [j for j in jobs if j.code is None]
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0),
                      header_style="bold" if color else "", width=None if width >= 100 else width)
        table.add_column("job", no_wrap=True, max_width=24 if width >= 100 else 14, overflow="ellipsis")
        table.add_column("user", max_width=10, overflow="fold")
        table.add_column("hosts", max_width=18, overflow="fold")
        table.add_column("GPUs", justify="right", no_wrap=True)
        table.add_column("busy", justify="right", no_wrap=True)
        table.add_column("power", justify="right", no_wrap=True)
        table.add_column("verdict", overflow="fold", ratio=1)
        for job in (*flagged, *quiet[:QUIET_SHOWN]):
            style = SEVERITY_STYLES.get(job.severity.label, "") if color and job.code else ""
            table.add_row(safe_text(job.job), safe_text(job.user or "-"), safe_text(host_label(job.hosts)),
                          safe_text(_gpus(job)), safe_text(_pct(job.utilization_pct)),
                          safe_text(_pct(job.power_pct_of_limit)), safe_text(job.verdict, style=style))
        title = "Jobs (median busy and power % of limit over each job's GPUs)"
        out += [safe_text(title, style="bold" if color else ""), Padding(table, (0, 0, 0, 2), expand=False)]
        if len(quiet) > QUIET_SHOWN:
            out.append(safe_text(f"  ... and {len(quiet) - QUIET_SHOWN} more quiet jobs (--format json lists them)"))
        out.append(safe_text(""))
    if report.notes:  # what a whole group says once (versions with no clear majority)
        out.append(safe_text("Notes", style="bold" if color else ""))
        out += [Padding(safe_text(note.summary), (0, 0, 0, 2), expand=False) for note in report.notes]
        out.append(safe_text(""))
    return out
