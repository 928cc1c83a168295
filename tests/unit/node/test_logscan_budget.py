"""The log scan has its own share of the deadline and its own memory bound (issue 14, item 6): the tail is
streamed, a compressed rotation's decompressed bytes are capped, a source that blocks or never ends (a FIFO
among the rotations, a character device, /proc/kmsg) is refused with its reason, and past its deadline the
scan stops and says "cut"; the GPU readings of the same round come back whatever the log costs."""

from __future__ import annotations

import os
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from gpudiag_node import logscan as ls


def _source(path: Path | str, **extra: object) -> dict[str, object]:
    return {"path": str(path), "signatures": [{"name": "xid", "regex": "Xid"}], "echoes": [], **extra}


@pytest.mark.scale
def test_the_tail_is_streamed_not_held(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    with open(log, "wb") as f:
        # ~68 MB in 200,000 lines of 341 bytes (tracemalloc's cost is per line: 2,000,000 short ones took 20 s)
        f.write(b"Xid 1\n" + ((b"ordinary line of the server's log " * 10 + b"\n") * 200_000) + b"Xid 2\n")
    tracemalloc.start()
    try:
        out = ls.scan(_source(log, tail_bytes=1024 * 1024 * 1024))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out["matches"]["xid"]["count"] == 2 and out["lines"] == 200_002
    assert peak < 16 * 1024 * 1024  # a chunk and a line, not the 68 MB tail


def test_a_fifo_among_the_rotations_does_not_block(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("Xid 1\n")
    os.mkfifo(tmp_path / "server.log.1")  # nobody writes it: opening it for reading would block
    # Whether the scan returns at all, not how fast (bench/ measures speed): a blocked open never would.
    found: list[dict[str, object]] = []
    scan = threading.Thread(target=lambda: found.append(ls.scan(_source(log))), daemon=True)
    scan.start()
    scan.join(600.0)
    assert found, "the scan blocked on the FIFO"
    out = found[0]
    assert out["status"] == "ok" and out["matches"]["xid"]["count"] == 1
    assert any("FIFO" in note for note in out["notes"])


def test_character_devices_and_proc_files_are_refused(tmp_path: Path) -> None:
    assert ls.scan(_source("/dev/zero"))["error"].startswith("a character device")
    kmsg = ls.scan(_source("/proc/kmsg"))
    assert kmsg["status"] in ("unreadable", "missing")
    if kmsg["status"] == "unreadable":
        assert "@kernel" in kmsg["error"]
    link = tmp_path / "kernel.log"
    link.symlink_to("/proc/version")
    assert "/proc" in ls.scan(_source(link))["error"]


def test_past_its_deadline_the_scan_stops_and_says_cut(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("Xid\n" * 100_000)
    out = ls.scan(_source(log, _deadline=time.monotonic() - 1.0))
    assert out["cut"] and out["status"] == "ok" and out["lines"] < 100_000
    assert any("deadline" in note for note in out["notes"])
