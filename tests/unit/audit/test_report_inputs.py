"""``gpudiag merge``'s inputs within bounds (issue 30, fault matrix #5): a FIFO hung, /dev/zero grew without
end, a 1 GiB shard took 7.35 GB, deep nesting was a traceback, and the messages passed raw ``[Errno 2]`` and
JSON-decoder text. Each is one line in words naming the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from builders import host_report, sweep

from gpudiag.audit.inputs import InputError, read_bytes, read_report
from gpudiag.report.json_report import render_json


def refused(path: Path, why: str) -> None:
    with pytest.raises(InputError) as caught:
        read_report(path)
    assert str(caught.value) == f"{path}: {why}" and "Errno" not in str(caught.value)


def test_what_is_not_a_report_is_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    refused(fifo, "not a regular file, not a report of gpudiag's")
    refused(Path("/dev/zero"), "not a regular file, not a report of gpudiag's")
    refused(tmp_path, "a folder, not a report of gpudiag's")  # was a traceback: [Errno 21] Is a directory: 3
    refused(tmp_path / "missing.json", "cannot read it (no such file or directory)")
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    refused(tmp_path / "deep.json", "not a JSON document gpudiag reads (nested too deeply, or a huge number)")
    (tmp_path / "latin.json").write_bytes(b'{"a": "\xe9"}')
    refused(tmp_path / "latin.json", "not UTF-8 text (byte 7)")
    (tmp_path / "cut.json").write_text('{"schema": "gpudiag.sweep/3", "hosts": [')
    refused(tmp_path / "cut.json", "not JSON (line 1, column 41)")
    (tmp_path / "other.json").write_text('{"hello": 1}')
    refused(tmp_path / "other.json", "not a gpudiag sweep report (gpudiag sweep --format json)")
    (tmp_path / "cut_host.json").write_text('{"schema": "gpudiag.sweep/3", "hosts": [{"x": 1}]}')
    refused(tmp_path / "cut_host.json", "a gpudiag report this version cannot read (malformed gpudiag.sweep/4 "
                                        "document: missing key 'started_at')")  # not "ValueError: malformed ..."


def test_a_file_past_the_bound_is_not_read_whole(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2048)
    with pytest.raises(InputError, match="larger than 1 KiB; not a report of gpudiag.s"):
        read_bytes(big, limit=1024)


def test_a_report_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "shard.json"
    path.write_bytes(b"\xef\xbb\xbf" + render_json(sweep(host_report("gpu01"))).encode())  # a BOM is let be
    assert [h.host for h in read_report(path).hosts] == ["gpu01"]
