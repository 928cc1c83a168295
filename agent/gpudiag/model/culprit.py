"""Which process a finding names, and why that one (:class:`ProcessChoice`): the one doing what the finding is
about. A starved GPU's culprit is the process whose kernels occupy it (its SM share over the window, NVML's
``nvmlDeviceGetProcessUtilization``), a host-bound GPU's the process pegging a core, a held GPU's the one
holding its memory. The process holding the most memory is not the one spinning kernels: on a real H200 a
60 GiB idle holder beside a 1 GiB spinner was named for the spinner's BUSY_LOW_POWER (issue 21).

Standard library only; see :mod:`gpudiag.model`."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gpudiag.model.node import GpuProcess


class ChosenBy(str, enum.Enum):
    """How the named process was chosen (the JSON's ``process_chosen_by``)."""

    ONLY = "only"  # the one process on the GPU
    SM_SHARE = "sm_share"  # the highest SM share over the window (NVML per-process utilization)
    CPU = "cpu"  # the one using the most CPU (a pegged launch thread)
    MEMORY = "memory"  # the one holding the most GPU memory (a GPU held and idle)
    AMBIGUOUS = "ambiguous"  # several processes and nothing to tell which one does the work


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessChoice:
    """The process a finding (or the table) names on one GPU, how it was chosen and why, in words. Ambiguous:
    ``process`` is None and ``candidates`` lists every process on the GPU, most memory first."""

    chosen_by: ChosenBy
    why: str
    process: GpuProcess | None = None
    candidates: tuple[GpuProcess, ...] = ()

    @property
    def label(self) -> str:
        """ "pid 4312 sglang (job 81723)", or "one of 2: pid 11 a.py, pid 12 b.py"."""
        if self.process is not None:
            return self.process.label
        shown = ", ".join(p.label for p in self.candidates[:MAX_LISTED])
        more = f", +{len(self.candidates) - MAX_LISTED} more" if len(self.candidates) > MAX_LISTED else ""
        return f"one of {len(self.candidates)}: {shown}{more}"


MAX_LISTED = 4  # candidates named in an ambiguous label

# How a finding's evidence says which process it names: written by :func:`said` (the checks), read back by
# :func:`named_in` (the reports, and a report read back from JSON), so the keys are spelled here only.
PID, CHOSEN_BY, CHOSEN_WHY = "pid", "process_chosen_by", "process_chosen_why"


def said(choice: ProcessChoice) -> dict[str, object]:
    """How ``choice`` was made, as evidence: ``process_chosen_by``, ``process_chosen_why`` (the checks add the
    chosen process's own evidence, its ``pid`` first)."""
    return {CHOSEN_BY: choice.chosen_by.value, CHOSEN_WHY: choice.why}


def named_in(evidence: Mapping[str, object], procs: Iterable[GpuProcess]) -> ProcessChoice | None:
    """The process a finding's evidence names (its pid, how and why it was chosen), found among ``procs``;
    None when the evidence names none (an ambiguous choice, a finding about no process) or it is not there."""
    chosen_by, pid = evidence.get(CHOSEN_BY), evidence.get(PID)
    if not isinstance(chosen_by, str) or not isinstance(pid, int) or chosen_by not in _CHOSEN_BY:
        return None
    named = next((p for p in procs if p.pid == pid), None)
    if named is None:
        return None
    return ProcessChoice(chosen_by=ChosenBy(chosen_by), process=named, why=str(evidence.get(CHOSEN_WHY) or ""))


_CHOSEN_BY = frozenset(c.value for c in ChosenBy)


def _gib(mib: float | None) -> str:
    return "an unknown amount of memory" if mib is None else f"{mib / 1024:.1f} GiB"


def _by_memory(procs: Iterable[GpuProcess]) -> tuple[GpuProcess, ...]:
    return tuple(sorted(procs, key=lambda p: (-(p.used_memory_mib or 0.0), p.pid)))


def choose_working(procs: tuple[GpuProcess, ...]) -> ProcessChoice | None:
    """The process whose kernels occupy the GPU: the only one; else the highest per-process SM share when it
    stands above the others (a process NVML gave no sample for ran no kernel: 0); else ambiguous (no
    per-process utilization, as on the nvidia-smi path, or a tie). None without processes."""
    if not procs:
        return None
    if len(procs) == 1:
        p = procs[0]
        share = f" (SM share {p.sm_utilization_pct:.0f}% over the window)" if p.sm_utilization_pct is not None else ""
        return ProcessChoice(chosen_by=ChosenBy.ONLY, process=p, why=f"the only process on the GPU{share}")
    if any(p.sm_utilization_pct is not None for p in procs):
        ranked = sorted(procs, key=lambda p: (-(p.sm_utilization_pct or 0.0), p.pid))
        top, runner_up = ranked[0].sm_utilization_pct or 0.0, ranked[1].sm_utilization_pct or 0.0
        if top > 0.0 and top > runner_up:
            others = ", ".join(f"pid {p.pid} {p.sm_utilization_pct or 0.0:.0f}%" for p in ranked[1:MAX_LISTED + 1])
            return ProcessChoice(chosen_by=ChosenBy.SM_SHARE, process=ranked[0],
                                 why=f"its kernels held the GPU's SMs {top:.0f}% of the window (NVML per-process "
                                     f"utilization; {others})")
        why = (f"{len(procs)} processes share the GPU at equal SM shares ({top:.0f}%)" if top > 0.0 else
               f"none of its {len(procs)} processes ran kernels in the window by NVML's per-process utilization")
    else:
        why = (f"{len(procs)} processes are on the GPU and there is no per-process utilization to tell which one "
               "runs the kernels (nvidia-smi gives none; NVML's per-process utilization does)")
    return ProcessChoice(chosen_by=ChosenBy.AMBIGUOUS, why=why, candidates=_by_memory(procs))


def choose_pegging(procs: tuple[GpuProcess, ...], min_cpu_pct: float) -> ProcessChoice | None:
    """The process pegging a core: the busiest of those using at least ``min_cpu_pct`` of one; None when none
    does (an unreadable CPU figure is never guessed)."""
    pegged = sorted((p for p in procs if p.cpu_pct is not None and p.cpu_pct >= min_cpu_pct),
                    key=lambda p: (-(p.cpu_pct or 0.0), p.pid))
    if not pegged:
        return None
    p = pegged[0]
    rest = "" if len(procs) == 1 else f", the most of the GPU's {len(procs)} processes"
    return ProcessChoice(chosen_by=ChosenBy.CPU, process=p, why=f"it uses {p.cpu_pct:.0f}% of a CPU core{rest}")


def choose_holding(procs: tuple[GpuProcess, ...]) -> ProcessChoice | None:
    """The process holding the most GPU memory; None without processes or memory figures."""
    held = [p for p in procs if p.used_memory_mib]
    if not held:
        return None
    p = _by_memory(held)[0]
    rest = "" if len(procs) == 1 else f", the most of the GPU's {len(procs)} processes"
    return ProcessChoice(chosen_by=ChosenBy.MEMORY, process=p, why=f"it holds {_gib(p.used_memory_mib)}{rest}")
