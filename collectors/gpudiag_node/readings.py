"""The GPU readings gpudiag takes, declared once: every other copy walks this table.

Standard library only, Python 3.6+: the node imports it inside the collector bundle
to build its ``nvidia-smi --query-gpu`` list and its NVML calls, and the controller imports it (as
``gpudiag_node.readings``) to parse what came back, to combine the samples and to write and read
the JSON report. A reading's ``name`` is also its field on the model (``gpudiag.model.GpuSample`` for the
ones that move, ``GpuReading`` for all), with its unit in the name. Adding a reading is one entry here and
one field there; ``tests/unit/node/test_readings.py`` checks that the two agree.

Per entry:

* ``smi``: the ``--query-gpu`` names that mean it, newest spelling first (old drivers spell the clock reasons
  ``clocks_throttle_reasons.*``); empty when nvidia-smi has none.
  https://docs.nvidia.com/deploy/nvidia-smi/ and ``nvidia-smi --help-query-gpu``.
* ``nvml``: how NVML gives it: ``(getters, args, attribute)``: the first getter the binding has is called
  with the device handle and the pynvml constants named in ``args``, then ``attribute`` is taken from the
  result (a name, or an int: that item of a tuple result, e.g. ``nvmlDeviceGetEccMode``'s (current,
  pending)); ``nvmlDeviceGetFieldValues`` reads the one field id its ``args`` name; a getter of
  ``STRUCT_GETTERS`` fills a struct (``nvmlDeviceGetGpuFabricInfoV``). None when NVML has none.
  Only identifiers appear here, so the binding cut (``gpudiag.collect.prune``) keeps what they name. https://docs.nvidia.com/deploy/nvml-api/
* ``scale``: multiplies NVML's number into the unit of the name (mW → W, bytes → MiB); nvidia-smi is asked
  with ``nounits`` and already answers in that unit.
* ``kind``: how the value is typed: ``number`` (float), ``int``, ``mask`` (an int bit mask, ``0x..`` from
  nvidia-smi), ``text``, ``cc`` (compute capability "9.0"; NVML gives a (major, minor) pair), ``pstate``
  ("P0"; NVML gives the number), ``flag`` (a bool: nvidia-smi's Yes/No, Enabled/Disabled; NVML's 0/1),
  ``enum`` (a name of ``ENUMS[name]``: NVML gives its number, nvidia-smi its words, "GPU Reset" →
  ``gpu_reset``).
* ``per_sample``: True for a reading that moves and is read at every sample; False for one read once.
* ``combine``: how the samples become the GPU's one value: ``median``, ``lower_median`` (a real reading of an
  integer, never a half-way value), ``last``, ``any`` (bitwise OR of masks: a reason active in any sample).
* ``once``: a static reading that nvidia-smi is asked for in the window's first call only (the health and
  configuration readings: they cannot change within a window, and each field costs every call).
"""


class Reading(object):
    """One entry of the table; a plain class, not ``collections.namedtuple``: the collections module and the
    class namedtuple compiles at import cost a node 2-3 ms of CPU at every sweep."""

    __slots__ = ("name", "smi", "nvml", "scale", "kind", "per_sample", "combine", "once")

    def __init__(self, name, smi, nvml, scale, kind, per_sample, combine, once=False):
        # type: (str, tuple[str, ...], tuple[tuple[str, ...], tuple[str, ...], str | None] | None, float, str, bool, str, bool) -> None
        self.name, self.smi, self.nvml, self.scale = name, smi, nvml, scale
        self.kind, self.per_sample, self.combine, self.once = kind, per_sample, combine, once

    def _values(self):
        return tuple(getattr(self, field) for field in self.__slots__)

    def __eq__(self, other):
        return isinstance(other, Reading) and self._values() == other._values()

    def __hash__(self):
        return hash(self._values())

    def __repr__(self):
        return "Reading(%s)" % ", ".join("%s=%r" % (f, getattr(self, f)) for f in self.__slots__)


MIB = 1.0 / (1024 * 1024)
MILLI = 0.001


def _r(name, smi, nvml=None, scale=1.0, kind="number", per_sample=True, combine="median"):
    return Reading(name, tuple(smi), nvml, scale, kind, per_sample, combine, False)


def _static(name, smi, nvml=None, scale=1.0, kind="number"):
    return _r(name, smi, nvml, scale, kind, per_sample=False, combine="last")


def _once(name, smi, nvml=None, kind="int"):
    return Reading(name, tuple(smi), nvml, 1.0, kind, False, "last", True)


def _field(name):
    return (("nvmlDeviceGetFieldValues",), (name,), None)


# The names of an ``enum`` reading's values, at NVML's number (nvml.h). nvidia-smi prints them in words
# ("GPU Reset", "Exclusive_Process"), read as these names lowercased with "_" for spaces; ENUM_ALIASES
# maps the spellings that differ.
ENUMS = {
    # nvmlDeviceGpuRecoveryAction_t (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION; nvidia-smi gpu_recovery_action):
    # https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html
    "gpu_recovery_action": ("none", "gpu_reset", "node_reboot", "drain_p2p", "drain_and_reset",
                            "recover_imex_domain", "bus_reset", "system_reboot"),
    "compute_mode": ("default", "exclusive_thread", "prohibited", "exclusive_process"),  # nvmlComputeMode_t
    "fabric_state": ("not_supported", "not_started", "in_progress", "completed"),  # NVML_GPU_FABRIC_STATE_*
    # NVML_GPU_FABRIC_HEALTH_SUMMARY_* (nvmlGpuFabricInfo_v3 and newer)
    "fabric_health": ("not_supported", "healthy", "unhealthy", "limited_capacity"),
}
ENUM_ALIASES = {"reset": "gpu_reset", "reboot": "node_reboot", "drain_p2p_and_reset": "drain_and_reset",
                "drain_p2p_and_reset_gpu": "drain_and_reset", "reset_gpu": "gpu_reset", "reboot_node": "node_reboot"}


def enum_name(reading_name, number):
    # type: (str, int) -> str
    """NVML's number of an ``enum`` reading → its name (``unknown_<n>`` past the names known here)."""
    names = ENUMS[reading_name]
    return names[number] if 0 <= number < len(names) else "unknown_%d" % number


def enum_from_words(words):
    # type: (str) -> str | None
    """nvidia-smi's words of an ``enum`` reading ("GPU Reset", "Exclusive_Process") → its name."""
    name = "_".join(words.strip().lower().replace("-", " ").split())
    return ENUM_ALIASES.get(name, name)
# Getters that fill a struct instead of returning a value: the struct's pynvml class and version constants,
# newest first (a driver older than the struct answers "argument version mismatch": the next is tried).
STRUCT_GETTERS = {
    "nvmlDeviceGetGpuFabricInfoV": (("c_nvmlGpuFabricInfo_v3_t", "nvmlGpuFabricInfo_v3"),
                                    ("c_nvmlGpuFabricInfoV_t", "nvmlGpuFabricInfo_v2")),
    "nvmlDeviceGetGpuFabricInfo": (("c_nvmlGpuFabricInfo_t", None),),
}
_FABRIC = ("nvmlDeviceGetGpuFabricInfoV", "nvmlDeviceGetGpuFabricInfo")


READINGS = (
    # Identity and limits: read once.
    _static("index", ["index"], kind="int"),  # NVML: the device's position, not a getter
    _static("name", ["name"], (("nvmlDeviceGetName",), (), None), kind="text"),
    _static("uuid", ["uuid"], (("nvmlDeviceGetUUID",), (), None), kind="text"),
    _static("pci_bus_id", ["pci.bus_id"], (("nvmlDeviceGetPciInfo",), (), "busId"), kind="text"),
    _static("compute_capability", ["compute_cap"], (("nvmlDeviceGetCudaComputeCapability",), (), None),
            kind="cc"),
    _static("enforced_power_limit_w", ["enforced.power.limit", "power.limit"],
            (("nvmlDeviceGetEnforcedPowerLimit",), (), None), MILLI),
    _static("default_power_limit_w", ["power.default_limit"],
            (("nvmlDeviceGetPowerManagementDefaultLimit",), (), None), MILLI),
    _static("max_sm_clock_mhz", ["clocks.max.sm"], (("nvmlDeviceGetMaxClockInfo",), ("NVML_CLOCK_SM",), None)),
    _static("pcie_gen_max", ["pcie.link.gen.max"], (("nvmlDeviceGetMaxPcieLinkGeneration",), (), None), kind="int"),
    _static("pcie_width_max", ["pcie.link.width.max"], (("nvmlDeviceGetMaxPcieLinkWidth",), (), None), kind="int"),
    _static("ecc_uncorrected", ["ecc.errors.uncorrected.volatile.total"],
            (("nvmlDeviceGetTotalEccErrors",), ("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_VOLATILE_ECC"), None),
            kind="int"),
    _static("memory_total_mib", ["memory.total"], (("nvmlDeviceGetMemoryInfo",), (), "total"), MIB),
    # What moves: read at every sample.
    _r("utilization_pct", ["utilization.gpu"], (("nvmlDeviceGetUtilizationRates",), (), "gpu")),
    _r("memory_utilization_pct", ["utilization.memory"], (("nvmlDeviceGetUtilizationRates",), (), "memory")),
    # power.draw is a 1-second average on Ampere and newer (NVML's GetPowerUsage too); power.draw.instant is
    # the instantaneous draw (NVML_FI_DEV_POWER_INSTANT), which shows the spikes the average smooths away.
    _r("power_w", ["power.draw"], (("nvmlDeviceGetPowerUsage",), (), None), MILLI),
    _r("power_instant_w", ["power.draw.instant"],
       (("nvmlDeviceGetFieldValues",), ("NVML_FI_DEV_POWER_INSTANT",), None), MILLI),
    _r("sm_clock_mhz", ["clocks.sm", "clocks.current.sm"], (("nvmlDeviceGetClockInfo",), ("NVML_CLOCK_SM",), None)),
    # Renamed from "throttle" to "event" reasons in newer drivers and bindings; both give the same bit mask.
    _r("clock_event_reasons_mask", ["clocks_event_reasons.active", "clocks_throttle_reasons.active"],
       (("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"), (), None),
       kind="mask", combine="any"),
    _r("temperature_c", ["temperature.gpu"], (("nvmlDeviceGetTemperature",), ("NVML_TEMPERATURE_GPU",), None)),
    _r("pstate", ["pstate"], (("nvmlDeviceGetPerformanceState",), (), None), kind="pstate", combine="last"),
    _r("pcie_gen", ["pcie.link.gen.current", "pcie.link.gen.gpucurrent"],
       (("nvmlDeviceGetCurrPcieLinkGeneration",), (), None), kind="int", combine="lower_median"),
    _r("pcie_width", ["pcie.link.width.current"], (("nvmlDeviceGetCurrPcieLinkWidth",), (), None), kind="int",
       combine="lower_median"),
    _r("memory_used_mib", ["memory.used"], (("nvmlDeviceGetMemoryInfo",), (), "used"), MIB, combine="last"),
    # Issue 20's readings come last, so that the older ones keep their CSV columns. The HBM temperature moves:
    _r("memory_temperature_c", ["temperature.memory"], _field("NVML_FI_DEV_MEMORY_TEMP")),  # HBM, where reported
    # Memory health (issue 20): row remapping (Ampere and newer), page retirement (before Ampere), ECC.
    # https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/ ; the driver keeps the aggregate counts
    # across driver loads (in the InfoROM), the volatile ones since the driver loaded.
    _once("remapped_rows_correctable", ["remapped_rows.correctable"], (("nvmlDeviceGetRemappedRows",), (), 0)),
    _once("remapped_rows_uncorrectable", ["remapped_rows.uncorrectable"],
          (("nvmlDeviceGetRemappedRows",), (), 1)),
    _once("remapped_rows_pending", ["remapped_rows.pending"], (("nvmlDeviceGetRemappedRows",), (), 2),
          kind="flag"),
    _once("remapped_rows_failure", ["remapped_rows.failure"], (("nvmlDeviceGetRemappedRows",), (), 3),
          kind="flag"),
    _once("retired_pages_sbe", ["retired_pages.single_bit_ecc.count"], _field("NVML_FI_DEV_RETIRED_SBE")),
    _once("retired_pages_dbe", ["retired_pages.double_bit.count"], _field("NVML_FI_DEV_RETIRED_DBE")),
    _once("retired_pages_pending", ["retired_pages.pending"], _field("NVML_FI_DEV_RETIRED_PENDING"), kind="flag"),
    _once("ecc_mode_enabled", ["ecc.mode.current"], (("nvmlDeviceGetEccMode",), (), 0), kind="flag"),
    _once("ecc_mode_pending_enabled", ["ecc.mode.pending"], (("nvmlDeviceGetEccMode",), (), 1), kind="flag"),
    _once("ecc_corrected", ["ecc.errors.corrected.volatile.total"],
          (("nvmlDeviceGetTotalEccErrors",), ("NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_VOLATILE_ECC"), None)),
    _once("ecc_uncorrected_aggregate", ["ecc.errors.uncorrected.aggregate.total"],
          (("nvmlDeviceGetTotalEccErrors",), ("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_AGGREGATE_ECC"), None)),
    _once("ecc_corrected_aggregate", ["ecc.errors.corrected.aggregate.total"],
          (("nvmlDeviceGetTotalEccErrors",), ("NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_AGGREGATE_ECC"), None)),
    # The driver's own verdict after an uncorrectable error: what to do to recover the GPU.
    _once("gpu_recovery_action", ["gpu_recovery_action"], _field("NVML_FI_DEV_GET_GPU_RECOVERY_ACTION"),
          kind="enum"),
    # Configuration.
    _once("persistence_mode_enabled", ["persistence_mode"], (("nvmlDeviceGetPersistenceMode",), (), None),
          kind="flag"),
    _once("compute_mode", ["compute_mode"], (("nvmlDeviceGetComputeMode",), (), None), kind="enum"),
    _once("mig_mode_enabled", ["mig.mode.current"], (("nvmlDeviceGetMigMode",), (), 0), kind="flag"),
    _once("mig_mode_pending_enabled", ["mig.mode.pending"], (("nvmlDeviceGetMigMode",), (), 1), kind="flag"),
    _once("vbios_version", ["vbios_version"], (("nvmlDeviceGetVbiosVersion",), (), None), kind="text"),
    _once("inforom_image_version", ["inforom.img"], (("nvmlDeviceGetInforomImageVersion",), (), None),
          kind="text"),
    # NVSwitch systems (HGX, GB200): the GPU's registration with the fabric manager. "not_supported" where
    # the GPU needs no fabric (PCIe cards, this VM's H200: nvidia-smi says N/A).
    _once("fabric_state", ["fabric.state"], (_FABRIC, (), "state"), kind="enum"),
    _once("fabric_status", ["fabric.status"], (_FABRIC, (), "status_text"), kind="text"),
    _once("fabric_health", ["fabric.health.summary"], (("nvmlDeviceGetGpuFabricInfoV",), (), "healthSummary"),
          kind="enum"),
)

# Read per GPU by nvidia-smi but a fact of the node (NVML: nvmlSystemGetDriverVersion).
NODE_SMI_FIELDS = (("driver_version", ("driver_version",)),)

BY_NAME = {r.name: r for r in READINGS}
PER_SAMPLE = tuple(r for r in READINGS if r.per_sample)
STATIC = tuple(r for r in READINGS if not r.per_sample)
ONCE = tuple(r for r in READINGS if r.once)


def smi_fields():
    # type: () -> tuple[tuple[str, tuple[str, ...]], ...]
    """(name, --query-gpu spellings newest first) for every reading nvidia-smi can give, node fields too."""
    return tuple((r.name, r.smi) for r in READINGS if r.smi) + NODE_SMI_FIELDS


def by_smi_field():
    # type: () -> dict[str, str]
    """Every --query-gpu spelling → the reading's name (node fields included)."""
    return {spelling: name for name, spellings in smi_fields() for spelling in spellings}
