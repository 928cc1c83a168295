"""The text of gpudiag grep and gpudiag signatures, grep's exit codes, and the CLI's one-line errors."""

from __future__ import annotations

import json

from builders import host_report, node, sweep

from gpudiag.logs import Registry, builtin_packs
from gpudiag.model import HostStatus, LogLine, LogMatch, LogScan, LogStatus
from gpudiag.report.logs_report import grep_document, grep_exit_code, render_grep, render_signatures


def _scan(path: str = "~/s.log", count: int = 3) -> LogScan:
    lines = [LogLine(seq=i, text=f"line {i} KV cache pool is full") for i in (2, 9, 12)]
    match = LogMatch(signature="kv", count=count, first=lines[0], last=lines[-1], recent=tuple(lines[1:]),
                     last_seq=12)
    return LogScan(path=path, lines=20, matches=(match,) if count else ())


def _host(name: str, *scans: LogScan) -> object:
    return host_report(name, readings=node(logs=scans, hostname=name))


def test_grep_folds_hosts_with_identical_output() -> None:
    report = sweep(_host("gpu01", _scan()), _host("gpu02", _scan()), _host("gpu03", _scan(count=0)),
                   _host("gpu04", LogScan(path="~/s.log", status=LogStatus.UNREADABLE, error="permission denied")),
                   host_report("gpu05", status=HostStatus.UNREACHABLE))
    rule = "-" * len("gpu03 (1 host)")
    assert render_grep(report, "kv").splitlines() == [
        "--------------------", "gpu[01-02] (2 hosts)", "--------------------",
        "  ~/s.log: 3 matching lines", "    line 2 KV cache pool is full", "    line 9 KV cache pool is full",
        "    line 12 KV cache pool is full",
        rule, "gpu03 (1 host)", rule, "  ~/s.log: no match in 20 lines",
        rule, "gpu04 (1 host)", rule, "  ~/s.log: unreadable (permission denied)",
        rule, "gpu05 (1 host)", rule, "  unreachable: could not connect: connection refused"]
    assert grep_exit_code(report, "kv") == 2
    assert grep_exit_code(sweep(_host("a", _scan()), _host("b", _scan(count=0))), "kv") == 0
    assert grep_exit_code(sweep(_host("a", _scan(count=0))), "kv") == 1
    doc = json.loads(grep_document(sweep(_host("a", _scan())), "kv"))
    assert doc["hosts"][0]["logs"][0]["matches"][0] == {
        "key": {}, "count": 3, "older": 0, "first": "line 2 KV cache pool is full",
        "lines": ["line 9 KV cache pool is full", "line 12 KV cache pool is full"]}


def test_grep_says_when_a_gap_was_left_out() -> None:
    lines = [LogLine(seq=i, text=f"l{i}") for i in (1, 50, 60)]
    scan = LogScan(path="x", lines=60, cut=True, matches=(LogMatch(
        signature="s", count=40, older=2, first=lines[0], last=lines[-1], recent=tuple(lines[1:]), last_seq=60),))
    assert render_grep(sweep(_host("a", scan)), "s").splitlines()[3:] == [
        "  x: 40 matching lines, 2 before the time window (only its tail was read)", "    l1", "    ...", "    l50",
        "    l60"]


def test_signatures_lists_every_kind_of_entry() -> None:
    text = render_signatures(Registry(builtin_packs()).packs.values())
    assert text.startswith("sglang (built-in; log files): SGLang server")
    assert "  echo     sglang_server_args" in text
    assert "  expect   flashinfer_autotuner_ran    when sglang_server_args: disable_flashinfer_autotune=False, " \
           "after sglang_ready: expect flashinfer_autotune_start or" in text
    assert "xid (built-in; the kernel log (@kernel), last 24 h)" in text
    assert " exclude /nan_detection/ - the model produced NaN" in text
