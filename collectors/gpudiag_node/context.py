"""Node context for the verdict, read ON the node: standard library only, Python 3.6+ (``gpudiag_node.context``).

Raw text and values only; the controller interprets them (``gpudiag.collect.parse_logs``):

* ``nvidia-smi topo -m``: how each pair of GPUs is connected (``NV18`` NVLink, or PCIe: ``PIX``, ``PXB``,
  ``PHB``, ``NODE``, ``SYS``);
* whether this is a virtual machine: ``systemd-detect-virt --vm`` and ``--container`` (found through PATH),
  the DMI product name and vendor (``/sys/class/dmi/id``), and the CPU's ``hypervisor`` flag.
"""

import os

from . import proc

DMI = "/sys/class/dmi/id"


def _read(path, limit=256):
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace").strip() or None
    except OSError:
        return None


def hypervisor_flag(path="/proc/cpuinfo"):
    """True when the CPU flags carry ``hypervisor`` (x86 guests), False when they do not, None unknown.
    Only up to the first CPU's flags: /proc/cpuinfo of a 200-core node is half a megabyte."""
    try:
        with open(path, "rb") as f:
            for n, line in enumerate(f):
                if line.startswith(b"flags"):
                    return b"hypervisor" in line.split(b":", 1)[-1].split()
                if n > 4096:
                    break
    except OSError:
        return None
    return None


def topology(smi_path, timeout_s=30.0):
    """``nvidia-smi topo -m`` as {exit, stdout, stderr}, or None when nvidia-smi is not installed."""
    if not smi_path:
        return None
    code, out, err = proc.run([smi_path, "topo", "-m"], timeout_s)
    return {"exit": code, "stdout": out, "stderr": err}


def detect_virt(timeout_s=30.0):
    """``systemd-detect-virt --vm`` and ``--container`` (found through PATH), or None when it is missing."""
    detect = proc.find_tool("systemd-detect-virt")
    if not detect:
        return None
    virt = {}
    for kind in ("vm", "container"):
        # Exit 1 with "none" when there is none: an answer, not a failure.
        code, out, err = proc.run([detect, "--" + kind], timeout_s)
        virt[kind] = out.strip() or None
        virt[kind + "_exit"] = code
    return virt


def collect(smi_path, timeout_s=30.0, with_topology=True):
    """The context document part. ``smi_path``: nvidia-smi's path, or None when it is not installed.
    ``with_topology=False`` leaves the topology and systemd-detect-virt (three processes) to the caller, which
    runs them only when a verdict needs them; the DMI names and the CPU flag still say whether this is a VM."""
    ctx = {"topology": None, "virt": None, "dmi": {}, "hypervisor_flag": hypervisor_flag(), "problems": []}
    if with_topology:
        ctx["topology"] = topology(smi_path, timeout_s)
        ctx["virt"] = detect_virt(timeout_s)
    for name in ("product_name", "sys_vendor"):
        ctx["dmi"][name] = _read(os.path.join(DMI, name))
    return ctx
