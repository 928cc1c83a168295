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


# systemd's VM ids (src/basic/virt.c; `systemd-detect-virt --list` before the container ones).
VMS = ("kvm", "amazon", "qemu", "bochs", "xen", "uml", "vmware", "oracle", "microsoft", "zvm", "parallels", "bhyve",
       "qnx", "acrn", "powervm", "apple", "sre", "google", "vm-other")


def detect_virt(timeout_s=30.0):
    """What ``systemd-detect-virt --vm`` and ``--container`` (found through PATH) answer, or None when it is
    missing. A plain ``systemd-detect-virt`` looks for a container first and for a VM only where there is none,
    so its one answer gives both where it is "none" (bare metal) or a VM's id (then no container); only a
    container, or an answer it does not know, costs the ``--vm`` call too (each is ~7 ms of a node's CPU)."""
    detect = proc.find_tool("systemd-detect-virt")
    if not detect:
        return None
    # Exit 1 with "none" when there is none: an answer, not a failure.
    code, out, _ = proc.run([detect], timeout_s)
    found = out.strip()
    if code == 1 and found == "none":
        return {"vm": "none", "vm_exit": 1, "container": "none", "container_exit": 1}
    if code == 0 and found in VMS:
        return {"vm": found, "vm_exit": 0, "container": "none", "container_exit": 1}
    if code == proc.TIMED_OUT:  # hung (and killed): the same tool would hang again
        return {"vm": None, "vm_exit": code, "container": None, "container_exit": code}
    # A container (whose VM, if any, needs a call of its own), or an answer this table does not know.
    vm_code, vm_out, _ = proc.run([detect, "--vm"], timeout_s)
    virt = {"vm": vm_out.strip() or None, "vm_exit": vm_code}
    if code == 0 and found and found != virt["vm"]:
        virt.update(container=found, container_exit=0)
    else:
        container_code, container_out, _ = proc.run([detect, "--container"], timeout_s)
        virt.update(container=container_out.strip() or None, container_exit=container_code)
    return virt


def collect(smi_path, timeout_s=30.0, with_topology=True):
    """The context document part. ``smi_path``: nvidia-smi's path, or None when it is not installed.
    ``with_topology=False`` leaves the topology and systemd-detect-virt (two to four processes) to the caller, which
    runs them only when a verdict needs them; the DMI names and the CPU flag still say whether this is a VM."""
    ctx = {"topology": None, "virt": None, "dmi": {}, "hypervisor_flag": hypervisor_flag(), "problems": []}
    if with_topology:
        ctx["topology"] = topology(smi_path, timeout_s)
        ctx["virt"] = detect_virt(timeout_s)
    for name in ("product_name", "sys_vendor"):
        ctx["dmi"][name] = _read(os.path.join(DMI, name))
    return ctx
