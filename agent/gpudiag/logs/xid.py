"""Xid events of the NVIDIA driver: what each one means, how serious it is, what to do, and which GPU it hit.

Meanings follow NVIDIA's Xid catalog for the Xids a GPU fleet actually sees. Each entry keeps the catalog's
"Resolution Bucket (Immediate Action)" word as it is written there (``bucket``: RESTART_APP, RESET_GPU,
RESTART_BM, WORKFLOW_XID_48...); :data:`BUCKET_ACTIONS` turns a bucket into a rung of gpudiag's action ladder
(:class:`gpudiag.model.Action`), so an Xid finding's action comes from its Xid number. Severity here is
gpudiag's: CRITICAL when the GPU needs a reset, a reboot or service (the node should be drained), WARNING
when the event is usually the application's or the catalog says to ignore it alone. An Xid missing from the
table is a WARNING that says to look it up, with the action ``watch``.

The kernel names the GPU by PCI address ``0000:2b:00`` (domain, bus, device); nvidia-smi writes the same
GPU ``00000000:2B:00.0``. :func:`pci_key` reads both, so :func:`gpu_index` can match them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from gpudiag.model import Action, GpuReading, Severity

CATALOG_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
# The buckets below were read on 2026-12-02 from that page (its table: Type, Code, Mnemonic, Description, Applies
# to A100/H100/B100/GB200, Resolution Bucket (Immediate Action), (Investigatory Action), Xid 154 linkage), and
# checked entry by entry against a copy generated from the catalog's spreadsheet (Xid-Catalog.xlsx, as
# retrieved 2026-09-15 by the gputop project). Xid 61 is not in the Ampere-and-newer catalog: its action is
# gpudiag's (the same as 62, the halt it precedes).
CATALOG_READ = "2026-12-02"

_APP = "usually the application's fault (bad kernel, driver/toolkit mismatch): restart the application; " \
       "if it repeats on one GPU only, suspect the GPU"
_RESET = "drain the node and reset the GPU (nvidia-smi -r) or reboot; if it repeats, have the GPU serviced"
_REBOOT = "drain the node and reboot it; if it repeats, check the GPU's seating, power and PCIe link, then service"
_NVLINK = ("drain the node, look at the links (nvidia-smi nvlink -s / -e), reset the GPUs on that link or reboot; "
           "if it repeats, the link or NVSwitch needs service")

# The catalog's immediate-action bucket -> the ladder. A WORKFLOW_* bucket is a procedure: its first step
# where it has one (WORKFLOW_XID_48 alone: reset the GPU; WORKFLOW_XID_45: follow the Xid before it), else
# drain and inspect (the NVLink workflows look at the links before choosing).
BUCKET_ACTIONS: dict[str, Action] = {
    "IGNORE": Action.WATCH,
    "RESTART_APP": Action.RESTART_WORKLOAD,
    "CHECK_UVM": Action.RESTART_WORKLOAD,
    "RESET_GPU": Action.RESET_GPU,
    "WORKFLOW_XID_48": Action.RESET_GPU,
    "WORKFLOW_XID_45": Action.WATCH,
    "RESTART_BM": Action.REBOOT_NODE,
    "RESTART_VM": Action.REBOOT_NODE,
    "WORKFLOW_NVLINK_ERR": Action.DRAIN_AND_INSPECT,
    "WORKFLOW_NVLINK5_ERR": Action.DRAIN_AND_INSPECT,
    "CONTACT_SUPPORT": Action.DRAIN_AND_INSPECT,
    "CHECK_MECHANICALS": Action.DRAIN_AND_INSPECT,
    "UPDATE_SWFW": Action.DRAIN_AND_INSPECT,
    # Xid 154: the driver's recovery action says which (reset, reboot, drain): the most it can ask for
    "XID_154": Action.DRAIN_AND_INSPECT,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class XidInfo:
    """One Xid: its short name, what it means, its severity, what to do in words (``advice``), the catalog's
    immediate-action bucket ("" when the catalog has none) and the ladder's action."""

    xid: int
    name: str
    meaning: str
    severity: Severity
    advice: str
    bucket: str
    action: Action


def _x(xid: int, name: str, meaning: str, severity: Severity, advice: str, bucket: str,
       action: Action | None = None) -> XidInfo:
    return XidInfo(xid=xid, name=name, meaning=meaning, severity=severity, advice=advice, bucket=bucket,
                   action=action or BUCKET_ACTIONS[bucket])


W, C = Severity.WARNING, Severity.CRITICAL
XIDS: dict[int, XidInfo] = {x.xid: x for x in (
    _x(8, "GPU stopped processing", "a channel stopped making progress (idle timeout)", W, _APP, "RESTART_APP"),
    _x(13, "Graphics engine exception", "a kernel faulted (out-of-range access, illegal instruction)", W, _APP,
       "RESTART_APP"),
    _x(31, "GPU memory page fault", "a kernel touched an unmapped address (MMU fault)", W, _APP, "RESTART_APP"),
    _x(32, "Invalid or corrupted push buffer stream", "the GPU read a corrupted command stream", W,
       "restart the application; if it repeats, check the PCIe link (errors, width) and the driver", "RESTART_APP"),
    _x(38, "Driver firmware error", "the driver's firmware (FECS) watchdog timed out", W,
       "alone it needs nothing (the catalog: ignore); if it repeats or comes with other Xids, reset the GPU",
       "IGNORE"),
    _x(43, "GPU stopped processing", "a channel was reset after an application fault", W,
       "the application that faulted was stopped; the GPU keeps working (the catalog: ignore); if it repeats on "
       "one GPU only, suspect the GPU", "IGNORE"),
    _x(45, "Preemptive cleanup", "channels were torn down because of an earlier error (often after 13/31/43)", W,
       "look for the Xid that came before it; on its own it follows a killed process", "WORKFLOW_XID_45"),
    _x(46, "GPU stopped processing", "the GPU timed out (a hung engine)", C, _RESET, "RESET_GPU"),
    _x(48, "Double-bit ECC error", "uncorrectable memory error (DBE)", C, _RESET, "WORKFLOW_XID_48"),
    _x(61, "Internal micro-controller breakpoint/warning", "the GPU's PMU firmware stopped at a breakpoint", C,
       _RESET, "", Action.RESET_GPU),
    _x(62, "Internal micro-controller halt", "the GPU's PMU firmware halted", C, _RESET, "RESET_GPU"),
    _x(63, "ECC page retirement or row remapping", "a memory row was marked for remapping; it applies at the "
       "next GPU reset", W, "reset the GPU when convenient so the remap takes effect; watch the count", "IGNORE"),
    _x(64, "ECC page retirement or row remapping failure", "a failing memory row could not be retired or remapped",
       C, "drain the node and reset the GPU; if remapping keeps failing, the GPU needs service", "RESET_GPU"),
    _x(68, "Video processor exception", "NVDEC/NVENC faulted", W, _APP, "RESTART_APP"),
    _x(69, "Graphics engine class error", "a kernel used an invalid class or method", W, _APP, "RESTART_APP"),
    _x(74, "NVLink error", "an NVLink link reported an error (replay, recovery or a down link)", C, _NVLINK,
       "WORKFLOW_NVLINK_ERR"),
    _x(79, "GPU has fallen off the bus", "the GPU stopped answering on PCIe", C, _REBOOT, "RESTART_BM"),
    _x(92, "High single-bit ECC error rate", "correctable memory errors at a high rate", W,
       "watch it; plan a reset (row remapping) or service if the rate stays high", "IGNORE"),
    _x(94, "Contained ECC error", "an uncorrectable memory error was contained to one application", W,
       "restart the application that was hit; reset the GPU when convenient so the row is remapped", "RESTART_APP"),
    _x(95, "Uncontained ECC error", "an uncorrectable memory error could not be contained", C, _RESET, "RESET_GPU"),
    _x(109, "Context switch timeout", "the GPU did not switch contexts in time", C, _RESET, "RESET_GPU"),
    _x(110, "Security fault", "the GPU's security engine faulted", C, _RESET, "RESET_GPU"),
    _x(119, "GSP RPC timeout", "the GPU System Processor stopped answering the driver", C, _RESET, "RESET_GPU"),
    _x(120, "GSP error", "the GPU System Processor firmware failed", C, _RESET, "RESET_GPU"),
    _x(121, "C2C link corrected error", "the chip-to-chip (Grace-Hopper/Blackwell) link corrected an error", W,
       "watch the count; service if it climbs", "IGNORE"),
    _x(136, "Link training failure", "a link failed to train", C, _RESET, "RESET_GPU"),
    _x(137, "NVLink FLA privilege error", "an access across NVLink was refused", W,
       "the access was refused and the GPU keeps working (the catalog: ignore); look at the application", "IGNORE"),
    _x(140, "Unrecovered ECC error", "an ECC error the GPU could not recover from", C, _RESET, "RESET_GPU"),
    _x(143, "GPU initialization failure", "the GPU failed to initialize", C, _RESET, "RESET_GPU"),
    *(_x(xid, f"NVLink {unit} error", "NVLink error (Blackwell)", C, _NVLINK, "WORKFLOW_NVLINK5_ERR")
      for xid, unit in ((144, "SAW"), (145, "RLW"), (146, "TLW"), (147, "TREX"), (148, "NVLPW control"),
                        (149, "NETIR"), (150, "MSE"))),
    _x(154, "GPU recovery action changed", "the driver says the GPU needs a recovery action (reset, reboot or "
       "drain) before it can be trusted", C, "read nvidia-smi -q's 'GPU Recovery Action' and do what it says",
       "XID_154"),
    _x(155, "NVLink software-defined error", "the driver marked an NVLink error", C, _RESET, "RESET_GPU"),
    _x(156, "Resource retirement event", "the GPU retired a resource; a reset applies it", C, _RESET, "RESET_GPU"),
    _x(158, "GPU fatal timeout", "the GPU timed out fatally", C, _RESET, "RESET_GPU"),
)}


def describe(xid: int) -> XidInfo:
    """The table's entry for ``xid``, or a WARNING that says to look it up."""
    return XIDS.get(xid) or XidInfo(
        xid=xid, name=f"Xid {xid}", meaning="an Xid gpudiag does not know", severity=Severity.WARNING,
        advice=f"look it up in NVIDIA's Xid catalog ({CATALOG_URL})", bucket="", action=Action.WATCH)


_PCI = re.compile(r"(?:PCI:)?([0-9A-Fa-f]{1,8}):([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})(?:\.([0-7]))?")


def pci_key(text: str | None) -> tuple[int, int, int] | None:
    """(domain, bus, device) of a PCI address in either spelling; None when it is not one."""
    if not text:
        return None
    m = _PCI.fullmatch(text.strip())
    if not m:
        return None
    return int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16)


def gpu_index(pci: str | None, gpus: Iterable[GpuReading]) -> int | None:
    """The index of the GPU at ``pci`` (kernel spelling), or None when no GPU of the node has it."""
    key = pci_key(pci)
    if key is None:
        return None
    return next((g.index for g in gpus if pci_key(g.pci_bus_id) == key), None)
