"""The values gpudiag passes between its layers: hosts, readings, findings, reports.

Standard library only, importable by every layer. Every value is a frozen dataclass;
units are in the names; ``None`` means "not reported" (never 0, never a sentinel string).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

# 2: one power figure (GpuReading.power()) behind power_pct_of_limit; enforced_power_limit_w became
# enforced_power_limit_w; raw samples only on request; failed readings listed. /1 documents are still read.
SWEEP_SCHEMA = "gpudiag.sweep/2"
SWEEP_SCHEMAS_READ = ("gpudiag.sweep/1", SWEEP_SCHEMA)
PROBE_SCHEMA = "gpudiag.probe/2"


class Severity(enum.IntEnum):
    """Nagios-style severity. ``worst()`` ranks UNKNOWN above WARNING so it is never hidden behind OK."""

    OK = 0
    WARNING = 1
    CRITICAL = 2
    UNKNOWN = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @property
    def rank(self) -> int:
        """How serious: a missing reading (UNKNOWN) outranks a warning, a critical outranks all. Every
        ordering of severities (worst(), most serious first in reports) uses this."""
        return _RANK[self]

    @classmethod
    def from_label(cls, label: str) -> Severity:
        """ "warning" → WARNING; ValueError naming the labels for anything else."""
        for severity in cls:
            if severity.label == label:
                return severity
        raise ValueError(f"unknown severity {label!r} (expected one of {', '.join(s.label for s in cls)})")


_RANK = {Severity.OK: 0, Severity.WARNING: 1, Severity.UNKNOWN: 2, Severity.CRITICAL: 3}


def worst(severities: Iterable[Severity]) -> Severity:
    """The most serious of ``severities`` (OK when there are none)."""
    return max(severities, key=lambda s: s.rank, default=Severity.OK)


class HostStatus(str, enum.Enum):
    """How talking to one host went. ``ok``/``partial`` hosts answered; the rest did not."""

    OK = "ok"
    PARTIAL = "partial"
    UNREACHABLE = "unreachable"
    TIMEOUT = "timeout"
    AUTH_FAILED = "auth_failed"
    HOST_KEY_REJECTED = "host_key_rejected"
    ERROR = "error"
    # The sweep was stopped (SIGINT, SIGTERM) before this host answered: nothing is known about it, good or bad.
    CANCELLED = "cancelled"

    @property
    def answered(self) -> bool:
        return self in (HostStatus.OK, HostStatus.PARTIAL)


class UnreachableReason(str, enum.Enum):
    """Why an ``unreachable`` host was not reached: a stable word for scripts (the error says it in a sentence)."""

    REFUSED = "refused"  # the host is up, nothing listens on the port (or a firewall rejects)
    TIMEOUT = "timeout"  # no TCP connection, or no SSH login, within the connect/login timeout
    DNS = "dns"  # the name does not resolve, or is not a valid host name
    NETWORK = "network"  # no route, network unreachable, reset: the network said no


class SmiStatus(str, enum.Enum):
    """What nvidia-smi on the node said about itself, as data."""

    OK = "ok"
    MISSING = "missing"  # not installed / not on PATH
    DRIVER_ERROR = "driver_error"  # exit 9: could not talk to the driver
    NO_DEVICES = "no_devices"  # exit 6: "No devices were found"
    FAILED = "failed"  # any other non-zero exit with no usable rows
    HUNG = "hung"  # the call did not answer within its bound and was killed (a wedged driver): no rows
    SKIPPED = "skipped"  # not asked: a log search reads no GPU


@dataclass(frozen=True, slots=True, kw_only=True)
class Host:
    """One target of a sweep, with its effective connection settings."""

    name: str
    address: str | None = None  # None: connect to ``name`` (resolved by ~/.ssh/config, then DNS)
    user: str | None = None
    port: int | None = None
    identity_file: str | None = None
    known_hosts: str | None = None
    jump: str | None = None  # a bastion, "[user@]host[:port]"
    logs: tuple[object, ...] = ()  # carried for the log-evidence checks
    groups: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        """The address to connect to."""
        return self.address or self.name

    @property
    def is_local(self) -> bool:
        return self.target in ("localhost", "local") and self.port is None and self.jump is None


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
    ``gpudiag.collectors.node.readings``, whose ``name`` is the field here). ``t_s``: seconds since the first sample."""

    t_s: float | None = None
    utilization_pct: float | None = None  # utilization.gpu
    memory_utilization_pct: float | None = None  # utilization.memory
    power_w: float | None = None  # power.draw (a 1 s average on Ampere and newer)
    power_instant_w: float | None = None  # power.draw.instant
    sm_clock_mhz: float | None = None  # clocks.sm
    clock_event_reasons_mask: int | None = None  # clocks_event_reasons.active
    temperature_c: float | None = None  # temperature.gpu
    pstate: str | None = None
    pcie_gen: int | None = None  # pcie.link.gen.current
    pcie_width: int | None = None  # pcie.link.width.current
    memory_used_mib: float | None = None  # memory.used


class PowerSource(str, enum.Enum):
    """Where a GPU's power figure comes from, best first."""

    ENERGY_COUNTER = "energy_counter"  # NVML's total-energy counter: the exact average over the window
    POWER_DRAW = "power_draw"  # the median of the power.draw samples (each a 1 s average on Ampere+)
    POWER_DRAW_INSTANT = "power_draw_instant"  # the median of the power.draw.instant samples

    @property
    def short(self) -> str:
        """A few words: "energy-counter average", "power.draw median"."""
        return {PowerSource.ENERGY_COUNTER: "energy-counter average", PowerSource.POWER_DRAW: "power.draw median",
                PowerSource.POWER_DRAW_INSTANT: "power.draw.instant median"}[self]

    def describe(self, samples: int) -> str:
        """The source in words: "average over the window from NVML's total-energy counter"."""
        if self is PowerSource.ENERGY_COUNTER:
            return "average over the window from NVML's total-energy counter"
        field = "power.draw" if self is PowerSource.POWER_DRAW else "power.draw.instant"
        return f"median of {samples} {field} sample{'s' if samples != 1 else ''}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Power:
    """A GPU's one power figure and its share of the enforced limit: what the table, the JSON, the checks
    and their evidence all show (:meth:`GpuReading.power` decides it)."""

    watts: float
    source: PowerSource
    enforced_limit_w: float | None = None

    @property
    def pct_of_limit(self) -> float | None:
        """Percent of the enforced limit, one decimal; None without a (positive) limit."""
        if not self.enforced_limit_w or self.enforced_limit_w <= 0:
            return None
        return round(100.0 * self.watts / self.enforced_limit_w, 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuReading:
    """One GPU over the sampling window: every reading of the table of readings
    (``gpudiag.collectors.node.readings``: its ``name`` is the field here), the samples combined as the table
    says (medians for most), plus what is derived from them.

    ``failed_readings`` holds (reading, why) for readings whose read *failed* (NVMLError_Unknown, nvidia-smi's
    ``[unknown error]``, a value that is no number): they are None here, and a check that needs one says
    UNKNOWN. A reading the GPU simply does not support is None and not listed: not applicable."""

    index: int
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    compute_capability: str | None = None  # "12.0"
    sm: str | None = None  # "SM120", from compute_capability (gpudiag.arch)
    arch: str | None = None  # "Blackwell (RTX)"
    enforced_power_limit_w: float | None = None  # enforced.power.limit
    default_power_limit_w: float | None = None  # power.default_limit
    max_sm_clock_mhz: float | None = None
    pcie_gen_max: int | None = None
    pcie_width_max: int | None = None
    ecc_uncorrected: int | None = None  # ecc.errors.uncorrected.volatile.total
    memory_total_mib: float | None = None
    utilization_pct: float | None = None
    memory_utilization_pct: float | None = None
    power_w: float | None = None  # median of the samples' power.draw
    power_instant_w: float | None = None  # median of the samples' power.draw.instant
    sm_clock_mhz: float | None = None
    clock_event_reasons_mask: int | None = None  # every reason active in any sample (OR of the masks)
    temperature_c: float | None = None
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
    samples: tuple[GpuSample, ...] = ()

    @property
    def clock_event_reasons(self) -> tuple[str, ...]:
        """The names of the reasons active in any sample."""
        return decode_reasons(self.clock_event_reasons_mask)

    def power(self) -> Power | None:
        """The GPU's power figure: the energy counter's average over the window where NVML gave it (exact),
        else the median of the power.draw samples, else of power.draw.instant; None when none was read."""
        for watts, source in ((self.energy_power_w, PowerSource.ENERGY_COUNTER),
                              (self.power_w, PowerSource.POWER_DRAW),
                              (self.power_instant_w, PowerSource.POWER_DRAW_INSTANT)):
            if watts is not None:
                return Power(watts=watts, source=source, enforced_limit_w=self.enforced_power_limit_w)
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


class LogStatus(str, enum.Enum):
    """Whether a log could be read on the node."""

    OK = "ok"
    MISSING = "missing"  # no such file
    UNREADABLE = "unreadable"  # permission denied, a directory, no journalctl nor dmesg that answers
    ERROR = "error"  # the scan itself failed (a pattern the node's Python refused)


FactValue = str | int | float | bool | None


@dataclass(frozen=True, slots=True, kw_only=True)
class LogLine:
    """One line of a log as the node kept it: its number among the lines read (oldest first) and its text,
    cut to a few hundred characters."""

    seq: int
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LogMatch:
    """What one signature found in one log: how often, the first and last line, and a few recent ones.

    ``count`` holds the lines inside the time window (``since_hours``), ``older`` those before it; ``last_seq``
    is the number of the last matching line, in the window or not. ``values`` are the named groups of the last
    match (``gen_throughput_tok_s="225.37"``). A signature with ``group_by`` gives one match per distinct
    ``key`` (e.g. ``(("pci", "0000:2b:00"), ("xid", "79"))``).
    """

    signature: str
    count: int
    older: int = 0
    first: LogLine | None = None
    last: LogLine | None = None
    recent: tuple[LogLine, ...] = ()
    last_seq: int | None = None
    values: tuple[tuple[str, str], ...] = ()
    key: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerFacts:
    """A configuration echo (SGLang's ``server_args=ServerArgs(...)``, vLLM's non-default args, an argv dump)
    read as configuration: the values that matter, from the last such line (the latest server start)."""

    echo: str  # the echo's name in its pack, e.g. "sglang_server_args"
    server: str | None = None  # "SGLang", "vLLM"
    count: int = 1  # how many such lines (server starts) the log holds
    seq: int | None = None  # the line number of the last one
    values: tuple[tuple[str, FactValue], ...] = ()

    def get(self, key: str) -> FactValue:
        """The value of ``key``, None when the echo did not carry it."""
        return next((v for k, v in self.values if k == key), None)


@dataclass(frozen=True, slots=True, kw_only=True)
class LogScan:
    """One log source as read on the node: a file (with its rotations) or the kernel log (``@kernel``)."""

    path: str  # as configured ("~/sglang.log", "@kernel")
    status: LogStatus = LogStatus.OK
    error: str | None = None
    resolved: str | None = None  # the path on the node, "~" expanded
    source: str | None = None  # "file", "journalctl" or "dmesg"
    files: tuple[str, ...] = ()  # what was read, oldest first
    bytes_scanned: int = 0
    lines: int = 0
    cut: bool = False  # the log was longer than the tail read (older lines not scanned)
    notes: tuple[str, ...] = ()
    matches: tuple[LogMatch, ...] = ()
    facts: tuple[ServerFacts, ...] = ()
    # Not configured but found through a GPU process: "stdout of pid 4312 (SGLang, /proc/4312/fd/1)"
    found_from: str | None = None
    found_server: str | None = None  # the server whose command line matched ("SGLang")

    def found(self, signature: str) -> tuple[LogMatch, ...]:
        """The matches of ``signature`` (several for a ``group_by`` signature)."""
        return tuple(m for m in self.matches if m.signature == signature)

    def echo(self, name: str) -> ServerFacts | None:
        return next((f for f in self.facts if f.echo == name), None)


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuLink:
    """How two GPUs reach each other, as ``nvidia-smi topo -m`` writes it: "NV18" (18 bonded NVLinks) or a
    PCIe path: "PIX" (one switch), "PXB" (several switches), "PHB" (a host bridge), "NODE" (host bridges of
    one NUMA node), "SYS" (across NUMA nodes)."""

    gpu_a: int
    gpu_b: int
    link: str

    @property
    def kind(self) -> str:
        """ "nvlink", "pcie" or "unknown"."""
        if self.link.upper().startswith("NV"):
            return "nvlink"
        if self.link.upper() in PCIE_LINKS:
            return "pcie"
        return "unknown"


PCIE_LINKS = frozenset({"PIX", "PXB", "PHB", "NODE", "SYS", "SOC"})  # SOC: older drivers' name for SYS


_LINK_ORDER = {"PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5, "SOC": 5}


def link_names(links: Iterable[GpuLink]) -> str:
    """ "PIX/NODE/SYS": the distinct link names of ``links``, closest first (NVLink, then PCIe paths)."""
    names = dict.fromkeys(link.link for link in links)
    return "/".join(sorted(names, key=lambda n: (_LINK_ORDER.get(n.upper(), 0 if n.upper().startswith("NV") else 9),
                                                n)))


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeContext:
    """What surrounds the GPUs: how they are connected, and whether the node is a virtual machine."""

    links: tuple[GpuLink, ...] = ()  # every pair once (gpu_a < gpu_b); empty when not read
    topology_error: str | None = None  # why the topology is missing
    virtualization: str | None = None  # systemd-detect-virt --vm: "kvm", "vmware", "none"; None: not run
    container: str | None = None  # systemd-detect-virt --container: "docker", "none"
    dmi_product_name: str | None = None  # /sys/class/dmi/id/product_name
    dmi_sys_vendor: str | None = None
    hypervisor_flag: bool | None = None  # the CPU's "hypervisor" flag (/proc/cpuinfo)

    def links_of(self, gpu: int) -> tuple[GpuLink, ...]:
        return tuple(link for link in self.links if gpu in (link.gpu_a, link.gpu_b))

    @property
    def interconnect(self) -> str | None:
        """ "nvlink" (every pair), "pcie" (no pair has NVLink), "mixed", or None (no topology)."""
        kinds = {link.kind for link in self.links}
        if not kinds:
            return None
        if kinds == {"nvlink"}:
            return "nvlink"
        return "pcie" if "nvlink" not in kinds else "mixed"

    @property
    def is_vm(self) -> bool | None:
        """Whether the node is a virtual machine: systemd-detect-virt when it ran, else the DMI names, else
        the CPU's hypervisor flag; None when nothing says."""
        if self.virtualization is not None:
            return self.virtualization not in ("none", "")
        dmi = f"{self.dmi_sys_vendor or ''} {self.dmi_product_name or ''}".lower()
        if any(name in dmi for name in VM_DMI_NAMES):
            return True
        return self.hypervisor_flag

    @property
    def vm_description(self) -> str | None:
        """ "a KVM virtual machine (systemd-detect-virt)", or None when the node is not known to be a VM."""
        if not self.is_vm:
            return None
        virt = self.virtualization
        if virt not in (None, "none", ""):
            return f"a {virt.upper() if len(virt) <= 4 else virt} virtual machine (systemd-detect-virt)"
        name = " ".join(p for p in (self.dmi_sys_vendor, self.dmi_product_name) if p)
        return f"a virtual machine ({name or 'the CPU has the hypervisor flag'})"


# DMI vendor/product names of hypervisors (systemd's src/basic/virt.c keeps the same kind of list).
VM_DMI_NAMES = ("kvm", "qemu", "vmware", "virtualbox", "xen", "bochs", "parallels", "bhyve", "openstack",
                "google compute engine", "virtual machine", "standard pc (q35", "standard pc (i440fx")


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuProcess:
    """One process on one GPU (a process on several GPUs appears once per GPU): what NVML or nvidia-smi
    list, and what ``/proc`` told the collector's user. A field it could not read is None and named in
    ``unreadable`` with why ("not readable as user alice"); None without a reason: not reported."""

    gpu: int
    pid: int
    used_memory_mib: float | None = None
    sm_utilization_pct: float | None = None  # NVML's per-process SM utilization over the window
    user: str | None = None
    command: tuple[str, ...] = ()  # the command line, cut to a bound
    command_cut: bool = False
    cpu_pct: float | None = None  # CPU used over the window, in percent of one core (200: two cores)
    container: str | None = None  # "docker 3f2a9c1b0e4d", "k8s pod 0c4f…"
    job_id: str | None = None  # Slurm job id
    job_id_from: str | None = None  # "cgroup" or "environ"
    stdout: str | None = None  # where fd 1 points
    stderr: str | None = None
    unreadable: tuple[tuple[str, str], ...] = ()

    @property
    def program(self) -> str:
        """A short name: the module of ``python -m sglang.launch_server`` (sglang), the script a Python runs,
        else the executable's base name."""
        args = list(self.command)
        if not args:
            return "?"
        first = args[0].rsplit("/", 1)[-1]
        if first.startswith("python"):
            rest = args[1:]
            while rest and rest[0].startswith("-") and rest[0] != "-m":
                rest = rest[1:]
            if len(rest) >= 2 and rest[0] == "-m":
                return rest[1].split(".")[0]
            if rest:
                return rest[0].rsplit("/", 1)[-1]
        return first

    @property
    def label(self) -> str:
        """ "pid 4312 sglang (job 81723)"."""
        job = f" (job {self.job_id})" if self.job_id else ""
        return f"pid {self.pid} {self.program}{job}"


@dataclass(frozen=True, slots=True, kw_only=True)
class HungCall:
    """A call on the node that did not answer within its bound and was killed (``NVIDIA_SMI_HUNG``)."""

    call: str  # what was asked: "nvidia-smi --query-gpu", "nvidia-smi topo", "NVML"
    after_s: float  # how long it ran before it was killed

    @property
    def sentence(self) -> str:
        """``nvidia-smi --query-gpu did not answer in 9.2 s and was killed``."""
        return f"{self.call} did not answer in {self.after_s:g} s and was killed"


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeReadings:
    """Everything one node told us, parsed from the collector's JSON document."""

    source: str = "nvidia-smi"  # "nvml", "nvidia-smi" or "nvidia-smi (sh)": which path read the GPUs
    nvml_unavailable: str | None = None  # why NVML was not used, when it was tried
    dcgm_unavailable: str | None = None  # why there are no DCGM profiling readings, when they were tried
    hostname: str | None = None
    kernel: str | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    # where cuda_version came from: "libcuda", "nvml", "nvidia-smi" (its header) or "driver branch"
    # (the version NVIDIA lists for the driver's branch, used where libcuda is absent, as NVML itself does)
    cuda_version_from: str | None = None
    smi_status: SmiStatus = SmiStatus.OK
    smi_message: str | None = None
    smi_exit_code: int | None = None
    gpus: tuple[GpuReading, ...] = ()
    sample_count: int = 0
    window_s: float | None = None
    output_truncated: bool = False
    problems: tuple[str, ...] = ()  # things the collector could not do, in words
    logs: tuple[LogScan, ...] = ()  # the log sources scanned, in the order configured
    context: NodeContext | None = None  # topology and virtualization; None: not collected
    processes: tuple[GpuProcess, ...] = ()  # every process on every GPU, by GPU then pid
    processes_from: str | None = None  # "nvml" or "nvidia-smi"; None: not read
    processes_user: str | None = None  # the user /proc was read as

    def processes_on(self, gpu: int) -> tuple[GpuProcess, ...]:
        return tuple(p for p in self.processes if p.gpu == gpu)

    def main_process(self, gpu: int) -> GpuProcess | None:
        """The process that matters most on ``gpu``: the one holding the most GPU memory, then the busiest."""
        procs = self.processes_on(gpu)
        return max(procs, key=lambda p: (p.used_memory_mib or 0.0, p.cpu_pct or 0.0), default=None)
    hung_calls: tuple[HungCall, ...] = ()  # calls killed at their bound, in order


def host_status_label(host: HostReport) -> str:
    """The host's status as the reports show it: the SSH status, and the GPUs' state beside it when the host
    answered but its GPUs could not be read (``ok, gpus: hung``): an ``ok`` beside a driver error must not read
    as healthy."""
    node = host.readings
    if host.status.answered and node is not None and node.smi_status not in (SmiStatus.OK, SmiStatus.SKIPPED):
        return f"{host.status.value}, gpus: {node.smi_status.value}"
    return host.status.value


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """A verdict: stable code, severity, where, one sentence, and the numbers behind it."""

    code: str
    severity: Severity
    host: str
    gpu: int | None
    summary: str
    evidence: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteResult:
    """What one remote (or local) run of the collector returned."""

    exit_status: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class HostReport:
    """One host's row in the report: how talking to it went, what it read, what is wrong."""

    host: str
    address: str | None
    status: HostStatus
    error: str | None = None
    readings: NodeReadings | None = None
    findings: tuple[Finding, ...] = ()
    duration_s: float | None = None
    scheduler_state: str | None = None  # the node's state in the scheduler (Slurm's sinfo: idle, drained, ...)
    scheduler_reason: str | None = None  # the reason the scheduler holds for that state (a drain's reason)
    unreachable_reason: UnreachableReason | None = None  # status unreachable only: refused, timeout, dns...

    @property
    def gpus(self) -> tuple[GpuReading, ...]:
        return self.readings.gpus if self.readings else ()


# The exit code of a sweep stopped by a signal, as a shell reports a command that signal ended (128 + its number).
STOP_EXIT_CODES: Mapping[str, int] = {"SIGINT": 130, "SIGTERM": 143}


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepReport:
    """The whole sweep."""

    started_at: str  # ISO 8601, UTC
    duration_s: float
    hosts: tuple[HostReport, ...]
    # "SIGINT", "SIGTERM": a signal stopped the sweep; the hosts that had not answered are ``cancelled``
    stopped_by: str | None = None

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for h in self.hosts for f in h.findings)

    @property
    def exit_code(self) -> int:
        """0 all well, 1 a warning (or a reading that should be there is missing), 2 critical; 130 (SIGINT) or
        143 (SIGTERM) when a signal stopped the sweep, whatever the hosts that finished say."""
        if self.stopped_by is not None:
            return STOP_EXIT_CODES.get(self.stopped_by, 130)
        severity = worst(f.severity for f in self.findings)
        if severity is Severity.CRITICAL:
            return 2
        if severity in (Severity.WARNING, Severity.UNKNOWN):
            return 1
        return 0
