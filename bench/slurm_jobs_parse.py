"""What reading Slurm's GPU allocations costs gpudiag's side: :func:`gpudiag.sources.slurm_jobs.parse_job_details`
over ``scontrol show job -d -o`` of a large cluster, made from the line Slurm 22.05 printed for a running
two-node GPU job (tests/data/slurm/scontrol_show_job_d_o.txt, job 8), one job per node pair. Prints numbers only.

Run from the repository root::

    python3 bench/slurm_jobs_parse.py                # 1000, 10000 and 50000 running jobs, best of 5
    python3 bench/slurm_jobs_parse.py --jobs 20000 --runs 7

Every job is running and listed by squeue (the worst case: each record is read in full); half of the jobs'
nodes are swept (``nodes``), as when a partition of a larger cluster is.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from gpudiag.sources.slurm_jobs import parse_job_details

RECORDED = Path(__file__).resolve().parents[1] / "tests" / "data" / "slurm" / "scontrol_show_job_d_o.txt"


def cluster(jobs: int) -> tuple[str, dict[str, str], set[str]]:
    """``scontrol show job -d -o`` of ``jobs`` running jobs, squeue's job -> user, and the swept nodes."""
    line = next(x for x in RECORDED.read_text().splitlines() if x.startswith("JobId=8 "))
    lines, running, nodes = [], {}, set()
    for i in range(jobs):
        a, b = f"n{2 * i:06d}", f"n{2 * i + 1:06d}"
        text = re.sub(r"JobId=8 ", f"JobId={100000 + i} ", line, count=1)
        text = text.replace("Nodes=gpu[01-02]", f"Nodes={a},{b}").replace("NodeList=gpu[01-02]", f"NodeList={a},{b}")
        lines.append(text)
        running[str(100000 + i)] = "root"
        if i % 2 == 0:
            nodes.update((a, b))
    return "\n".join(lines) + "\n", running, nodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, action="append", help="running jobs (repeatable)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for jobs in args.jobs or [1000, 10000, 50000]:
        text, running, nodes = cluster(jobs)
        best = float("inf")
        for _ in range(args.runs):
            started = time.process_time()
            details = parse_job_details(text, running, nodes)
            best = min(best, time.process_time() - started)
        assert len(details.allocations) == jobs and not details.unreadable  # half the jobs, two nodes each
        print(f"{jobs:>6} jobs, {len(text) / 1e6:5.1f} MB of scontrol output: {best * 1000:7.1f} ms CPU "
              f"({best / jobs * 1e6:.1f} us a job), {len(details.allocations)} allocations on the swept nodes")


if __name__ == "__main__":
    main()
