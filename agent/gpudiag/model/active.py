"""The active test of idle GPUs (``--active``, issue 31): what each GPU reached under a short load of its own.

Standard library only; see :mod:`gpudiag.model`. The node side is ``collectors/gpudiag_node/active.py``; the
parser :mod:`gpudiag.collect.parse_active`; the verdicts :mod:`gpudiag.checks.active`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from gpudiag.model.gpu import decode_reasons

# The most the node's test may take (start-up, the three parts on every idle GPU at once), within the host's
# deadline; a healthy H200 takes ~4 s (tests/data/h200_580.159_active).
ACTIVE_BUDGET_S = 10.0


class ActiveState(str, enum.Enum):
    """What became of one GPU's test."""

    TESTED = "tested"  # every part ran: its figures are set
    SKIPPED = "skipped"  # in use (a process, or busy) in the window or at the re-check: never touched
    TIMED_OUT = "timed_out"  # did not finish within its budget; its process was ended
    FAILED = "failed"  # a driver call failed on this GPU (its error in ``why``)
    NOT_RUN = "not_run"  # the node could not run the test (no libcuda, cuInit failed, no time left)


@dataclass(frozen=True, slots=True, kw_only=True)
class ActiveGpu:
    """One GPU's active test: the three figures and what NVML read during the load. None: not reached."""

    gpu: int
    state: ActiveState
    why: str | None = None  # why it was skipped, failed or not run
    compute_tflops: float | None = None  # fp32 FMA loop on every SM (2 FLOPs per FMA)
    compute_sm_clock_mhz: float | None = None  # median SM clock during the FMA loop
    compute_sm_clock_max_mhz: float | None = None
    compute_power_w: float | None = None  # median power draw during the FMA loop
    compute_power_max_w: float | None = None
    compute_temperature_max_c: float | None = None
    compute_clock_event_reasons_mask: int | None = None  # every reason seen during the loop (OR of the masks)
    memory_copy_gb_s: float | None = None  # device-to-device copy, bytes read plus bytes written per second
    pcie_h2d_gb_s: float | None = None  # host-to-device from pinned memory
    pcie_d2h_gb_s: float | None = None  # device-to-host into pinned memory
    pcie_gen_under_load: int | None = None  # the lowest link generation read during the transfers
    pcie_width_under_load: int | None = None  # the lowest link width read during the transfers
    xids: tuple[int, ...] = ()  # critical Xid events NVML delivered during the test
    ecc_uncorrected_rise: int | None = None  # volatile uncorrected ECC errors counted during the test
    ecc_corrected_rise: int | None = None

    @property
    def compute_clock_event_reasons(self) -> tuple[str, ...]:
        """The clock-event reasons seen during the FMA loop, by name ("sw_power_cap", ...)."""
        return decode_reasons(self.compute_clock_event_reasons_mask)

    @property
    def figures(self) -> dict[str, float | None]:
        """The three measured figures by their field names (what the reports and the history carry)."""
        return {name: getattr(self, name) for name in FIGURES}


# The measured figures, in the order the reports show them: (field, unit, short label).
FIGURE_UNITS: tuple[tuple[str, str, str], ...] = (
    ("compute_tflops", "TFLOP/s", "fp32"),
    ("memory_copy_gb_s", "GB/s", "copy"),
    ("pcie_h2d_gb_s", "GB/s", "h2d"),
    ("pcie_d2h_gb_s", "GB/s", "d2h"),
)
FIGURES = tuple(name for name, _, _ in FIGURE_UNITS)


@dataclass(frozen=True, slots=True, kw_only=True)
class ActiveTest:
    """The node's active test: its budget, how long it took, why it could not run, and each GPU's result."""

    budget_s: float | None = None
    elapsed_s: float | None = None
    error: str | None = None  # why the node could not run it: no libcuda, cuInit failed, no time left
    gpus: tuple[ActiveGpu, ...] = ()

    def of(self, gpu: int) -> ActiveGpu | None:
        """The result for GPU ``gpu``, or None when the test did not name it."""
        return next((g for g in self.gpus if g.gpu == gpu), None)

    def line(self, gpu: int) -> str | None:
        """ "fp32 58.1 TFLOP/s, copy 4210 GB/s, h2d 53.2 GB/s, d2h 52.9 GB/s" or what became of the test."""
        result = self.of(gpu)
        if result is None:
            return None
        if result.state is not ActiveState.TESTED:
            return f"{result.state.value.replace('_', ' ')}: {result.why or '?'}"
        return ", ".join(f"{label} {value:.{0 if value >= 100 else 1}f} {unit}"
                         for name, unit, label in FIGURE_UNITS if (value := getattr(result, name)) is not None)
