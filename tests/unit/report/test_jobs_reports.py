"""The jobs section in every format, on the job bed of tests/unit/checks/test_jobs.py's shape: the table at 80
columns (every line fits, the verdict wraps in its column), the JSON (read back whole), the HTML page's Jobs table,
and Prometheus with one series per job and metric, labelled with the job and user only."""

from __future__ import annotations

import dataclasses
import json
import re

from gpudiag.model import GroupNote, JobGpu, JobView, Severity, SweepReport
from gpudiag.report import OutputFormat, ReportView, render
from gpudiag.report.json_report import from_document
from gpudiag.report.prometheus import families


def _jobs(n_quiet: int = 0) -> SweepReport:
    waiting = tuple(JobGpu(host=f"node-{h:02d}", gpu=g, state="waiting", utilization_pct=100.0,
                           power_pct_of_limit=20.0) for h in range(1, 5) for g in range(8))
    hung = JobView(job="job 81723", user="alice", hosts=tuple(f"node-{h:02d}" for h in range(1, 6)),
                   gpus=(*waiting, JobGpu(host="node-05", gpu=None, state="unanswered")), utilization_pct=100.0,
                   power_pct_of_limit=20.0, verdict="waits on node-05 (its host did not answer the sweep)",
                   code="JOB_WAITS_ON", severity=Severity.WARNING)
    quiet = tuple(JobView(job=f"job {900 + i}", user="bob", hosts=(f"node-{10 + i:02d}",),
                          gpus=(JobGpu(host=f"node-{10 + i:02d}", gpu=0, state="computing", utilization_pct=98.0,
                                       power_pct_of_limit=91.0),), utilization_pct=98.0, power_pct_of_limit=91.0)
                  for i in range(n_quiet))
    note = GroupNote(group="rack2", kind="versions split", hosts=4, summary="rack2: no version has a clear majority")
    return SweepReport(started_at="2026-12-03T12:00:00+00:00", duration_s=1.0, hosts=(), jobs=(hung, *quiet),
                       notes=(note,))


def test_the_table_at_80_columns_fits_and_lists_the_flagged_job_first() -> None:
    text = render(_jobs(2), OutputFormat.TABLE, ReportView(width=80))
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    start = lines.index("Jobs (median busy and power % of limit over each job's GPUs)")
    rows = lines[start + 3:start + 8]
    assert re.match(r"  job 81723 +alice +node-\[01-05\] +32\+\? +100% +20% +waits on node-05", rows[0]), rows
    assert any(line.startswith("  job 900") for line in rows) and "rack2: no version" in text


def test_the_table_shows_twenty_quiet_jobs_and_counts_the_rest() -> None:
    text = render(_jobs(25), OutputFormat.TABLE, ReportView(width=120))
    assert text.count("  job 9") == 20 and "... and 5 more quiet jobs (--format json lists them)" in text


def test_the_json_carries_every_job_and_reads_back() -> None:
    report = _jobs(3)
    doc = json.loads(render(report, OutputFormat.JSON))
    assert [j["job"] for j in doc["jobs"]] == ["job 81723", "job 900", "job 901", "job 902"]
    assert doc["jobs"][0]["gpus"][-1] == {"host": "node-05", "gpu": None, "state": "unanswered",
                                          "utilization_pct": None, "power_pct_of_limit": None,
                                          "sm_active_pct": None, "sm_clock_mhz": None}
    back = from_document(doc)
    assert back.jobs == report.jobs and back.notes == report.notes


def test_the_html_page_has_a_jobs_table_flagged_first() -> None:
    page = render(_jobs(1), OutputFormat.HTML)
    table = page[page.index('<table id="jobs">'):]
    table = table[:table.index("</table>")]
    assert table.index("job 81723") < table.index("job 900")
    assert '<tr class="warning"><td>job 81723</td><td>alice</td><td>node-[01-05]</td><td>32 (+1 host not read)' \
        in table
    assert '<ul id="notes"><li>rack2: no version has a clear majority</li></ul>' in page


def test_prometheus_has_one_series_per_job_labelled_job_and_user_only() -> None:
    report = _jobs(2)
    jobs = {f.name: f for f in families(report) if f.name.startswith("gpudiag_job_")}
    assert sorted(jobs) == ["gpudiag_job_flagged", "gpudiag_job_gpus", "gpudiag_job_power_limit_ratio",
                            "gpudiag_job_utilization_ratio"]
    for family in jobs.values():
        assert family.label_names == ("job", "user")
        assert [dict(labels)["job"] for labels, _ in family.samples] == ["job 81723", "job 900", "job 901"]
    assert [v for _, v in jobs["gpudiag_job_flagged"].samples] == [1, 0, 0]
    assert [v for _, v in jobs["gpudiag_job_gpus"].samples] == [32, 1, 1]
    none = dataclasses.replace(report, jobs=())
    assert all(not f.samples for f in families(none) if f.name.startswith("gpudiag_job_"))
