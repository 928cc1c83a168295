"""The node context and the kernel-log scan on a real GPU node: the bundle as the controller sends it.

Passed on the device tool's two-H200 machine (NV18 between them, a VM without systemd-detect-virt, dmesg
readable as root) on 2026-11-30."""

from __future__ import annotations

import json
import subprocess
import sys

from gpudiag.collect.parse_logs import parse_context, parse_log_scan
from gpudiag.collect.remote import collector_call
from gpudiag.logs import build_plans
from gpudiag.model import Host


def test_topology_virtualization_and_the_kernel_log_on_a_gpu_node() -> None:
    plan = build_plans([Host(name="gpu", logs=("@kernel",))])["gpu"]
    call = collector_call(samples=1, interval_s=0.0, deadline_s=60.0, source="nvidia-smi",
                          logs=plan.node_config(), context=True)
    done = subprocess.run([sys.executable, "-"], input=call.stdin, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    gpus = {line.split(",")[0] for s in doc["samples"] for line in s["stdout"].splitlines() if line.strip()}
    context = parse_context(doc["context"])
    assert context is not None
    assert context.topology_error is None or len(gpus) < 2
    assert len(context.links) == len(gpus) * (len(gpus) - 1) // 2
    assert all(link.kind in ("nvlink", "pcie") for link in context.links)
    (kernel,) = doc["logs"]
    scan = parse_log_scan(kernel, plan)
    # Readable (journalctl or dmesg) or a status that says why not - never a crash of the collection.
    assert (scan.status.value, scan.source) in {("ok", "journalctl"), ("ok", "dmesg"), ("unreadable", None)}
    assert doc["problems"] == []
