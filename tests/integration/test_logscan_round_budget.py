"""A log whose pattern never finishes costs the round only its share of the deadline: the node's round bounds
the scan in a forked child and still answers with the GPU readings. Split from
tests/unit/node/test_logscan_budget.py (the scanner's own bounds: there)."""

from __future__ import annotations

import time
from pathlib import Path

from gpudiag_node import probe, wire


def _source(path: Path | str, **extra: object) -> dict[str, object]:
    return {"path": str(path), "signatures": [{"name": "xid", "regex": "Xid"}], "echoes": [], **extra}


def test_a_log_that_never_finishes_costs_the_round_only_its_share(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("x" * 40 + "\n")
    fine = tmp_path / "fine.log"
    fine.write_text("Xid 1\n")
    slow = {"name": "slow", "regex": "(?:x|x)*y"}  # 2**40 ways to fail on that line: it never finishes
    config = {"samples": 1, "interval_s": 0.0, "call_timeout_s": 4.0, "gpus": False, "dcgm": False,
              "logs": [_source(fine), {"path": str(log), "signatures": [slow], "echoes": []}]}
    began = time.monotonic()
    doc = probe.collect_round(wire.read_config(config), {})
    assert time.monotonic() - began < 10.0
    first, second = doc["logs"]
    assert first["status"] == "ok" and first["matches"]["xid"]["count"] == 1 and doc["problems"] == []
    assert second["status"] == "unreadable" and second["cut"] and "share of the deadline" in second["error"]
