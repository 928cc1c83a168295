"""XID_STORM: the same Xid on the same GPU many times in the kernel log's window, beside the single-event XID
finding; the log is read by the node's own scanner, the findings compared whole."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from builders import gpu, node

from gpudiag.checks import CheckSettings, evaluate
from gpudiag.collect.parse_logs import parse_log_scan
from gpudiag.logs import LogOptions, build_plans
from gpudiag.model import Action, Finding, Host, HostStatus, Severity
from gpudiag_node import logscan

GPUS = [gpu(index=0, pci_bus_id="00000000:1B:00.0"), gpu(index=1, pci_bus_id="00000000:2B:00.0")]


def kernel_lines(now: dt.datetime, faults: int) -> list[str]:
    def at(t: dt.datetime, text: str) -> str:
        return f"{t:%b} {t.day:2d} {t:%H:%M:%S} node7 kernel: {text}"

    lines = [at(now - dt.timedelta(minutes=5 * i), "NVRM: Xid (PCI:0000:1b:00): 13, pid=4312, name=python3, "
                                                     "Graphics SM Warp Exception on (GPC 1, TPC 2, SM 0)")
             for i in range(faults, 0, -1)]
    return [*lines, at(now - dt.timedelta(minutes=1), "NVRM: Xid (PCI:0000:2b:00): 79, pid='<unknown>', "
                                                      "name=<unknown>, GPU has fallen off the bus.")]


def findings(tmp_path: Path, faults: int, settings: CheckSettings = CheckSettings()) -> list[Finding]:
    log = tmp_path / "kern.log"
    log.write_text("\n".join(kernel_lines(dt.datetime.now(), faults)) + "\n")
    plan = build_plans([Host(name="node7", logs=({"path": str(log), "packs": ["xid"]},))], LogOptions())["node7"]
    scan = parse_log_scan(logscan.scan(plan.sources[0].node_config()), plan)
    return [f for f in evaluate("node7", HostStatus.OK, None, node(GPUS, logs=(scan,)), settings, plan)
            if f.code == "XID_STORM"]


def test_a_storm_of_one_xid_on_one_gpu_is_said_with_its_count_and_rate(tmp_path: Path) -> None:
    (storm,) = findings(tmp_path, 24)
    assert storm == Finding(
        code="XID_STORM", severity=Severity.WARNING, host="node7", gpu=0,
        summary=f"Xid 13 (Graphics engine exception) storm on GPU 0 (0000:1b:00): 24 lines in {tmp_path / 'kern.log'} "
                "in the last 24 h, 1.0 an hour - not one event but a GPU that keeps failing: usually the "
                "application's fault (bad kernel, driver/toolkit mismatch): restart the application; if it "
                "repeats on one GPU only, suspect the GPU, and if it goes on, take the GPU out of service",
        evidence={"log": str(tmp_path / "kern.log"), "xid": 13, "xid_name": "Graphics engine exception",
                  "pci": "0000:1b:00", "count": 24, "since_hours": 24.0, "per_hour": 1.0, "xid_storm_lines": 20.0},
        action=Action.RESET_GPU)  # one Xid 13: restart the workload; a storm of them: one step up


def test_below_the_threshold_only_the_single_event_finding(tmp_path: Path) -> None:
    assert findings(tmp_path, 19) == []
    assert len(findings(tmp_path, 19, CheckSettings(xid_storm_lines=10))) == 1  # an inventory's checks: block
