"""Log evidence and node context as findings: the probe document's logs/context parsed, then judged.

Whole findings are compared where it matters (the case study's LOG_EXPECTED_ABSENT, the BUSY_LOW_POWER
sentence with its context, an XID on the right GPU); the rest checks codes, severities and evidence.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from pathlib import Path
from typing import Any

import pytest
from builders import gpu, node, sample

from gpudiag.checks import CheckSettings, evaluate
from gpudiag.checks.context import expert_parallel
from gpudiag.collect.parse import parse_probe
from gpudiag.collect.parse_logs import parse_context, parse_log_scan, parse_topology
from gpudiag.demo.demo_logs import SERVER_ARGS, sglang_glm5_lines, spare_kernel_lines
from gpudiag.logs import KERNEL, LogOptions, build_plans
from gpudiag.logs.xid import describe, gpu_index, pci_key
from gpudiag.model import (
    Action,
    Finding,
    GpuLink,
    Host,
    HostStatus,
    LogScan,
    LogStatus,
    NodeContext,
    NodeReadings,
    Severity,
)
from gpudiag.report.evidence import context_line, evidence_lines
from gpudiag_node import logscan

DATA = Path(__file__).resolve().parents[2] / "data" / "h200x2_580.159_context"
S = CheckSettings()
CASE_STUDY: dict[str, Any] = {
    "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "compute_capability": "12.0", "sm": "SM120",
    "arch": "Blackwell (RTX)", "utilization_pct": 100.0, "memory_utilization_pct": 25.0, "power_w": 330.0,
    "enforced_power_limit_w": 600.0, "default_power_limit_w": 600.0, "sm_clock_mhz": 2400.0, "max_sm_clock_mhz": 2430.0}


def _pcie_vm_context(gpus: int = 8, virt: str | None = "kvm") -> NodeContext:
    def link(a: int, b: int) -> str:
        return "SYS" if a // 4 != b // 4 else ("PIX" if a // 2 == b // 2 else "NODE")

    return NodeContext(links=tuple(GpuLink(gpu_a=a, gpu_b=b, link=link(a, b)) for a in range(gpus)
                                   for b in range(a + 1, gpus)), virtualization=virt, container="none")


def scan_lines(tmp_path: Path, lines: list[str], host: Host | None = None, **options: Any) -> tuple[LogScan, Any]:
    """Write ``lines`` to a log, scan it with the node's scanner as the plan says, parse it back."""
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    plan = build_plans([host or Host(name="h", logs=(str(log),))], LogOptions(**options))["h"]
    raw = logscan.scan(plan.sources[0].node_config())
    return parse_log_scan(raw, plan), plan


def glm5_node(tmp_path: Path, lines: list[str], **readings: Any) -> tuple[NodeReadings, Any]:
    scan, plan = scan_lines(tmp_path, lines)
    gpus = [gpu(index=i, samples=[sample(power_w=330.0)] * 5, **CASE_STUDY) for i in range(8)]
    return node(gpus, logs=(scan,), **readings), plan


# ------------------------------------------------------------------------------- the case study


def test_the_autotuner_that_never_ran(tmp_path: Path) -> None:
    lines = sglang_glm5_lines(datetime.datetime(2026, 11, 30, 8, 0))
    readings, plan = glm5_node(tmp_path, lines)
    findings = [f for f in evaluate("sglang-glm5", HostStatus.OK, None, readings, S, plan)
                if f.code == "LOG_EXPECTED_ABSENT"]
    assert findings == [Finding(
        code="LOG_EXPECTED_ABSENT", severity=Severity.WARNING, host="sglang-glm5", gpu=None,
        summary=f"{tmp_path / 'server.log'}: the server started with the FlashInfer autotuner enabled "
                "(disable_flashinfer_autotune=False) and is ready, yet no [Autotuner] line followed its start "
                f"({len(lines) - 1} lines since): the autotuner never ran, so the MoE path in use "
                "(moe_runner_backend=flashinfer_cutlass) does not use it and missing tuning configs for this GPU "
                "are a red herring - look elsewhere for the slowness - many small kernel launches per layer and "
                "expert, and the expert-parallel all-to-all between GPUs (ep_size=8)",
        evidence={"log": str(tmp_path / "server.log"), "expectation": "flashinfer_autotuner_ran",
                  "echo": "sglang_server_args", "server_start_line": 1, "lines_after_start": len(lines) - 1,
                  "expected": "flashinfer_autotune_start,flashinfer_autotune_end,flashinfer_tuning_progress,"
                              "flashinfer_configs_loaded,flashinfer_default_configs",
                  "disable_flashinfer_autotune": False, "moe_runner_backend": "flashinfer_cutlass", "ep_size": 8},
        action=Action.WATCH)]


@pytest.mark.parametrize(("why", "change", "absent"), [
    ("autotuner lines after the start", lambda ls: ls + ["[2026-11-30 07:00:00] flashinfer.jit: [Autotuner]: "
                                                         "Autotuning process starts ..."], False),
    ("the tuning progress bar counts", lambda ls: ls + ["[AutoTuner]: Tuning fp4_gemm:  0%|  | 0/13"], False),
    ("autotune disabled", lambda ls: [ls[0].replace("disable_flashinfer_autotune=False",
                                                    "disable_flashinfer_autotune=True")] + ls[1:], False),
    ("not ready yet: too early to miss it", lambda ls: [x for x in ls if "ready to roll" not in x], False),
    ("no server start in the log", lambda ls: ls[1:], False),
    ("an autotuner line from an earlier start does not count",
     lambda ls: ["[2026-11-29 07:00:00] [Autotuner]: Autotuning process ends"] + ls, True),
    ("the last start is the one judged", lambda ls: ls + ls, True),
])
def test_expectation_verdicts(tmp_path: Path, why: str, change: Any, absent: bool) -> None:
    lines = change(sglang_glm5_lines(datetime.datetime(2026, 11, 30, 8, 0)))
    readings, plan = glm5_node(tmp_path, lines)
    codes = [f.code for f in evaluate("h", HostStatus.OK, None, readings, S, plan)]
    assert ("LOG_EXPECTED_ABSENT" in codes) is absent, why


def test_the_server_args_line_is_configuration_not_a_match(tmp_path: Path) -> None:
    """A naive "autotune" signature (a user pack) finds nothing in the case-study log: the only line that says
    autotune is the server's own arguments, which are facts."""
    pack = tmp_path / "naive.yaml"
    pack.write_text("pack: naive\nsignatures:\n  - {name: naive_autotune, regex: autotun, ignore_case: true,"
                    " severity: warning, meaning: autotune mentioned}\n")
    lines = sglang_glm5_lines(datetime.datetime(2026, 11, 30, 8, 0))
    scan, plan = scan_lines(tmp_path, lines, pack_files=(str(pack),))
    assert scan.found("naive_autotune") == ()
    (facts,) = scan.facts
    assert (facts.echo, facts.server, facts.seq, facts.get("disable_flashinfer_autotune")) == (
        "sglang_server_args", "SGLang", 1, False)
    assert dict(facts.values)["moe_runner_backend"] == "flashinfer_cutlass"
    readings = node([gpu()], logs=(scan,))
    assert "naive_autotune" not in json.dumps([f.evidence for f in evaluate("h", HostStatus.OK, None, readings,
                                                                           S, plan)])


def test_busy_low_power_says_pcie_only_inside_a_vm(tmp_path: Path) -> None:
    lines = sglang_glm5_lines(datetime.datetime(2026, 11, 30, 8, 0))
    readings, plan = glm5_node(tmp_path, lines, context=_pcie_vm_context())
    busy = [f for f in evaluate("sglang-glm5", HostStatus.OK, None, readings, S, plan) if f.code == "BUSY_LOW_POWER"]
    assert len(busy) == 8
    assert busy[3].summary == (
        "reads 100% busy but draws 330 W of its 600 W enforced limit (55%), memory 25% busy, SM clock 2400 of "
        "2430 MHz: a kernel is always resident but few SMs do work - launch-bound, latency-bound, or waiting on "
        "communication; it reaches the other 7 GPUs over PCIe only (PIX/NODE/SYS, no NVLink) inside a KVM virtual "
        "machine (systemd-detect-virt), so MoE expert parallelism (ep_size=8) sends its all-to-all traffic over "
        "PCIe through the hypervisor - likely the real bottleneck")
    assert {k: busy[3].evidence[k] for k in ("interconnect", "gpu_links", "virtualization", "is_vm",
                                             "expert_parallel")} == {
        "interconnect": "pcie", "gpu_links": "GPU0 NODE, GPU1 NODE, GPU2 PIX, GPU4 SYS, GPU5 SYS, GPU6 SYS, GPU7 SYS",
        "virtualization": "kvm", "is_vm": True, "expert_parallel": "ep_size=8"}


@pytest.mark.parametrize(("context", "tail"), [
    (NodeContext(links=(GpuLink(gpu_a=0, gpu_b=1, link="NV18"),), virtualization="none"),
     "; it reaches the other 1 GPUs over NVLink (NV18)"),
    (NodeContext(links=(GpuLink(gpu_a=0, gpu_b=1, link="PHB"),), virtualization="none"),
     "; it reaches the other 1 GPUs over PCIe only (PHB, no NVLink), so all-reduce and all-to-all traffic between "
     "the GPUs goes over PCIe - likely the real bottleneck"),
    (NodeContext(hypervisor_flag=True, topology_error="nvidia-smi is not installed"),
     "; the node is a virtual machine (the CPU has the hypervisor flag)"),
])
def test_busy_low_power_context_variants(context: NodeContext, tail: str) -> None:
    g = gpu(index=0, samples=[sample(power_w=330.0)] * 5, **CASE_STUDY)
    (plain,) = evaluate("h", HostStatus.OK, None, node([g]), S)
    (with_ctx,) = evaluate("h", HostStatus.OK, None, node([g], context=context), S)
    assert with_ctx.summary == plain.summary + tail


def test_no_context_leaves_busy_low_power_as_it_was() -> None:
    g = gpu(index=0, samples=[sample(power_w=330.0)] * 5, **CASE_STUDY)
    (plain,) = evaluate("h", HostStatus.OK, None, node([g]), S)
    bare = NodeContext(virtualization="none", topology_error="nvidia-smi topo -m: exit 2")
    assert evaluate("h", HostStatus.OK, None, node([g], context=bare), S) == (plain,)


def test_expert_parallel_from_vllm_facts(tmp_path: Path) -> None:
    line = ("INFO 07-24 17:34:57 [cli_args.py:325] non-default args: {'model': '/m', 'tensor_parallel_size': 8, "
            "'enable_expert_parallel': True}")
    scan, _ = scan_lines(tmp_path, [line])
    assert dict(scan.facts[0].values) == {"model": "/m", "tensor_parallel_size": 8, "enable_expert_parallel": True}
    assert expert_parallel([scan]) == "enable_expert_parallel=True"


# ------------------------------------------------------------------------------- signatures, unreadable


def test_a_warning_signature_is_a_finding_with_count_first_and_last(tmp_path: Path) -> None:
    lines = ["[t1] KV cache pool is full. Retract requests. #retracted_reqs: 1", "[t2] other",
             "[t3] KV cache pool is full. Retract requests. #retracted_reqs: 2",
             "[t4] The server is fired up and ready to roll!"]
    scan, plan = scan_lines(tmp_path, lines)
    (found,) = evaluate("h", HostStatus.OK, None, node([gpu()], logs=(scan,)), S, plan)
    assert (found.code, found.severity, found.gpu) == ("LOG_SIGNATURE", Severity.WARNING, None)
    assert found.summary == (
        f"{tmp_path / 'server.log'}: the KV cache ran full, so running requests were retracted and will be computed "
        'again (2 lines, last "[t3] KV cache pool is full. Retract requests. #retracted_reqs: 2") - occasional '
        "retractions are fine; frequent ones waste throughput - raise --schedule-conservativeness or "
        "--mem-fraction-static, or send fewer concurrent requests")
    assert found.evidence == {"log": str(tmp_path / "server.log"), "signature": "sglang_kv_cache_full", "count": 2,
                              "older": 0, "first_line": lines[0], "last_line": lines[2], "pack": "sglang"}


def test_a_critical_signature(tmp_path: Path) -> None:
    scan, plan = scan_lines(tmp_path, ["RuntimeError: CUDA error: an illegal memory access was encountered"])
    (found,) = evaluate("h", HostStatus.OK, None, node([gpu()], logs=(scan,)), S, plan)
    assert (found.code, found.severity, found.evidence["signature"]) == (
        "LOG_SIGNATURE", Severity.CRITICAL, "cuda_illegal_address")


@pytest.mark.parametrize(("raw", "summary"), [
    ({"path": "~/gone.log", "resolved": "/home/u/gone.log", "status": "missing", "error": "no such file"},
     "~/gone.log (/home/u/gone.log): no such file - its log evidence is missing; fix the path in the inventory or "
     "--log, or let the SSH user read it"),
    ({"path": KERNEL, "status": "unreadable", "error": "dmesg: Operation not permitted"},
     "the kernel log: dmesg: Operation not permitted - its log evidence is missing; let the SSH user read the "
     "journal (group systemd-journal or adm) or the kernel ring buffer"),
])
def test_an_unreadable_log_is_unknown_not_a_host_error(raw: dict[str, Any], summary: str) -> None:
    plan = build_plans([Host(name="h", logs=(raw["path"],))])["h"]
    readings = node([gpu()], logs=(parse_log_scan(raw, plan),))
    (found,) = evaluate("h", HostStatus.OK, None, readings, S, plan)
    assert (found.code, found.severity, found.summary) == ("LOG_UNREADABLE", Severity.UNKNOWN, summary)


# ------------------------------------------------------------------------------- Xid


def test_xid_on_the_right_gpu_within_the_window(tmp_path: Path) -> None:
    now = datetime.datetime.now()
    log_lines = spare_kernel_lines(now)
    host = Host(name="h", logs=({"path": str(tmp_path / "server.log"), "packs": ["xid"]},))
    scan, plan = scan_lines(tmp_path, log_lines, host=host)
    gpus = [gpu(index=i, pci_bus_id=f"00000000:{bus}:00.0") for i, bus in enumerate(("1B", "43", "52", "61", "9D"))]
    findings = evaluate("spare", HostStatus.OK, None, node(gpus, logs=(scan,)), S, plan)
    assert [(f.code, f.gpu, f.severity, f.evidence["xid"], f.evidence["count"]) for f in findings] == [
        ("XID", 4, Severity.WARNING, 63, 1)]  # the Xid 79 of four days ago is older than the 24 h window
    assert findings[0].summary.startswith(
        "Xid 63 (ECC page retirement or row remapping) on GPU 4 (0000:9d:00), 1 line in "
        f"{tmp_path / 'server.log'} in the last 24 h: a memory row was marked for remapping; it applies at the next "
        "GPU reset - reset the GPU when convenient so the remap takes effect; watch the count; last \"")
    (match,) = [m for m in scan.found("kernel_xid") if m.count]
    assert dict(match.key) == {"pci": "0000:9d:00", "xid": "63"}
    assert sum(m.older for m in scan.found("kernel_xid")) == 1


def test_xid_79_is_critical_and_an_unknown_pci_is_said() -> None:
    raw = {"path": KERNEL, "status": "ok", "source": "journalctl", "lines": 2, "matches": {"kernel_xid": {
        "count": 2, "older": 0, "last_seq": 2, "group_by": ["pci", "xid"], "keys": [
            {"key": ["0000:2b:00", "79"], "count": 1, "first": {"seq": 1, "text": "a"},
             "last": {"seq": 1, "text": "a"}},
            {"key": ["0000:ff:00", "999"], "count": 1, "first": {"seq": 2, "text": "b"},
             "last": {"seq": 2, "text": "b"}}]}}}
    plan = build_plans([Host(name="h", logs=(KERNEL,))])["h"]
    gpus = [gpu(index=0, pci_bus_id="00000000:2B:00.0")]
    findings = evaluate("h", HostStatus.OK, None, node(gpus, logs=(parse_log_scan(raw, plan),)), S, plan)
    assert [(f.gpu, f.severity, f.evidence["xid_name"]) for f in findings] == [
        (0, Severity.CRITICAL, "GPU has fallen off the bus"), (None, Severity.WARNING, "Xid 999")]
    assert "on PCI 0000:ff:00 (no GPU of this node has it)" in findings[1].summary
    assert "look it up in NVIDIA's Xid catalog" in findings[1].summary


@pytest.mark.parametrize(("text", "key"), [
    ("0000:2b:00", (0, 0x2B, 0)), ("00000000:2B:00.0", (0, 0x2B, 0)), ("PCI:0000:2b:00", (0, 0x2B, 0)),
    ("0001:c1:00.0", (1, 0xC1, 0)), ("not a bus", None), (None, None)])
def test_pci_addresses_in_both_spellings(text: str | None, key: tuple[int, int, int] | None) -> None:
    assert pci_key(text) == key


def test_gpu_index_by_pci_and_the_xid_table() -> None:
    gpus = [gpu(index=i, pci_bus_id=f"00000000:{b}:00.0") for i, b in enumerate(("1B", "2B"))]
    assert gpu_index("0000:2b:00", gpus) == 1 and gpu_index("0000:3b:00", gpus) is None
    assert [(describe(x).severity, describe(x).name) for x in (31, 48, 63, 74, 79, 94, 95, 119)] == [
        (Severity.WARNING, "GPU memory page fault"), (Severity.CRITICAL, "Double-bit ECC error"),
        (Severity.WARNING, "ECC page retirement or row remapping"), (Severity.CRITICAL, "NVLink error"),
        (Severity.CRITICAL, "GPU has fallen off the bus"), (Severity.WARNING, "Contained ECC error"),
        (Severity.CRITICAL, "Uncontained ECC error"), (Severity.CRITICAL, "GSP RPC timeout")]


# ------------------------------------------------------------------------------- topology, VM


def test_topology_of_a_real_h200_pair() -> None:
    """Driver 580 underlines the header with ANSI escapes, even into a file."""
    text = (DATA / "topo-m.txt").read_text()
    assert "\x1b[4m" in text
    assert parse_topology(text) == (GpuLink(gpu_a=0, gpu_b=1, link="NV18"),)


def test_topology_with_nics_and_a_pcie_only_matrix() -> None:
    text = ("\tGPU0\tGPU1\tGPU2\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
            "GPU0\t X \tPIX\tSYS\tPXB\t0-31\t0\t\tN/A\n"
            "GPU1\tPIX\t X \tSYS\tPXB\t0-31\t0\t\tN/A\n"
            "GPU2\tSYS\tSYS\t X \tSYS\t32-63\t1\t\tN/A\n"
            "NIC0\tPXB\tPXB\tSYS\t X \n\nLegend:\n\n  X    = Self\n  NV#  = Connection traversing a bonded set\n")
    links = parse_topology(text)
    assert [(x.gpu_a, x.gpu_b, x.link, x.kind) for x in links] == [
        (0, 1, "PIX", "pcie"), (0, 2, "SYS", "pcie"), (1, 2, "SYS", "pcie")]
    assert NodeContext(links=links).interconnect == "pcie"


def test_the_context_of_a_real_h200_vm() -> None:
    """The device machine: NVLink between its two H200, no systemd-detect-virt, no DMI; a hypervisor CPU flag."""
    doc = json.loads((DATA / "probe-context.json").read_text())
    context = parse_context(doc["context"])
    assert context is not None
    assert (context.interconnect, context.virtualization, context.is_vm) == ("nvlink", None, True)
    assert context_line(context, 2) == "2 GPUs over NVLink (NV18); a virtual machine (the CPU has the hypervisor flag)"
    (kernel,) = doc["logs"]
    assert (kernel["source"], kernel["status"], kernel["matches"]["kernel_xid"]["count"]) == ("dmesg", "ok", 0)


@pytest.mark.parametrize(("context", "is_vm"), [
    (NodeContext(virtualization="kvm", hypervisor_flag=False), True),
    (NodeContext(virtualization="none", hypervisor_flag=True), False),  # systemd-detect-virt knows best
    (NodeContext(dmi_sys_vendor="QEMU", dmi_product_name="Standard PC (Q35 + ICH9, 2009)"), True),
    (NodeContext(dmi_sys_vendor="Supermicro", dmi_product_name="SYS-421GE-TNRT", hypervisor_flag=False), False),
    (NodeContext(dmi_sys_vendor="Amazon EC2", dmi_product_name="p5.48xlarge", hypervisor_flag=True), True),
    (NodeContext(), None),
])
def test_is_vm(context: NodeContext, is_vm: bool | None) -> None:
    assert context.is_vm is is_vm


@pytest.mark.parametrize(("raw", "error"), [
    ({"topology": None}, "nvidia-smi is not installed"),
    ({"topology": {"exit": 9, "stdout": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                                        "driver.\n", "stderr": ""}},
     "nvidia-smi topo -m: exit 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."),
    ({"topology": {"exit": 0, "stdout": "\tCPU Affinity\nLegend:\n\n  X    = Self\n", "stderr": ""}},
     "nvidia-smi topo -m listed no GPU pair"),  # one GPU is not an error: test_context.py
])
def test_topology_errors_are_said(raw: dict[str, Any], error: str) -> None:
    context = parse_context(raw)
    assert context is not None and context.topology_error == error and context.links == ()


def test_context_and_logs_travel_through_parse_probe(tmp_path: Path) -> None:
    doc = {"schema": "gpudiag.probe/2", "nvidia_smi": {"status": "skipped"},
           "context": {"virt": {"vm": "kvm", "container": "none"}, "dmi": {}, "hypervisor_flag": True},
           "logs": [{"path": "/x", "status": "missing", "error": "no such file"}]}
    readings = parse_probe(doc)
    assert readings.smi_status.value == "skipped" and readings.gpus == ()
    assert readings.context is not None and readings.context.virtualization == "kvm"
    assert readings.logs == (LogScan(path="/x", status=LogStatus.MISSING, error="no such file"),)
    assert evaluate("h", HostStatus.OK, None, readings, S) == ()  # a log search: no GPU finding


def test_evidence_lines_under_a_host(tmp_path: Path) -> None:
    lines = sglang_glm5_lines(datetime.datetime(2026, 11, 30, 8, 0))
    readings, plan = glm5_node(tmp_path, lines, context=_pcie_vm_context())
    from builders import host_report

    report = host_report("sglang-glm5", readings=readings,
                         findings=evaluate("sglang-glm5", HostStatus.OK, None, readings, S, plan))
    got = evidence_lines(report)
    assert got[0] == ("context", "8 GPUs over PCIe only (PIX/NODE/SYS, no NVLink); a KVM virtual machine "
                                 "(systemd-detect-virt)")
    assert got[1][0] == "server" and "moe_runner_backend=flashinfer_cutlass" in got[1][1]
    assert "disable_flashinfer_autotune=False" in got[1][1]
    assert got[2] == ("last", "sglang_decode_batch (60 lines): running_req=64, tokens=202274, token_usage=0.49, "
                              "cuda_graph=True, gen_throughput_tok_s=225.37, queue_req=0")
    assert evidence_lines(dataclasses.replace(report, findings=())) == ()  # context explains findings only
    assert SERVER_ARGS.count("autotune") == 1
