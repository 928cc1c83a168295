"""Node-level checks over the links between a node's GPUs: NVLINK_DOWN (a link one GPU has down while its
peers have it up) and FABRIC_NOT_READY for the fabric manager. Pure functions ``(host, node, settings) ->
tuple[Finding, ...]`` like :mod:`gpudiag.checks.node`.

A GPU's links are judged against its peers on the same host: on an HGX board every GPU has the same links,
so a link active on the others and inactive on one is a fault, while links that are inactive on every GPU
(a board wired with fewer links, a PCIe card pair) are how the board is built.
"""

from __future__ import annotations

from gpudiag.model import CheckSettings, Finding, NodeReadings, Severity


def nvlink_down(host: str, node: NodeReadings, s: CheckSettings) -> tuple[Finding, ...]:
    """NVLINK_DOWN: links a GPU has inactive that a peer GPU on the host has active."""
    active_on: dict[int, list[int]] = {}  # link number → the GPUs that have it active
    for gpu in node.gpus:
        for link in gpu.nvlinks:
            if link.active:
                active_on.setdefault(link.link, []).append(gpu.index)
    found = []
    for gpu in node.gpus:
        down = [link.link for link in gpu.nvlinks if link.active is False and active_on.get(link.link)]
        if not down or gpu.lost:
            continue
        active = sum(1 for link in gpu.nvlinks if link.active)
        peers = sorted({p for n in down for p in active_on[n] if p != gpu.index})
        links = ",".join(map(str, down))
        found.append(Finding(
            code="NVLINK_DOWN", severity=Severity.CRITICAL, host=host, gpu=gpu.index,
            summary=(f"NVLink link{'s' if len(down) > 1 else ''} {links} {'are' if len(down) > 1 else 'is'} "
                     f"inactive while GPU{'s' if len(peers) > 1 else ''} {','.join(map(str, peers))} "
                     f"{'have' if len(peers) > 1 else 'has'} {'them' if len(down) > 1 else 'it'} active "
                     f"({active} of {len(gpu.nvlinks)} links up): GPU-to-GPU traffic loses bandwidth or falls "
                     "back to PCIe - look for Xid 74 in the kernel log; reset the GPU, else inspect the board"),
            evidence={"links_down": links, "links_active": active, "links": len(gpu.nvlinks),
                      "peers_with_link_active": ",".join(map(str, peers))}))
    return tuple(found)


def fabric_manager_down(host: str, node: NodeReadings, s: CheckSettings) -> tuple[Finding, ...]:
    """FABRIC_NOT_READY (node): NVSwitches are present but no nv-fabricmanager runs: the GPUs cannot join the
    NVLink fabric, and CUDA fails to start on them."""
    if not node.nvswitch_count or node.fabric_manager_running is not False:
        return ()
    return (Finding(code="FABRIC_NOT_READY", severity=Severity.CRITICAL, host=host, gpu=None,
                    summary=f"{node.nvswitch_count} NVSwitch{'es' if node.nvswitch_count > 1 else ''} present but "
                            "nv-fabricmanager is not running: the GPUs cannot join the NVLink fabric - start "
                            "nvidia-fabricmanager (its version must match the driver's)",
                    evidence={"nvswitch_count": node.nvswitch_count, "fabric_manager_running": False,
                              "driver_version": node.driver_version}),)


FABRIC_CHECKS = (nvlink_down, fabric_manager_down)
