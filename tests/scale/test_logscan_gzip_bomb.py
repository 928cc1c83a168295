"""A gzip bomb among the rotations (issue 23 #11): with ``--log-tail-mib 1024`` a ``.1.gz`` of a few hundred KiB
that inflates to 1 GiB of one short line used the whole scan budget, and the live log got 0 lines scanned. A
rotation now inflates to at most MAX_INFLATE_RATIO times its compressed size, and the rotations get only a
share of the time left (ROTATIONS_TIME_SHARE): the live log is always read. A real bomb, built in tmp_path:
one gzip member of 16 MiB written 64 times (a multi-member gzip file is one stream to gunzip and to GzipFile)."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest

from gpudiag_node import logscan as ls

MIB = 1024 * 1024


def gzip_bomb(path: Path, inflated_mib: int = 1024) -> Path:
    member = gzip.compress(b"a\n" * (8 * MIB), compresslevel=9)  # 16 MiB of one short line
    with open(path, "wb") as out:
        for _ in range(inflated_mib // 16):
            out.write(member)
    return path


@pytest.mark.scale
def test_a_gzip_bomb_rotation_leaves_the_live_log_its_lines(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"".join(b"2025-06-01T12:00:%02dZ worker %d: Xid 79 fell off the bus\n" % (i % 60, i)
                             for i in range(500)))
    bomb = gzip_bomb(tmp_path / "server.log.1.gz")
    assert bomb.stat().st_size < 4 * MIB  # and 1 GiB inflated
    source = {"path": str(log), "tail_bytes": 1024 * MIB, "signatures": [{"name": "xid", "regex": "Xid 79"}],
              "echoes": [], "_deadline": time.monotonic() + 7.0}  # the collector's scan budget
    out = ls.scan_file(source)
    assert out["matches"]["xid"]["count"] == 500, out["notes"]  # every line of the live log: before, 0
    assert out["files"][-1] == str(log)
    assert any("gzip bomb" in note or "share of the scan's time" in note for note in out["notes"]), out["notes"]
    assert out["cut"]


def test_an_ordinary_rotation_inflates_in_full(tmp_path: Path) -> None:
    """Text logs inflate 5-20 times: far below the bound, so a rotation is read as before, oldest first."""
    log = tmp_path / "server.log"
    log.write_bytes(b"Xid 79 live\n")
    lines = b"".join(b"2025-06-01T11:%02d:00Z step %d loss 1.%03d Xid 79 rotated\n" % (i % 60, i, i % 1000)
                     for i in range(20_000))
    (tmp_path / "server.log.1.gz").write_bytes(gzip.compress(lines))
    out = ls.scan_file({"path": str(log), "signatures": [{"name": "xid", "regex": "Xid 79"}], "echoes": []})
    assert out["matches"]["xid"]["count"] == 20_001 and not out["cut"] and out["notes"] == []
    assert out["matches"]["xid"]["last"]["text"] == "Xid 79 live"
