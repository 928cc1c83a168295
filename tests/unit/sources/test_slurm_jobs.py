"""The GPUs Slurm gave each running job, without Slurm: ``scontrol show job -d -o`` parsed from outputs recorded
from Slurm 22.05.8 (tests/data/slurm/README.md says how) and hand-written edge cases, and the argv
:func:`read_allocations` runs (a fake runner replaying the recordings)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from gpudiag.model import JobAllocation
from gpudiag.sources.slurm import CommandResult, SlurmError
from gpudiag.sources.slurm_jobs import (
    JobDetails,
    allocations_or_failure,
    gpu_indexes,
    parse_job_details,
    parse_squeue,
    read_allocations,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "slurm"
RECORDED = (DATA / "scontrol_show_job_d_o.txt").read_text()
SQUEUE = (DATA / "squeue_running.txt").read_text()
EDGES = (DATA / "edge_cases.txt").read_text()
STARTED = "2026-12-03T13:46:09"


def test_recorded_running_jobs_with_squeue() -> None:
    details = parse_job_details(RECORDED, parse_squeue(SQUEUE))
    assert details == JobDetails(allocations=(
        JobAllocation(job_id="7", node="gpu03", gpus=(0, 1), user="nobody", started_at=STARTED, partition="gpu",
                      name="idle-train"),
        JobAllocation(job_id="8", node="gpu01", gpus=(0, 1, 2), user="root", started_at=STARTED, partition="gpu",
                      name="two nodes"),
        JobAllocation(job_id="8", node="gpu02", gpus=(0, 1, 2), user="root", started_at=STARTED, partition="gpu",
                      name="two nodes"),
        JobAllocation(job_id="11", node="gpu04", gpus=(0,), user="root", started_at="2026-12-03T13:46:10",
                      partition="debug", name="wrap"),
    ))


def test_recorded_without_squeue_a_made_up_record_is_named_not_read() -> None:
    """Without squeue's list, the recording's made-up ``JobId=9`` line (job 5's name) and the real pending
    task 9 are the same id twice: job 9 is left out and said so; job 5's cut record too."""
    details = parse_job_details(RECORDED)
    assert [(a.job_id, a.node) for a in details.allocations] == [("7", "gpu03"), ("8", "gpu01"), ("8", "gpu02"),
                                                                ("11", "gpu04")]
    assert details.unreadable == ("job 5: UserId appears 0 times in its record",
                                  "job 9: printed 2 times (a job name imitates it)")


def test_only_the_nodes_asked() -> None:
    details = parse_job_details(RECORDED, parse_squeue(SQUEUE), nodes={"gpu02", "gpu03"})
    assert [(a.job_id, a.node) for a in details.allocations] == [("7", "gpu03"), ("8", "gpu02")]


def test_hand_written_edge_cases() -> None:
    details = parse_job_details(EDGES)
    assert details.unreadable == ()
    assert [(a.job_id, a.node, a.gpus, a.user, a.partition, a.name) for a in details.allocations] == [
        ("81700", "h001", (0, 1, 2, 3, 4, 5, 6, 7), "alice", "h200", "pretrain-70b"),  # one group, two nodes
        ("81700", "h002", (0, 1, 2, 3, 4, 5, 6, 7), "alice", "h200", "pretrain-70b"),
        ("81700", "h003", (0, 1, 4, 6), "alice", "h200", "pretrain-70b"),  # its own indexes on the third
        ("81701", "h004", (0, 2), "bob", "h200", "eval"),  # typed, a list
        ("81702", "m01", (0, 2), "carol", "mixed", "mixed types"),  # both GPU types; mps is no GPU
        ("81724", "h004", (5,), "alice", "h200", "sweep"),  # an array task: its own job id
    ]  # no GRES, CNT without indexes, shard only, pending: no allocation
    assert {a.started_at for a in details.allocations} == {"2026-12-03T09:12:40"}


@pytest.mark.parametrize(("detail", "gpus"), [
    ("gpu:2(IDX:0-1)", (0, 1)),
    ("gpu:h200:2(IDX:0,2)", (0, 2)),
    ("gpu:h200:6(IDX:0-1,4-5,7)", (0, 1, 4, 5, 7)),
    ("gpu:a100:1(IDX:0),gpu:v100:1(IDX:2)", (0, 2)),
    ("mps:100(IDX:0),gpu:1(IDX:3)", (3,)),
    ("gpu(CNT:2)", ()),
    ("gpu:0(IDX:N/A)", ()),
    ("", ()),
])
def test_gpu_indexes(detail: str, gpus: tuple[int, ...]) -> None:
    assert gpu_indexes(detail) == gpus


def test_a_bad_index_list_names_the_job() -> None:
    line = EDGES.splitlines()[1].replace("IDX:0,2", "IDX:0,x")
    assert parse_job_details(line) == JobDetails(unreadable=("job 81701: GRES index list '0,x'",))


@pytest.mark.parametrize("forged", [
    " JobState=RUNNING",  # a field imitated in the job's name
    " MinCPUsNode=1",
])
def test_a_record_imitating_a_field_is_not_read(forged: str) -> None:
    line = EDGES.splitlines()[1].replace("JobName=eval", f"JobName=eval{forged}")
    key = forged.strip().split("=")[0]
    assert parse_job_details(line) == JobDetails(unreadable=(f"job 81701: {key} appears 2 times in its record",))


def test_squeue_user_must_match() -> None:
    line = EDGES.splitlines()[1]
    assert parse_job_details(line, {"81701": "mallory"}) == JobDetails(
        unreadable=("job 81701: its record names user bob, squeue mallory",))
    assert parse_job_details(line, {"99": "bob"}) == JobDetails()  # not running on the swept nodes


def runner(outputs: dict[str, CommandResult], calls: list[list[str]]):  # type: ignore[no-untyped-def]
    def run(argv: Sequence[str]) -> CommandResult:
        calls.append(list(argv))
        return outputs[argv[0]]
    return run


def test_read_allocations_runs_squeue_then_scontrol() -> None:
    calls: list[list[str]] = []
    run = runner({"squeue": CommandResult(returncode=0, stdout=SQUEUE, stderr=""),
                  "scontrol": CommandResult(returncode=0, stdout=RECORDED, stderr="")}, calls)
    details = read_allocations(["gpu01", "gpu02", "gpu03"], run)
    assert calls == [["squeue", "-h", "-t", "RUNNING", "-w", "gpu[01-03]", "-o", "%A|%u"],
                     ["scontrol", "show", "job", "-d", "-o"]]
    assert [(a.job_id, a.node) for a in details.allocations] == [("7", "gpu03"), ("8", "gpu01"), ("8", "gpu02")]


def test_read_allocations_no_running_job_asks_no_more() -> None:
    calls: list[list[str]] = []
    run = runner({"squeue": CommandResult(returncode=0, stdout="", stderr="")}, calls)
    assert read_allocations(["gpu01"], run) == JobDetails() and len(calls) == 1
    assert read_allocations([], run) == JobDetails() and len(calls) == 1


def test_read_allocations_slurm_refusing_is_one_line() -> None:
    run = runner({"squeue": CommandResult(returncode=1, stdout="",
                                          stderr="squeue: error: Invalid node name specified\n")}, [])
    with pytest.raises(SlurmError, match=r"^the running jobs: squeue says: squeue: error: Invalid node name "
                                         r"specified$"):
        read_allocations(["nope"], run)


def test_for_a_sweep_slurm_failing_is_no_allocation_and_one_line() -> None:
    refusing = runner({"squeue": CommandResult(returncode=1, stdout="", stderr="squeue: error: timeout\n")}, [])
    assert allocations_or_failure(["gpu01"], refusing) == (JobDetails(), (
        "Slurm's GPU allocations were not read (the running jobs: squeue says: squeue: error: timeout): this "
        "sweep cannot tell GPU_ALLOCATED_IDLE"))

    def not_allowed(argv: Sequence[str]) -> CommandResult:
        raise PermissionError(13, "Permission denied", argv[0])

    details, failure = allocations_or_failure(["gpu01"], not_allowed)
    assert details == JobDetails() and failure == ("Slurm's GPU allocations were not read ([Errno 13] Permission "
                                                   "denied: 'squeue'): this sweep cannot tell GPU_ALLOCATED_IDLE")


def test_the_jobs_left_out_are_one_line() -> None:
    assert JobDetails().note is None
    assert parse_job_details(RECORDED).note == ("Slurm: 2 jobs' GPU allocations left out (job 5: UserId appears 0 "
                                                "times in its record; job 9: printed 2 times (a job name imitates "
                                                "it))")
