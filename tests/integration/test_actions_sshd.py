"""The action ladder end to end over the real OpenSSH sshd: the stub nvidia-smi's ``ecc`` scenario (GPU 1: 2
uncorrected ECC errors) with a kernel log the node's scanner reads (an Xid 79 on GPU 3, a storm of Xid 13 on
GPU 0), swept, checked, and shown: each finding's and the host's action in the JSON and in the 80-column
table, the actions from the one table (ECC: reset_gpu; Xid 79, RESTART_BM: reboot_node; Xid 13, RESTART_APP:
restart_workload, its storm one step up)."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
from pathlib import Path

import pytest

from gpudiag.checks import CheckSettings
from gpudiag.model import Action, SweepReport
from gpudiag.report import OutputFormat, ReportView, render
from gpudiag.sweep.runner import SweepOptions, sweep
from gpudiag.transport.ssh import SshOptions, SshTransport

pytestmark = pytest.mark.integration

FAST = SweepOptions(samples=2, interval_s=0.1, deadline_s=30.0, settings=CheckSettings())


def run_sweep(hosts: list) -> SweepReport:  # type: ignore[type-arg]
    return asyncio.run(sweep(hosts, SshTransport(SshOptions(connect_timeout_s=5.0, ssh_config=[])), FAST))


def kernel_bus(pci_bus_id: str) -> str:
    """00000000:1B:00.0 (nvidia-smi) -> 0000:1b:00 (the kernel's Xid line)."""
    domain, bus, device = pci_bus_id.split(".")[0].split(":")
    return f"{int(domain, 16):04x}:{bus.lower()}:{device.lower()}"


def test_actions_in_the_json_and_the_table(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (host,) = sshd_cluster.hosts("ecc")
    (first,) = run_sweep([host]).hosts  # the stub's PCI addresses, for the kernel log
    bus = {g.index: kernel_bus(g.pci_bus_id) for g in first.gpus}
    now = dt.datetime.now()

    def at(minutes_ago: int, text: str) -> str:
        t = now - dt.timedelta(minutes=minutes_ago)
        return f"{t:%b} {t.day:2d} {t:%H:%M:%S} ecc kernel: {text}"

    log = tmp_path / "kern.log"
    log.write_text("\n".join([
        *(at(200 - 5 * i, f"NVRM: Xid (PCI:{bus[0]}): 13, pid=4312, name=python3, Graphics SM Warp Exception")
          for i in range(25)),
        at(3, f"NVRM: Xid (PCI:{bus[3]}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
    ]) + "\n")
    host = dataclasses.replace(host, logs=({"path": str(log), "packs": ["xid"]},))
    report = run_sweep([host])

    doc = json.loads(render(report, OutputFormat.JSON))
    (swept,) = doc["hosts"]
    assert swept["action"] == "reboot_node"
    assert sorted((f["code"], f["gpu"], f["evidence"].get("xid"), f["action"]) for f in swept["findings"]) == [
        ("ECC_UNCORRECTED", 1, None, "reset_gpu"), ("XID", 0, 13, "restart_workload"),
        ("XID", 3, 79, "reboot_node"), ("XID_STORM", 0, 13, "reset_gpu")]
    assert report.hosts[0].action is Action.REBOOT_NODE

    table = render(report, OutputFormat.TABLE, ReportView(width=80))
    lines = table.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "ecc  action: reboot_node" in lines
    assert "  CRITICAL  XID  gpu 3  reboot_node" in lines
    assert "  CRITICAL  ECC_UNCORRECTED  gpu 1  reset_gpu" in lines
    assert "  WARNING  XID_STORM  gpu 0  reset_gpu" in lines
    assert "  actions   reboot_node (1 host)" in lines
