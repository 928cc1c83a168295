"""NVLink per link, at the start and the end of the sampling window, and the NVSwitch fabric manager
(``gpudiag_node.links``; runs on the node's python3, standard library only).

Read twice so that the controller can tell "errors are rising now" from "some happened since boot": the
counters (CRC, replay, recovery) at both ends of the window, the links' state at its end.

* NVML (``read_nvml``): the link count (``NVML_FI_DEV_NVLINK_LINK_COUNT``) once per GPU, then all the
  counters of a GPU in one ``nvmlDeviceGetFieldValues`` call (``NVML_FI_DEV_NVLINK_ERROR_DL_*`` with the
  link as scope), ``nvmlDeviceGetNvLinkErrorCounter`` where the binding lacks those fields, and
  ``nvmlDeviceGetNvLinkState`` per link at the end. A GPU without NVLink (a PCIe card, the one-GPU H200 VM:
  NotSupported) costs one call.
* nvidia-smi (``smi_start`` / ``smi_end``, only when NVML cannot be used, and only on an NVLink-fabric node:
  NVSwitches, or a GPU that reports a fabric state): ``nvidia-smi nvlink -e`` at the start; only if it lists a
  link, ``nvlink -e`` and ``nvlink -s`` once each at the end. A PCIe pair joined by an NVLink bridge has its
  links read through NVML only. The raw text goes in
  the document; the controller parses it (``gpudiag.collect.parse_links``).
* The fabric manager (``fabric_manager``): only where NVSwitches are present (``/dev/nvidia-nvswitch<N>``,
  HGX H100/H200/B200), whether ``nv-fabricmanager`` runs (a scan of ``/proc/<pid>/comm``, no systemctl).

NVML reference: https://docs.nvidia.com/deploy/nvml-api/group__NvLink.html
"""

import os
import time

from . import proc

# The counters, by the name the document gives them: (field id of the per-link value, the error-counter
# constant of nvmlDeviceGetNvLinkErrorCounter). "crc" is the flit CRC count nvidia-smi's "CRC Errors" shows.
COUNTERS = (("crc", "NVML_FI_DEV_NVLINK_ERROR_DL_CRC", "NVML_NVLINK_ERROR_DL_CRC_FLIT"),
            ("replay", "NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY", "NVML_NVLINK_ERROR_DL_REPLAY"),
            ("recovery", "NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY", "NVML_NVLINK_ERROR_DL_RECOVERY"))
MAX_LINKS = 36  # NVML_NVLINK_MAX_LINKS of the newest binding (GB200: 18 per GPU)


def _field_values(r, handle, ids):
    """[value or None] for each (field id, scope) of ``ids``, in one nvmlDeviceGetFieldValues call."""
    values = r.call("nvmlDeviceGetFieldValues", handle, ids)
    out = []
    for value in values or ():
        if value.nvmlReturn != 0:
            out.append(None)
            continue
        union = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")
        kind = value.valueType
        out.append(getattr(value.value, union[kind]) if 0 <= kind < len(union) else None)
    return out + [None] * (len(ids) - len(out))


def link_count(r, handle):
    """How many NVLinks the GPU has (0: none, or NVML cannot say)."""
    try:
        count = r.field(handle, "NVML_FI_DEV_NVLINK_LINK_COUNT")
    except Exception:  # a failed read: no links read, the rest of the collection goes on
        return 0
    return max(0, min(MAX_LINKS, int(count or 0)))


def _counters(r, handle, count):
    """{name: [value per link]} of the counters of COUNTERS."""
    nv = r.nv
    if all(hasattr(nv, field) for _, field, _ in COUNTERS):
        ids = [(getattr(nv, field), link) for _, field, _ in COUNTERS for link in range(count)]
        flat = _field_values(r, handle, ids)
        return {name: flat[i * count:(i + 1) * count] for i, (name, _, _) in enumerate(COUNTERS)}
    out = {}
    for name, _, constant in COUNTERS:
        values = []
        for link in range(count):
            try:
                values.append(r.call("nvmlDeviceGetNvLinkErrorCounter", handle, link, getattr(nv, constant)))
            except Exception:
                values.append(None)
        out[name] = values
    return out


def read_nvml(r, handles, counts, with_state):
    """{str(index): {"crc": [...], "replay": [...], "recovery": [...], "active": [...] (with_state)}} for the
    GPUs that have links (``counts``: index → link count)."""
    out = {}
    for index, handle in handles.items():
        count = counts.get(index, 0)
        if not count:
            continue
        try:
            gpu = _counters(r, handle, count)
            if with_state:
                gpu["active"] = [_state(r, handle, link) for link in range(count)]
        except Exception:  # a lost GPU or a failed read: its links are not reported, the rest go on
            continue
        out[str(index)] = gpu
    return out


def _state(r, handle, link):
    try:
        state = r.call("nvmlDeviceGetNvLinkState", handle, link)
    except Exception:
        return None
    return None if state is None else bool(state)


def nvml_window(r, handles):
    """Start reading the links: returns the function that reads them again at the window's end and gives
    the document's ``nvlink`` part (None when no GPU has a link)."""
    counts = {index: link_count(r, handle) for index, handle in handles.items()}
    if not any(counts.values()):
        return lambda live: None
    started = time.monotonic()
    start = read_nvml(r, handles, counts, with_state=False)

    def finish(live):
        end = read_nvml(r, live, counts, with_state=True)
        return {"window_s": round(time.monotonic() - started, 3), "start": start, "end": end}
    return finish


def _smi(smi, args, timeout_s):
    code, out, err = proc.run([smi, "nvlink"] + args, timeout_s)
    return {"t": round(time.monotonic(), 3), "exit": code, "stdout": out[:200000], "stderr": err[:2000]}


def lists_links(text):
    """Whether an ``nvidia-smi nvlink`` answer lists any link ("Link 0: ..."). re is imported here, not at the
    top: with enum, functools and collections it costs the NVML path, which never needs it, 5-10 ms."""
    import re

    return re.search(r"Link \d+:", text) is not None


def smi_start(smi, timeout_s):
    """``nvidia-smi nvlink -e`` at the window's start: the raw answer, and whether it lists any link."""
    first = _smi(smi, ["-e"], timeout_s)
    return first, first["exit"] == 0 and lists_links(first["stdout"])


def smi_end(smi, first, timeout_s):
    """The document's ``nvlink_smi`` part: the start's counters, and the end's counters and states."""
    end = _smi(smi, ["-e"], timeout_s)
    status = _smi(smi, ["-s"], timeout_s)
    return {"window_s": round(end["t"] - first["t"], 3), "start": first, "end": end, "status": status}


def fabric_manager(dev="/dev", proc_root="/proc"):
    """{"nvswitches": N, "running": bool} where NVSwitches are present; None elsewhere (nothing read)."""
    try:
        nvswitches = [n for n in os.listdir(dev) if n.startswith("nvidia-nvswitch") and n[15:].isdigit()]
    except OSError:
        return None
    if not nvswitches:
        return None
    running = False
    try:
        pids = [n for n in os.listdir(proc_root) if n.isdigit()]
    except OSError:
        pids = []
    for pid in pids:
        try:
            with open(os.path.join(proc_root, pid, "comm")) as f:
                if f.read().strip() == "nv-fabricmanager":
                    running = True
                    break
        except (IOError, OSError):
            continue
    return {"nvswitches": len(nvswitches), "running": running}
