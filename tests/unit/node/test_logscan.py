"""The node-side log scanner (collectors/gpudiag_node/logscan.py) on files in tmp_path: tail, rotations, gzip,
junk, windows, configuration echoes, missing and unreadable logs, the kernel log's fallbacks, and the
bundle carrying it all."""

from __future__ import annotations

import ast
import gzip
import os
import time
from pathlib import Path

import pytest

from gpudiag.collect.bundle import NODE_DIR
from gpudiag_node import logscan as ls

SERVER_ARGS = ("[2026-11-30 06:10:02] server_args=ServerArgs(model_path='/m', disable_flashinfer_autotune=False, "
               "enable_nan_detection=False)")
AUTOTUNE = {"name": "naive_autotune", "regex": "autotun", "ignore_case": True}
ECHO = {"name": "sglang_server_args", "regex": r"server_args=ServerArgs\("}


def source(path: Path | str, *signatures: dict[str, object], **extra: object) -> dict[str, object]:
    return {"path": str(path), "signatures": list(signatures), "echoes": [ECHO], **extra}


def test_a_config_echo_is_configuration_never_a_match(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(f"{SERVER_ARGS}\n[2026-11-30 06:11:00] INFO start\n[2026-11-30 06:12:00] [Autotuner]: go\n")
    out = ls.scan(source(log, AUTOTUNE))
    assert out["status"] == "ok" and out["lines"] == 3
    match = out["matches"]["naive_autotune"]
    assert (match["count"], match["first"]["seq"], match["last_seq"]) == (1, 3, 3)  # not the server_args line
    assert out["echoes"]["sglang_server_args"] == {"count": 1, "seq": 1, "text": SERVER_ARGS,
                                                  "start": SERVER_ARGS.index("(") + 1}


def test_first_last_and_recent_lines_are_bounded(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("".join(f"line {i} KV cache pool is full {'x' * 1000}\n" for i in range(1, 51)))
    out = ls.scan(source(log, {"name": "kv", "regex": "KV cache pool is full"}, keep=2))
    match = out["matches"]["kv"]
    assert match["count"] == 50
    assert match["first"]["text"].startswith("line 1 ") and match["last"]["text"].startswith("line 50 ")
    assert [x["seq"] for x in match["recent"]] == [49, 50]
    assert len(match["last"]["text"]) == ls.LINE_CHARS + 3  # cut, with "..."


def test_named_groups_exclude_and_group_by(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_text("NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.\n"
                   "NVRM: Xid (PCI:0000:2b:00): 79, again\n"
                   "NVRM: Xid (PCI:0000:3b:00): 63, Row Remapper\n"
                   "NVRM: Xid (PCI:0000:3b:00): 63, test harness - ignore\n")
    xid = {"name": "xid", "regex": r"NVRM: Xid \(PCI:(?P<pci>[0-9a-f:]+)\): (?P<xid>\d+)", "exclude": "ignore",
           "group_by": ["pci", "xid"]}
    match = ls.scan(source(log, xid))["matches"]["xid"]
    assert match["count"] == 3 and match["values"] == {"pci": "0000:3b:00", "xid": "63"}
    assert [(k["key"], k["count"], k["first"]["seq"], k["last"]["seq"]) for k in match["keys"]] == [
        (["0000:2b:00", "79"], 2, 1, 2), (["0000:3b:00", "63"], 1, 3, 3)]


def test_tilde_expands_on_the_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "glm5.log").write_text("The server is fired up and ready to roll!\n")
    out = ls.scan(source("~/glm5.log", {"name": "ready", "regex": "ready to roll"}))
    assert out["resolved"] == str(tmp_path / "glm5.log") and out["matches"]["ready"]["count"] == 1


def test_rotations_and_gzip_are_read_oldest_first(tmp_path: Path) -> None:
    log = tmp_path / "syslog"
    log.write_text("now: Xid 3\n")
    (tmp_path / "syslog.1").write_text("yesterday: Xid 2\n")
    with gzip.open(tmp_path / "syslog.2.gz", "wt") as f:
        f.write("two days ago: Xid 1\n")
    (tmp_path / "syslog.10.gz").write_bytes(b"not read: past max_files\n")
    out = ls.scan(source(log, {"name": "xid", "regex": r"Xid (?P<n>\d)"}, max_files=3))
    assert out["files"] == [str(tmp_path / "syslog.2.gz"), str(tmp_path / "syslog.1"), str(log)]
    match = out["matches"]["xid"]
    assert (match["first"]["text"], match["last"]["text"], match["count"]) == (
        "two days ago: Xid 1", "now: Xid 3", 3)
    assert ls.rotations(str(log))[:3] == [str(tmp_path / n) for n in ("syslog.1", "syslog.2.gz", "syslog.10.gz")]


def test_a_gzip_log_named_directly_is_decompressed(tmp_path: Path) -> None:
    log = tmp_path / "old.log.gz"
    with gzip.open(log, "wt") as f:
        f.write("a\nNCCL INFO NCCL_P2P_DISABLE set by environment to 1\n")
    assert ls.scan(source(log, {"name": "p2p", "regex": "NCCL_P2P_DISABLE"}))["matches"]["p2p"]["count"] == 1


def test_only_the_tail_is_scanned_from_a_line_start(tmp_path: Path) -> None:
    log = tmp_path / "huge.log"
    log.write_text("".join(f"{i:06d} match\n" for i in range(100_000)))  # 1.3 MB
    (tmp_path / "huge.log.1").write_text("older match\n")
    out = ls.scan(source(log, {"name": "m", "regex": "match"}, tail_bytes=13 * 1000 + 5))
    match = out["matches"]["m"]
    assert out["cut"] is True and out["files"] == [str(log)]  # the rotation is older than the tail: not read
    assert match["count"] == 1000 and match["first"]["text"] == "099000 match"  # the partial line was dropped
    assert out["bytes"] <= 13 * 1000 + 5


def test_binary_junk_invalid_utf8_and_endless_lines_do_not_break_it(tmp_path: Path) -> None:
    log = tmp_path / "junk.log"
    log.write_bytes(b"\xff\xfe\x00\x01binary\x00 CUDA out of memory \xc3\x28\r\n"
                    + b"A" * (200 * 1024) + b" CUDA out of memory at the end of a 200 KiB line\n"
                    + bytes(range(256)) + b"\nok CUDA out of memory\n")
    out = ls.scan(source(log, {"name": "oom", "regex": "CUDA out of memory"}))
    match = out["matches"]["oom"]
    assert out["status"] == "ok" and out["lines"] == 5  # bytes(range(256)) holds a newline
    assert match["count"] == 2  # the long line is matched on its first 64 KiB only
    assert match["first"]["text"] == "\ufffd\ufffd\x01binary CUDA out of memory \ufffd("
    assert match["last"]["text"] == "ok CUDA out of memory"


def test_the_time_window_counts_older_lines_apart(tmp_path: Path) -> None:
    now = time.mktime((2026, 11, 30, 12, 0, 0, 0, 0, -1))
    log = tmp_path / "kern.log"
    log.write_text("Nov 26 09:00:00 h kernel: NVRM: Xid (PCI:0000:2b:00): 79, off the bus\n"
                   "2026-11-30T11:00:00+00:00 h kernel: NVRM: Xid (PCI:0000:2b:00): 63, remap\n"
                   "no time at all: NVRM: Xid (PCI:0000:2b:00): 31, fault\n"
                   "Nov 30 11:30:00 h kernel: NVRM: Xid (PCI:0000:2b:00): 13, fault\n")
    out = ls.scan(source(log, {"name": "xid", "regex": r"Xid \(PCI:[0-9a-f:]+\): (?P<xid>\d+)"}, since_hours=24),
                  now=now)
    match = out["matches"]["xid"]
    assert (match["count"], match["older"], match["first"]["seq"], match["last_seq"]) == (3, 1, 2, 4)


@pytest.mark.parametrize(("line", "expected"), [
    ("2026-11-30T11:00:00+0000 host kernel: x", "2026-11-30 11:00:00"),
    ("2026-11-30T13:00:00+02:00 host kernel: x", "2026-11-30 11:00:00"),
    ("[2026-11-30 11:00:00 TP0] Decode batch.", "2026-11-30 11:00:00"),
    ("Nov 30 11:00:00 host kernel: x", "2026-11-30 11:00:00"),
    ("Dec 31 11:00:00 host kernel: x", "2025-12-31 11:00:00"),  # a syslog line from last year
])
def test_line_times(line: str, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        now = time.mktime((2026, 11, 30, 12, 0, 0, 0, 0, -1))
        when = ls._line_time(line, now)
        assert when is not None and time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(when)) == expected
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_dmesg_times_come_from_the_uptime() -> None:
    assert ls._line_time("[  120.500000] NVRM: Xid", 10_000.0, boot_time=9_000.0) == 9_120.0
    assert ls._line_time("[  120.500000] NVRM: Xid", 10_000.0) is None


def test_a_missing_log_a_directory_and_a_fifo_are_statuses(tmp_path: Path) -> None:
    assert ls.scan(source(tmp_path / "nope.log"))["status"] == "missing"
    assert (ls.scan(source(tmp_path))["status"], ls.scan(source(tmp_path))["error"]) == ("unreadable", "is a directory")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert ls.scan(source(fifo))["error"] == "a FIFO, not a log file: reading it would block"  # it did not block


def test_permission_denied_is_unreadable(tmp_path: Path) -> None:
    assert ls._status_of(PermissionError(13, "Permission denied")) == ("unreadable", "permission denied")
    if os.geteuid() == 0:
        pytest.skip("root reads any file; the mapping above is what a user sees")
    log = tmp_path / "secret.log"
    log.write_text("x\n")
    log.chmod(0)
    assert ls.scan(source(log))["status"] == "unreadable"


def test_a_pattern_the_node_refuses_is_an_error_of_that_log_only(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("x\n")
    out = ls.scan(source(tmp_path / "a.log", {"name": "bad", "regex": "(unclosed"}))
    assert out["status"] == "error" and out["error"].startswith("error: missing )")


def test_back_references_and_clashing_groups_skip_the_joined_prefilter(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("abab\nxyxy\nid=7 id=7\n")
    sigs = [{"name": "ab", "regex": r"(ab)\1"}, {"name": "xy", "regex": r"(xy)\1"},
            {"name": "n1", "regex": r"id=(?P<n>\d)"}, {"name": "n2", "regex": r"id=(?P<n>\d) id=(?P=n)"}]
    out = ls.scan(source(log, *sigs))
    assert {k: v["count"] for k, v in out["matches"].items()} == {"ab": 1, "xy": 1, "n1": 1, "n2": 1}
    assert ls._prefilter([(s["regex"], False) for s in sigs]) is None


def test_the_kernel_log_falls_back_from_a_blind_journal_to_dmesg(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def run(argv: list[str], timeout_s: float) -> tuple[int | None, bytes, str]:
        calls.append(argv)
        if argv[0].endswith("journalctl"):
            return 0, b"-- No entries --\n", ("Hint: You are currently not seeing messages from other users and "
                                               "the system.")
        return 0, b"[ 5000.000000] NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.\n", ""

    monkeypatch.setattr(ls.proc, "find_tool", lambda name, extra_dirs=(): f"/usr/bin/{name}")
    monkeypatch.setattr(ls, "_run", run)
    out = ls.scan({"path": "@kernel", "signatures": [{"name": "xid", "regex": "Xid"}]}, now=time.time())
    assert [c[0] for c in calls] == ["/usr/bin/journalctl", "/usr/bin/dmesg"]
    assert "--since" in calls[0] and "-q" not in calls[0]
    assert (out["status"], out["source"], out["matches"]["xid"]["count"]) == ("ok", "dmesg", 1)


def test_a_kernel_log_nobody_may_read_is_unreadable(monkeypatch: pytest.MonkeyPatch) -> None:
    def run(argv: list[str], timeout_s: float) -> tuple[int | None, bytes, str]:
        if argv[0].endswith("journalctl"):
            return 1, b"", "No journal files were found."
        return 1, b"", "dmesg: read kernel buffer failed: Operation not permitted"

    monkeypatch.setattr(ls.proc, "find_tool", lambda name, extra_dirs=(): f"/usr/bin/{name}")
    monkeypatch.setattr(ls, "_run", run)
    out = ls.scan({"path": "@kernel", "signatures": []})
    assert out["status"] == "unreadable"
    assert out["error"] == ("journalctl: No journal files were found.; "
                            "dmesg: dmesg: read kernel buffer failed: Operation not permitted")


@pytest.mark.parametrize("module", ["logscan.py", "context.py"])
def test_node_modules_stay_python_36(module: str) -> None:
    text = (NODE_DIR / module).read_text()
    ast.parse(text, feature_version=(3, 6))
    assert "from __future__" not in text and ":=" not in text
