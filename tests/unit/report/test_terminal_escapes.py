"""Node-supplied text never reaches the operator's terminal as control or bidi characters (issue 14, item 11):
an OSC sequence (ESC ] 0 ; title BEL sets the terminal's title) and U+202E (right-to-left override) in a log
line, a GPU name, an error and a finding are shown escaped by every text output."""

from __future__ import annotations

import pytest
from builders import finding, gpu, host_report, node, sweep

from gpudiag.cli.live import render_watch
from gpudiag.model import HostStatus, LogLine, LogMatch, LogScan
from gpudiag.report import OutputFormat, ReportView, render
from gpudiag.report.inventory_table import render_inventory
from gpudiag.report.logs_report import render_grep
from gpudiag.report.terminal import safe, safe_lines

EVIL = "x\x1b]0;owned\x07y\u202ez\u2066\x9b2J\r"


def _clean(output: str) -> None:
    assert "\x1b]" not in output and "\x07" not in output and "\u202e" not in output and "\u2066" not in output
    assert "\x9b" not in output and "\r" not in output
    assert "\\x1b]0;owned\\x07y\\u202ez" in output  # shown, escaped: the operator sees what the node sent


def _report():
    line = LogLine(seq=1, text=f"Xid {EVIL}")
    scan = LogScan(path=f"/l{EVIL}", lines=1, matches=(LogMatch(signature="kv", count=1, first=line, last=line,
                                                                   recent=(line,), last_seq=1),))
    ok = host_report("gpu01", readings=node([gpu(name=f"NVIDIA H100 {EVIL}")], logs=(scan,), hostname="gpu01"),
                     findings=(finding(host="gpu01", summary=f"busy {EVIL}"),))
    down = host_report("gpu02", status=HostStatus.ERROR, error=f"unexpected {EVIL}")
    return sweep(ok, down)


@pytest.mark.parametrize("color", [False, True])
def test_the_table_escapes_node_text(color: bool) -> None:
    _clean(render(_report(), OutputFormat.TABLE, ReportView(color=color)) if color
           else render(_report(), OutputFormat.TABLE))


def test_grep_escapes_log_lines() -> None:
    _clean(render_grep(_report(), "kv"))


@pytest.mark.parametrize("color", [False, True])
def test_watch_escapes_node_text(color: bool) -> None:
    _clean(render_watch(1, 0, _report(), appeared=(finding(host="gpu01", summary=f"busy {EVIL}"),), color=color))


def test_the_inventory_table_escapes() -> None:
    _clean(render_inventory([{"name": "gpu01", "logs": [f"/l{EVIL}"]}]))


def test_safe_keeps_ordinary_text_and_lines() -> None:
    assert safe("H100 80GB HBM3 — µs ü 漢") == "H100 80GB HBM3 — µs ü 漢"
    assert safe("a\nb\tc") == "a\\x0ab\\x09c" and safe_lines("a\nb") == "a\nb"
