"""Which process a finding names and why (issue 21), on hand-built readings: the process whose kernels occupy a
starved GPU, the one pegging a core on a host-bound one, the holder of a GPU held idle; memory no listed
process holds. The real H200 recordings are replayed in test_h200_culprit.py."""

from __future__ import annotations

import dataclasses

from builders import gpu, node, sample

from gpudiag.checks import CheckSettings, evaluate
from gpudiag.checks.context import NodeFacts
from gpudiag.checks.gpu import busy_low_power, host_bound
from gpudiag.checks.holding import gpu_held_idle, gpu_memory_unaccounted
from gpudiag.model import GpuProcess, HostStatus
from gpudiag.model.culprit import ChosenBy, choose_working

S = CheckSettings()
STARVED = gpu(utilization_pct=100.0, power_w=120.0, memory_utilization_pct=0.0)


def proc(pid: int, **overrides: object) -> GpuProcess:
    values: dict[str, object] = {"gpu": 0, "pid": pid, "command": ("python3", f"w{pid}.py"), "user": "alice",
                                 "cpu_pct": 0.0, "used_memory_mib": 1024.0}
    values.update(overrides)
    return GpuProcess(**values)


def facts(g, *procs: GpuProcess, **node_fields: object) -> NodeFacts:  # type: ignore[no-untyped-def]
    return NodeFacts.of(node([g], processes=procs, **node_fields))


SPINNER = proc(11, cpu_pct=100.0, used_memory_mib=1100.0, sm_utilization_pct=100.0)
HOLDER = proc(12, cpu_pct=0.0, used_memory_mib=61_900.0, sm_utilization_pct=None, job_id="777")


def test_busy_low_power_names_the_process_whose_kernels_occupy_the_gpu_not_the_biggest_holder() -> None:
    (f,) = busy_low_power("h", STARVED, S, facts(STARVED, HOLDER, SPINNER))
    assert f.evidence["pid"] == 11 and f.evidence["process_chosen_by"] == "sm_share"
    assert f.evidence["process_chosen_why"] == ("its kernels held the GPU's SMs 100% of the window (NVML "
                                                "per-process utilization; pid 12 0%)")
    assert "; on it: pid 11 w11.py, chosen as its kernels held the GPU's SMs 100% of the window" in f.summary


def test_without_per_process_utilization_the_culprit_cannot_be_told_apart() -> None:
    blind = [dataclasses.replace(p, sm_utilization_pct=None) for p in (SPINNER, HOLDER)]
    (f,) = busy_low_power("h", STARVED, S, facts(STARVED, *blind))
    assert f.evidence["process_chosen_by"] == "ambiguous" and "pid" not in f.evidence
    assert f.evidence["processes"] == "pid 12 w12.py (job 777), alice, 60.4 GiB; pid 11 w11.py, alice, 1.1 GiB"
    assert "; the culprit cannot be told apart: 2 processes are on the GPU and there is no per-process " \
           "utilization" in f.summary


def test_one_process_is_named_as_the_only_one_and_ties_stay_ambiguous() -> None:
    (f,) = busy_low_power("h", STARVED, S, facts(STARVED, HOLDER))
    assert (f.evidence["pid"], f.evidence["process_chosen_by"]) == (12, "only")
    tie = choose_working((dataclasses.replace(SPINNER, sm_utilization_pct=50.0),
                          dataclasses.replace(HOLDER, sm_utilization_pct=50.0)))
    assert tie is not None and tie.chosen_by is ChosenBy.AMBIGUOUS and tie.process is None


def eager(*utils: float) -> object:
    median = sorted(utils)[len(utils) // 2]
    return gpu(utilization_pct=median, power_w=140.0, samples=[sample(utilization_pct=u) for u in utils])


def test_host_bound_at_any_sample_count_when_the_window_shows_kernels() -> None:
    """Eager decode read 4% over 3 samples (nothing, with the old 5% floor) and 4-7% over 5."""
    pegged = proc(20, cpu_pct=100.0)
    for window in (eager(3.0, 4.0, 6.0), eager(4.0, 4.0, 5.0, 6.0, 7.0), eager(*[4.0, 5.0] * 5)):
        (f,) = host_bound("h", window, S, facts(window, pegged))  # type: ignore[arg-type]
        assert f.evidence["process_chosen_by"] == "cpu" and f.evidence["pid"] == 20
        assert "kernels ran in the window (its busiest sample read" in f.summary


def test_host_bound_stays_quiet_on_a_gpu_that_ran_no_kernel() -> None:
    idle = eager(0.0, 0.0, 0.0)
    assert host_bound("h", idle, S, facts(idle, proc(20, cpu_pct=100.0))) == ()  # type: ignore[arg-type]


def test_host_bound_names_the_launching_process_by_its_sm_share() -> None:
    """A pegged CPU-only process beside another's kernels did not launch them: per-process shares decide."""
    window = eager(0.0, 3.0, 0.0)
    cpu_only = proc(30, cpu_pct=100.0, sm_utilization_pct=0.0)
    launcher = proc(31, cpu_pct=100.0, sm_utilization_pct=4.0)
    assert host_bound("h", window, S, facts(window, cpu_only, proc(32, sm_utilization_pct=3.0))) == ()  # type: ignore[arg-type]
    (f,) = host_bound("h", window, S, facts(window, launcher))  # type: ignore[arg-type]
    assert "its kernels held the SMs 4% of the window" in f.summary


IDLE = gpu(utilization_pct=0.0, power_w=124.0, memory_total_mib=143_771.0, memory_used_mib=103_000.0,
           samples=[sample(utilization_pct=0.0)] * 5)


def test_gpu_held_idle_names_the_holder_its_user_job_and_memory() -> None:
    hold = proc(40, used_memory_mib=102_400.0, job_id="81723", container="docker 3f2a9c1b0e4d")
    (f,) = gpu_held_idle("h", IDLE, S, facts(IDLE, hold))
    assert f.code == "GPU_HELD_IDLE" and f.evidence["process_chosen_by"] == "memory"
    assert f.evidence["holder"] == "job 81723" and f.evidence["held_pct"] == 71.2
    assert f.summary.startswith("held and idle: 0% busy in all 5 samples over 4.0 s while pid 40 w40.py (job 81723) "
                                "holds 100.0 GiB of its 140.4 GiB (71%), drawing 124 W; user alice, Slurm job "
                                "81723, docker 3f2a9c1b0e4d")


def test_gpu_held_idle_not_without_a_process_nor_on_a_busy_gpu_nor_for_a_bare_context() -> None:
    hold = proc(40, used_memory_mib=102_400.0)
    assert gpu_held_idle("h", IDLE, S, facts(IDLE)) == ()
    one_busy_sample = dataclasses.replace(IDLE, samples=(sample(utilization_pct=0.0), sample(utilization_pct=2.0)))
    assert gpu_held_idle("h", one_busy_sample, S, facts(one_busy_sample, hold)) == ()
    # a bare CUDA context (612 MiB on the H200) is not a holder; anything that allocated past the floor is
    assert gpu_held_idle("h", IDLE, S, facts(IDLE, proc(40, used_memory_mib=612.0))) == ()
    assert gpu_held_idle("h", IDLE, S, facts(IDLE, proc(40, used_memory_mib=S.held_idle_memory_mib - 1))) == ()
    (f,) = gpu_held_idle("h", IDLE, S, facts(IDLE, proc(40, used_memory_mib=S.held_idle_memory_mib)))
    assert f.evidence["held_pct"] == 0.7 and f.evidence["held_idle_memory_mib"] == 1024.0
    codes = [f.code for f in evaluate("h", HostStatus.OK, None, node([IDLE], processes=(hold,)), S)]
    assert codes == ["GPU_HELD_IDLE"]


def test_memory_no_listed_process_holds_is_named_with_the_amount() -> None:
    used = gpu(utilization_pct=0.0, memory_used_mib=81_000.0)
    elsewhere = proc(1, gpu=1, used_memory_mib=20_000.0)
    (f,) = gpu_memory_unaccounted("h", used, S, facts(used, elsewhere, processes_from="nvml", processes_user="bob"))
    assert f.evidence["unaccounted_memory_mib"] == 81_000.0
    assert f.summary.startswith("79.1 GiB of its 79.1 GiB used memory is held by no listed process (nvml lists no "
                                "process on it, though it lists some on other GPUs): a process in another PID "
                                "namespace or container this sweep's user (as user bob) cannot see")
    # a listing that found nothing on the whole node says something about the sweep, not this GPU
    assert gpu_memory_unaccounted("h", used, S, facts(used, processes_from="nvml")) == ()
    some = proc(50, used_memory_mib=20_000.0)
    (f,) = gpu_memory_unaccounted("h", used, S, facts(used, some, processes_from="nvidia-smi"))
    assert f.evidence["unaccounted_memory_mib"] == 61_000.0 and "the 1 listed process hold 19.5 GiB" in f.summary


def test_memory_unaccounted_stays_quiet_on_the_driver_reserve_and_unread_lists() -> None:
    reserve = gpu(memory_used_mib=1143.9)  # NVML on the H200: 520 MiB process + 624 MiB the driver keeps
    assert gpu_memory_unaccounted("h", reserve, S, facts(reserve, proc(1, used_memory_mib=520.0),
                                                           processes_from="nvml")) == ()
    big = gpu(memory_used_mib=81_000.0)
    assert gpu_memory_unaccounted("h", big, S, facts(big)) == ()  # processes not read
    assert gpu_memory_unaccounted("h", big, S, facts(big, processes_from="nvml", processes_unlisted=(0,))) == ()
    assert gpu_memory_unaccounted("h", big, S, facts(big, proc(1, used_memory_mib=None),
                                                       processes_from="nvml")) == ()


def test_the_evidence_a_check_writes_is_the_process_the_report_reads_back() -> None:
    # One writer (said, through checks.named.choice_evidence) and one reader (named_in) of the evidence keys:
    # what a finding names is what the table's row names, also after a JSON round trip of the evidence.
    import json

    from gpudiag.checks.named import choice_evidence
    from gpudiag.model import GpuProcess
    from gpudiag.model.culprit import ChosenBy, ProcessChoice, named_in

    spinner, holder = GpuProcess(pid=11, gpu=0, command=("spin",)), GpuProcess(pid=12, gpu=0, command=("hold",))
    choice = ProcessChoice(chosen_by=ChosenBy.CPU, process=spinner, why="it uses 99% of a CPU core")
    evidence = json.loads(json.dumps(choice_evidence(choice)))
    assert named_in(evidence, (holder, spinner)) == choice
    assert named_in(evidence, (holder,)) is None  # the named process is gone from the listing
    ambiguous = ProcessChoice(chosen_by=ChosenBy.AMBIGUOUS, why="2 processes", candidates=(spinner, holder))
    assert named_in(choice_evidence(ambiguous), (spinner, holder)) is None  # names no pid
