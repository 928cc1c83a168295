"""One GPU's readings: the samples of the window, the power figure and its share of the enforced limit, the
clock-event reasons by name.

Standard library only; see :mod:`gpudiag.model`."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

# NVML clock-event reason bits (nvml.h, nvmlClocksEventReason*), named as nvidia-smi names them.
CLOCK_EVENT_REASONS: tuple[tuple[int, str], ...] = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
    # Added by the newest drivers and bindings (nvml.h nvmlClocksEventReasonBoardLimit and ...Reliability;
    # https://docs.nvidia.com/deploy/nvml-api/api/group__nvmlClocksEventReasons.html): before, these bits
    # read "0x200" and "0x400".
    (0x200, "board_limit"),
    (0x400, "reliability"),
)
_REASON_BIT = {name: bit for bit, name in CLOCK_EVENT_REASONS}


def decode_reasons(mask: int | None) -> tuple[str, ...]:
    """Bit mask → reason names, in bit order; unknown bits appear as ``0x...``."""
    if mask is None:
        return ()
    names = [name for bit, name in CLOCK_EVENT_REASONS if mask & bit]
    unknown = mask & ~sum(_REASON_BIT.values())
    if unknown:
        names.append(hex(unknown))
    return tuple(names)


def reasons_mask(names: Iterable[str]) -> int:
    """Reason names → their bit mask (the inverse of :func:`decode_reasons` for known names)."""
    return sum(_REASON_BIT[name] for name in set(names))


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuSample:
    """One instant of one GPU: the readings that move (``per_sample`` in the table of readings,
    ``gpudiag_node.readings``, whose ``name`` is the field here). ``t_s``: seconds since the first sample."""

    t_s: float | None = None
    utilization_pct: float | None = None  # utilization.gpu
    memory_utilization_pct: float | None = None  # utilization.memory
    power_w: float | None = None  # power.draw (a 1 s average on Ampere and newer)
    power_instant_w: float | None = None  # power.draw.instant
    sm_clock_mhz: float | None = None  # clocks.sm
    clock_event_reasons_mask: int | None = None  # clocks_event_reasons.active
    temperature_c: float | None = None  # temperature.gpu
    memory_temperature_c: float | None = None  # temperature.memory (HBM), NVML_FI_DEV_MEMORY_TEMP
    pstate: str | None = None
    pcie_gen: int | None = None  # pcie.link.gen.current
    pcie_width: int | None = None  # pcie.link.width.current
    memory_used_mib: float | None = None  # memory.used


@dataclass(frozen=True, slots=True, kw_only=True)
class NvLink:
    """One NVLink of a GPU over the sampling window: its state at the window's end and its error counters
    (CRC, replay, recovery: since the driver loaded) at the end, with how much each rose within the window.
    None: not reported (the driver gave no value, or only one end of the window was read)."""

    link: int
    active: bool | None = None
    crc_errors: int | None = None
    replay_errors: int | None = None
    recovery_errors: int | None = None
    crc_errors_rise: int | None = None  # end minus start of the window
    replay_errors_rise: int | None = None
    recovery_errors_rise: int | None = None

    def rises(self) -> tuple[tuple[str, int], ...]:
        """(counter, rise) of the counters that rose within the window: ("crc", 12)."""
        return tuple((name, rise) for name, rise in (("crc", self.crc_errors_rise),
                                                     ("replay", self.replay_errors_rise),
                                                     ("recovery", self.recovery_errors_rise)) if rise)


class PowerSource(str, enum.Enum):
    """Where a GPU's power figure comes from, best first."""

    ENERGY_COUNTER = "energy_counter"  # NVML's total-energy counter: the exact average over the window
    POWER_DRAW = "power_draw"  # the median of the power.draw samples (each a 1 s average on Ampere+)
    POWER_DRAW_INSTANT = "power_draw_instant"  # the median of the power.draw.instant samples

    @property
    def short(self) -> str:
        """How the table names it: "energy-counter average", "power.draw median"."""
        return {PowerSource.ENERGY_COUNTER: "energy-counter average", PowerSource.POWER_DRAW: "power.draw median",
                PowerSource.POWER_DRAW_INSTANT: "power.draw.instant median"}[self]


# Each source and the reading of GpuReading it reads, best first: the one place the power figure is chosen from
# (GpuReading.power), and the JSON's raw readings (the power object's "readings", by source).
POWER_READINGS: tuple[tuple[PowerSource, str], ...] = (
    (PowerSource.ENERGY_COUNTER, "energy_power_w"),
    (PowerSource.POWER_DRAW, "power_w"),
    (PowerSource.POWER_DRAW_INSTANT, "power_instant_w"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Power:
    """A GPU's one power figure and its share of the enforced limit: what the table, the JSON, the checks
    and their evidence all show (:meth:`GpuReading.power` decides it)."""

    watts: float
    source: PowerSource
    enforced_limit_w: float | None = None

    @property
    def limit_ratio(self) -> float | None:
        """The share of the enforced limit, 0-1, unrounded (Prometheus' ``_ratio``); None without a (positive)
        limit."""
        if not self.enforced_limit_w or self.enforced_limit_w <= 0:
            return None
        return self.watts / self.enforced_limit_w

    @property
    def pct_of_limit(self) -> float | None:
        """Percent of the enforced limit, one decimal (what the reports show and the checks compare); None
        without a (positive) limit."""
        if not self.enforced_limit_w or self.enforced_limit_w <= 0:
            return None
        return round(100.0 * self.watts / self.enforced_limit_w, 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuReading:
    """One GPU over the sampling window: every reading of the table of readings
    (``gpudiag_node.readings``: its ``name`` is the field here), the samples combined as the table
    says (medians for most), plus what is derived from them.

    ``failed_readings`` holds (reading, why) for readings whose read *failed* (NVMLError_Unknown, nvidia-smi's
    ``[unknown error]``, a value that is no number): they are None here, and a check that needs one says
    UNKNOWN. A reading the GPU simply does not support is None and not listed: not applicable."""

    index: int
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    compute_capability: str | None = None  # "12.0"
    sm: str | None = None  # "SM120", from compute_capability (gpudiag.model.arch)
    arch: str | None = None  # "Blackwell (RTX)"
    enforced_power_limit_w: float | None = None  # enforced.power.limit
    default_power_limit_w: float | None = None  # power.default_limit
    max_sm_clock_mhz: float | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None
    ecc_uncorrected: int | None = None  # ecc.errors.uncorrected.volatile.total
    memory_total_mib: float | None = None
    # Memory health (read once per window; None: this GPU or driver does not report it)
    remapped_rows_correctable: int | None = None  # remapped_rows.correctable: rows remapped for correctable errors
    remapped_rows_uncorrectable: int | None = None  # remapped_rows.uncorrectable
    remapped_rows_pending: bool | None = None  # remapped_rows.pending: a remap waits for the next GPU reset
    remapped_rows_failure: bool | None = None  # remapped_rows.failure: a remap failed (no spare row left)
    retired_pages_sbe: int | None = None  # retired_pages.single_bit_ecc.count (before Ampere)
    retired_pages_dbe: int | None = None  # retired_pages.double_bit.count
    retired_pages_pending: bool | None = None  # retired_pages.pending: a retirement waits for a reset
    ecc_mode_enabled: bool | None = None  # ecc.mode.current (None: the GPU has no ECC)
    ecc_mode_pending_enabled: bool | None = None  # ecc.mode.pending: what the next reset switches to
    ecc_corrected: int | None = None  # ecc.errors.corrected.volatile.total (since the driver loaded)
    ecc_uncorrected_aggregate: int | None = None  # ecc.errors.uncorrected.aggregate.total (lifetime, InfoROM)
    ecc_corrected_aggregate: int | None = None  # ecc.errors.corrected.aggregate.total
    # The driver's recommended recovery (gpu_recovery_action, NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): "none",
    # "gpu_reset", "node_reboot", "drain_p2p", "drain_and_reset" (gpudiag_node.readings.ENUMS)
    gpu_recovery_action: str | None = None
    # Configuration
    persistence_mode_enabled: bool | None = None  # persistence_mode
    compute_mode: str | None = None  # "default", "exclusive_process", "prohibited"
    mig_mode_enabled: bool | None = None  # mig.mode.current (None: no MIG on this GPU)
    mig_mode_pending_enabled: bool | None = None  # mig.mode.pending
    vbios_version: str | None = None  # vbios_version
    inforom_image_version: str | None = None  # inforom.img
    # NVSwitch fabric (nvmlDeviceGetGpuFabricInfoV): "not_supported", "not_started", "in_progress", "completed"
    fabric_state: str | None = None
    fabric_status: str | None = None  # fabric.status: "Success", or the error, once the state is completed
    fabric_health: str | None = None  # fabric.health.summary: "healthy", "unhealthy", "limited_capacity"
    utilization_pct: float | None = None
    memory_utilization_pct: float | None = None
    power_w: float | None = None  # median of the samples' power.draw
    power_instant_w: float | None = None  # median of the samples' power.draw.instant
    sm_clock_mhz: float | None = None
    clock_event_reasons_mask: int | None = None  # every reason active in any sample (OR of the masks)
    temperature_c: float | None = None
    memory_temperature_c: float | None = None
    pstate: str | None = None  # the last sample's
    pcie_gen: int | None = None  # lower median: a generation the link really ran at
    pcie_width: int | None = None
    memory_used_mib: float | None = None  # the last sample's
    energy_power_w: float | None = None  # exact average over the window, from NVML's total-energy counter
    lost: bool = False  # the driver answered for other GPUs but not this one
    failed_readings: tuple[tuple[str, str], ...] = ()
    # What the SMs did over the window, in percent: from NVML's GPM metrics (Hopper and newer, read for GPUs
    # that have processes) or DCGM profiling (dcgmi dmon fields 1002-1005, medians); None where neither is.
    sm_active_pct: float | None = None
    sm_occupancy_pct: float | None = None
    tensor_active_pct: float | None = None
    dram_active_pct: float | None = None
    sm_activity_from: str | None = None  # "nvml gpm" or "dcgm"
    sm_activity_unavailable: str | None = None  # why GPM gave none for this GPU ("not supported", MIG...)
    # NVLink per link (gpudiag_node.links); () where the GPU has none or they were not read
    nvlinks: tuple[NvLink, ...] = ()
    nvlink_window_s: float | None = None  # between the two reads of the counters
    samples: tuple[GpuSample, ...] = ()

    @property
    def clock_event_reasons(self) -> tuple[str, ...]:
        """The names of the reasons active in any sample."""
        return decode_reasons(self.clock_event_reasons_mask)

    def power(self) -> Power | None:
        """The GPU's power figure: the energy counter's average over the window where NVML gave it (exact),
        else the median of the power.draw samples, else of power.draw.instant; None when none was read."""
        for source, name in POWER_READINGS:
            watts = getattr(self, name)
            if watts is not None:
                return Power(watts=float(watts), source=source, enforced_limit_w=self.enforced_power_limit_w)
        return None

    @property
    def pcie_below_max(self) -> bool:
        """The PCIe link runs below its maximum generation or width (None readings never count)."""
        return _below(self.pcie_gen, self.pcie_gen_max) or _below(self.pcie_width, self.pcie_width_max)

    def failed(self, *readings: str) -> tuple[tuple[str, str], ...]:
        """(reading, why) of those of ``readings`` whose read failed."""
        return tuple((name, why) for name, why in self.failed_readings if name in readings)


def _below(current: int | None, maximum: int | None) -> bool:
    return current is not None and maximum is not None and current < maximum
