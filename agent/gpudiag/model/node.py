"""What one node read beside its GPUs: topology links, virtualization, the processes on the GPUs, hung calls, and
all of a node's readings together (:class:`NodeReadings`).

Standard library only; see :mod:`gpudiag.model`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gpudiag.model.active import ActiveTest
from gpudiag.model.gpu import GpuReading
from gpudiag.model.logs import LogScan
from gpudiag.model.nccl_ras import NcclRasStatus
from gpudiag.model.status import SmiStatus


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
    # NVSwitch systems only (gpudiag_node.links.fabric_manager); None elsewhere: not applicable
    nvswitch_count: int | None = None  # /dev/nvidia-nvswitch<N> devices
    fabric_manager_running: bool | None = None  # an nv-fabricmanager process runs
    processes_unlisted: tuple[int, ...] = ()  # GPUs whose process list could not be read (NVML's error)

    def processes_on(self, gpu: int) -> tuple[GpuProcess, ...]:
        return tuple(p for p in self.processes if p.gpu == gpu)

    hung_calls: tuple[HungCall, ...] = ()  # calls killed at their bound, in order
    nccl_ras: NcclRasStatus | None = None  # what the node's NCCL job's RAS thread said; None: not asked
    active: ActiveTest | None = None  # the active test of the idle GPUs (--active); None: not asked
