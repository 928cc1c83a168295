"""The values gpudiag passes between its layers: hosts, readings, findings, reports.

Standard library only, importable by every layer. Every value is a frozen dataclass;
units are in the names; ``None`` means "not reported" (never 0, never a sentinel string).

The values live in one module each by meaning (:mod:`.status`, :mod:`.hosts`, :mod:`.gpu`, :mod:`.logs`,
:mod:`.node`, :mod:`.settings`, :mod:`.report`); this package re-exports them, so a layer says
``from gpudiag.model import Finding``.
"""

from gpudiag.model.actions import (
    Action,
    highest,
)
from gpudiag.model.gpu import (
    CLOCK_EVENT_REASONS,
    GpuReading,
    GpuSample,
    NvLink,
    Power,
    PowerSource,
    decode_reasons,
    reasons_mask,
)
from gpudiag.model.hosts import (
    Host,
)
from gpudiag.model.jobs import (
    GPU_STATES,
    GroupNote,
    JobAllocation,
    JobGpu,
    JobView,
)
from gpudiag.model.logs import (
    FactValue,
    LogLine,
    LogMatch,
    LogScan,
    LogStatus,
    ServerFacts,
)
from gpudiag.model.node import (
    PCIE_LINKS,
    VM_DMI_NAMES,
    GpuLink,
    GpuProcess,
    HungCall,
    NodeContext,
    NodeReadings,
    link_names,
)
from gpudiag.model.report import (
    EXIT_CANNOT_RUN,
    STOP_EXIT_CODES,
    SWEEP_SCHEMA,
    SWEEP_SCHEMAS_READ,
    Finding,
    HostReport,
    RemoteResult,
    SweepReport,
    host_status_label,
)
from gpudiag.model.settings import (
    FLEET_FACTS,
    CheckSettings,
    VersionExpectation,
)
from gpudiag.model.status import (
    HostStatus,
    Severity,
    SmiStatus,
    UnreachableReason,
    worst,
)

__all__ = [
    "Action",
    "CLOCK_EVENT_REASONS",
    "CheckSettings",
    "FLEET_FACTS",
    "FactValue",
    "Finding",
    "GPU_STATES",
    "GpuLink",
    "GpuProcess",
    "GpuReading",
    "GpuSample",
    "NvLink",
    "GroupNote",
    "Host",
    "HostReport",
    "HostStatus",
    "HungCall",
    "JobAllocation",
    "JobGpu",
    "JobView",
    "LogLine",
    "LogMatch",
    "LogScan",
    "LogStatus",
    "NodeContext",
    "NodeReadings",
    "PCIE_LINKS",
    "EXIT_CANNOT_RUN",
    "Power",
    "PowerSource",
    "RemoteResult",
    "STOP_EXIT_CODES",
    "SWEEP_SCHEMA",
    "SWEEP_SCHEMAS_READ",
    "ServerFacts",
    "Severity",
    "SmiStatus",
    "SweepReport",
    "UnreachableReason",
    "VM_DMI_NAMES",
    "VersionExpectation",
    "decode_reasons",
    "highest",
    "host_status_label",
    "link_names",
    "reasons_mask",
    "worst",
]
