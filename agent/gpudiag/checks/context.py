"""What a GPU check may need from the rest of its node: the topology, whether it is a VM, and whether its
server spreads MoE experts over the GPUs. Built once per node (:meth:`NodeFacts.of`) and given to every GPU
check, so a verdict can say *why* in its own sentence. Pure."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gpudiag.model import GpuProcess, LogScan, NodeContext, NodeReadings, link_names
from gpudiag.model.culprit import ProcessChoice, choose_working


def expert_parallel(logs: Iterable[LogScan]) -> str | None:
    """ "ep_size=8" when a server's configuration says MoE experts are spread over GPUs."""
    for scan in logs:
        for facts in scan.facts:
            ep = facts.get("ep_size")
            if isinstance(ep, int) and not isinstance(ep, bool) and ep > 1:
                return f"ep_size={ep}"
            if facts.get("enable_expert_parallel") is True:
                return "enable_expert_parallel=True"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeFacts:
    """The node around a GPU, as its checks see it."""

    context: NodeContext | None = None  # topology and virtualization; None: not collected
    expert_parallel: str | None = None  # "ep_size=8" from a server's configuration echo
    node: NodeReadings | None = None  # for the processes on each GPU

    @classmethod
    def of(cls, node: NodeReadings) -> NodeFacts:
        return cls(context=node.context, expert_parallel=expert_parallel(node.logs), node=node)

    def processes_on(self, gpu: int) -> tuple[GpuProcess, ...]:
        return self.node.processes_on(gpu) if self.node is not None else ()

    def working_process(self, gpu: int) -> ProcessChoice | None:
        """The process whose kernels occupy ``gpu``, or why it cannot be told (:func:`choose_working`)."""
        return choose_working(self.processes_on(gpu))

    def links_sentence(self, gpu: int) -> tuple[str | None, str | None]:
        """(interconnect kind, "it reaches the other 7 GPUs over PCIe only (PIX/SYS, no NVLink)") for ``gpu``."""
        links = self.context.links_of(gpu) if self.context is not None else ()
        if not links:
            return None, None
        kinds = {link.kind for link in links}
        names = link_names(links)
        if kinds == {"pcie"}:
            return "pcie", f"it reaches the other {len(links)} GPUs over PCIe only ({names}, no NVLink)"
        if kinds == {"nvlink"}:
            return "nvlink", f"it reaches the other {len(links)} GPUs over NVLink ({names})"
        return "mixed", f"it reaches some GPUs over NVLink and others over PCIe ({names})"

    def starved_because(self, gpu: int) -> tuple[str | None, dict[str, object]]:
        """Why a busy GPU at low power may be waiting: a sentence about its links and the VM (None when the
        node's context says nothing), and the evidence behind it. A GPU whose peers are reachable over PCIe
        only, inside a VM, is most likely waiting on inter-GPU traffic (MoE expert parallelism sends
        all-to-all traffic over PCIe there)."""
        context = self.context
        if context is None:
            return None, {}
        kind, links = self.links_sentence(gpu)
        vm = context.vm_description
        if links is None and vm is None:
            return None, {}
        sentence = " ".join(p for p in (links, f"inside {vm}" if vm else None) if p) if links \
            else f"the node is {vm}"
        if kind == "pcie":
            ep = self.expert_parallel
            moe = f"MoE expert parallelism ({ep}) sends its all-to-all traffic" if ep else \
                "all-reduce and all-to-all traffic between the GPUs goes"
            sentence += f", so {moe} over PCIe{' through the hypervisor' if vm else ''} - likely the real bottleneck"
        evidence: dict[str, object] = {
            "interconnect": kind,
            "gpu_links": ", ".join(f"GPU{link.gpu_b if link.gpu_a == gpu else link.gpu_a} {link.link}"
                                   for link in context.links_of(gpu)) or None,
            "virtualization": context.virtualization, "is_vm": context.is_vm,
            "expert_parallel": self.expert_parallel}
        return sentence, evidence


NO_FACTS = NodeFacts()  # a GPU judged alone: nothing known about its node
