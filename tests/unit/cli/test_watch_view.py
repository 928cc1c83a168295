"""The watch view at 80 columns (issue 19): the most serious hosts first, healthy hosts on one line, no code
cut in two, and a line that says which hosts a short screen leaves out."""

from __future__ import annotations

import re

from builders import finding, gpu, host_report, sweep
from rich.cells import cell_len

from gpudiag.cli.live import render_watch
from gpudiag.model import HostStatus, Severity

CODES = ("BUSY_LOW_POWER", "LOG_SIGNATURE", "LOG_EXPECTED_ABSENT")


def _cluster(healthy: int = 4):
    gpus = [gpu(index=i) for i in range(8)]
    warned = host_report("sglang", gpus, [finding(host="sglang", gpu=0, code=c, severity=Severity.WARNING)
                                          for c in CODES])
    ok = [host_report(f"train{i:02d}", gpus) for i in range(1, healthy + 1)]
    dead = host_report("dead01", None, [finding(host="dead01", gpu=None, code="HOST_UNREACHABLE")],
                       status=HostStatus.UNREACHABLE)
    return sweep(ok[0], warned, *ok[1:], dead)


def test_watch_orders_by_severity_and_folds_healthy_hosts() -> None:
    text = render_watch(1, 0, _cluster(), width=80)
    lines = text.splitlines()

    assert [cell_len(line) for line in lines if cell_len(line) > 80] == []
    hosts = [line.split()[0] for line in lines if re.match(r"(dead01|sglang) ", line)]
    assert hosts[0] == "dead01" and set(hosts[1:]) == {"sglang"}
    assert "4 hosts ok: train[01-04]" in text
    assert not any(line.startswith("train") for line in lines)


def test_watch_never_cuts_a_code_at_80() -> None:
    words = set(re.findall(r"[A-Z][A-Z_]{3,}", render_watch(1, 0, _cluster(), width=80)))

    assert set(CODES) | {"HOST_UNREACHABLE"} <= words
    assert {w for w in words if w.rstrip("_") not in CODES + ("HOST_UNREACHABLE",)} == set()


def test_a_short_screen_folds_gpus_then_says_which_hosts_it_leaves_out() -> None:
    folded = render_watch(1, 0, _cluster(), width=80, height=12)
    assert len(folded.splitlines()) <= 11
    assert any(line.startswith("sglang   1-7 ") for line in folded.splitlines())  # the GPUs that say nothing
    assert "not shown" not in folded

    text = render_watch(1, 0, _cluster(), width=80, height=9)
    assert len(text.splitlines()) <= 8
    assert "dead01" in text
    assert re.search(r"1 host with findings not shown \(the terminal has 9 rows.*\): sglang", text.replace("\n", " "))
