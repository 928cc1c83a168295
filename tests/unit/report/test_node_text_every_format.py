"""One escaping for every output that shows node text (issue 23 #7): the same hostile strings (an OSC title
sequence ESC ] 0 ; ... BEL, ESC[2J that clears the screen, a CSI as one C1 byte, U+202E that reverses what
follows, an isolate, a carriage return) in a log line, a GPU name, an error and a finding's summary go through
every format of FORMATS, the ``--only-changes`` text, watch, the logs report and the Prometheus textfile: none
sends them raw. Before, ``--only-changes`` printed them as they came and the HTML page kept ESC, BEL and
U+202E."""

from __future__ import annotations

import json

import pytest
from builders import finding, gpu, host_report, node, sweep

from gpudiag.audit.changes import compare
from gpudiag.cli.live import render_watch
from gpudiag.model import HostStatus, LogLine, LogMatch, LogScan, SweepReport
from gpudiag.model.changes import FlapRule
from gpudiag.report import FORMATS, ReportView, render
from gpudiag.report.changes_text import render_changes
from gpudiag.report.escape import html_text, json_safe, safe
from gpudiag.report.logs_report import render_grep
from gpudiag.report.prometheus import render_prometheus

EVIL = "x\x1b]0;owned\x07y\x1b[2J\u202ez\u2066\x9b2J\r\x85g\u200bp\u00adu\u2060"
RAW = ("\x1b", "\x07", "\u202e", "\u2066", "\x9b", "\r", "\x85", "\u200b", "\u00ad", "\u2060")  # and the invisible ones


def hostile() -> SweepReport:
    line = LogLine(seq=1, text=f"Xid {EVIL}")
    scan = LogScan(path="/var/log/app.log", lines=1, matches=(
        LogMatch(signature="kv", count=1, first=line, last=line, recent=(line,), last_seq=1),))
    ok = host_report("gpu01", readings=node([gpu(name=f"NVIDIA H100 {EVIL}")], logs=(scan,), hostname="gpu01"),
                     findings=(finding(host="gpu01", summary=f"busy {EVIL}"),))
    down = host_report("gpu02", status=HostStatus.ERROR, error=f"unexpected {EVIL}")
    return sweep(ok, down)


def assert_nothing_raw(output: str, what: str) -> None:
    assert [c for c in RAW if c in output] == [], f"{what} sends node text raw"


@pytest.mark.parametrize("fmt", [name for name, _ in FORMATS], ids=lambda f: f.value)
def test_every_format_escapes_node_text(fmt) -> None:  # type: ignore[no-untyped-def]
    text = render(hostile(), fmt, ReportView(changes=compare(hostile(), (), FlapRule())))
    assert_nothing_raw(text, fmt.value)
    if fmt.value == "json":  # the same strings to a JSON reader
        document = json.loads(text)
        assert document["hosts"][1]["error"] == f"unexpected {EVIL}"
    elif fmt.value == "html":
        assert html_text(f"busy {EVIL}") in text  # shown escaped, then as markup
    else:
        assert safe(f"busy {EVIL}") in text


def test_only_changes_text_escapes_node_text() -> None:
    text = render_changes(compare(hostile(), (), FlapRule()))
    assert_nothing_raw(text, "--only-changes")
    assert safe(f"busy {EVIL}")[:40] in text


def test_watch_the_logs_report_and_prometheus_escape_node_text() -> None:
    report = hostile()
    for what, text in (("watch", render_watch(1, 0, report, appeared=report.hosts[0].findings, color=False)),
                       ("grep", render_grep(report, "kv")), ("prometheus", render_prometheus(report))):
        assert_nothing_raw(text, what)


def test_the_html_escapes_markup_after_controls() -> None:
    assert html_text('<b a="1">&\x1b[2J\u202e') == "&lt;b a=&quot;1&quot;&gt;&amp;\\x1b[2J\\u202e"


def test_json_safe_reads_back_the_same() -> None:
    document = json.dumps({"t": f"a{EVIL}b"}, ensure_ascii=False)
    assert json.loads(json_safe(document)) == {"t": f"a{EVIL}b"}
    assert json_safe('{"t": "plain ü"}') == '{"t": "plain ü"}'
