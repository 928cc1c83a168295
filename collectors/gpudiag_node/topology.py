"""How each pair of GPUs is connected, read through NVML (``gpudiag_node.topology``; standard library only,
Python 3.6+), named as ``nvidia-smi topo -m`` names it, so a starved GPU's verdict costs no nvidia-smi call.

* NVLink: "NV<n>", n the active links between the two GPUs: those of one that reach the other directly, and,
  where both reach NVSwitches (HGX, NVL72), the fewer of their switch links (every GPU of an HGX H100 has 18: NV18);
* else the PCIe path of ``nvmlDeviceGetTopologyCommonAncestor``: PIX, PXB, PHB, NODE or SYS.

Anything this cannot name (another remote device type, a remote bus that is no GPU of the node, a level without a
name, a failed call) raises :class:`Unreadable`, and the collector runs ``nvidia-smi topo -m`` as before. One GPU
has no pair: nothing is called.
"""

# nvmlGpuTopologyLevel_t -> topo -m's name (NVML_TOPOLOGY_INTERNAL, a board of two GPUs, has none: topo -m)
LEVELS = {10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
REMOTE_GPU, REMOTE_SWITCH = 0, 2  # nvmlIntNvLinkDeviceType_t


class Unreadable(Exception):
    """NVML cannot name every pair here; the message says why."""


def _bus(value):
    text = value.decode("ascii", "replace") if isinstance(value, bytes) else str(value or "")
    return text.strip().lower()


def read(r, handles, bus_ids, active):
    """{"pairs": [[a, b, name]], "gpus": N, "from": "nvml"} for the GPUs of ``handles`` (index -> handle);
    ``bus_ids``: index -> PCI bus id; ``active``: index -> [bool per link] (the links' states at the window's
    end, links.py). ``r``: nvml.Reader."""
    indexes = sorted(handles)
    pairs = []
    out = {"pairs": pairs, "gpus": len(indexes), "from": "nvml"}
    if len(indexes) < 2:
        return out
    by_bus = {_bus(bus_ids.get(i)): i for i in indexes}
    direct, switch = {}, {}
    try:
        for a in indexes:
            for link, up in enumerate(active.get(a) or ()):
                if up is None:
                    raise Unreadable("GPU %s link %d: its state was not read" % (a, link))
                if not up:
                    continue
                kind = r.call("nvmlDeviceGetNvLinkRemoteDeviceType", handles[a], link)
                if kind == REMOTE_SWITCH:
                    switch[a] = switch.get(a, 0) + 1
                    continue
                b = by_bus.get(_bus(getattr(r.call("nvmlDeviceGetNvLinkRemotePciInfo", handles[a], link),
                                            "busId", None))) if kind == REMOTE_GPU else None
                if b is None:
                    raise Unreadable("GPU %s link %d reaches a device of type %r, not a GPU of this node"
                                     % (a, link, kind))
                direct[(a, b)] = direct.get((a, b), 0) + 1
        for n, a in enumerate(indexes):
            for b in indexes[n + 1:]:
                links = direct.get((a, b), 0) or direct.get((b, a), 0)
                if switch.get(a) and switch.get(b):
                    links += min(switch[a], switch[b])
                pairs.append([a, b, "NV%d" % links if links else _level(r, handles[a], handles[b])])
    except Unreadable:
        raise
    except Exception as exc:  # a failed call (nvml._Failed, a lost GPU): topo -m says it instead
        raise Unreadable("%s: %s" % (type(exc).__name__, exc)) from exc
    return out


def _level(r, one, other):
    level = r.call("nvmlDeviceGetTopologyCommonAncestor", one, other)
    if level not in LEVELS:
        raise Unreadable("nvmlDeviceGetTopologyCommonAncestor: level %r has no topo -m name" % (level,))
    return LEVELS[level]
