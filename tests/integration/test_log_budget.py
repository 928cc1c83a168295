"""A slow log scan never costs the GPU data, over a real OpenSSH sshd (issue 14, item 6): a FIFO among a
log's rotations (nobody writes it: opening it would block), a 1 GiB tail and a pattern that never finishes
each cost their log a "cut" or LOG_UNREADABLE, and the host keeps its GPUs within its deadline."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from pathlib import Path

import pytest

from gpudiag.checks import CheckSettings
from gpudiag.logs import LogOptions
from gpudiag.model import HostStatus
from gpudiag.sweep.runner import SweepOptions, sweep
from gpudiag.transport.ssh import SshOptions, SshTransport

pytestmark = pytest.mark.integration


def test_a_blocking_huge_or_slow_log_leaves_the_host_its_gpus(  # type: ignore[no-untyped-def]
        sshd_cluster, tmp_path: Path) -> None:
    blocking = tmp_path / "server.log"
    blocking.write_text("Xid 1\n")
    os.mkfifo(tmp_path / "server.log.1")
    huge = tmp_path / "huge.log"
    with open(huge, "wb") as f:
        f.truncate(1024 * 1024 * 1024)  # sparse: 1 GiB of NULs, no line end, no disk
    slow = tmp_path / "slow.log"
    slow.write_text("x" * 65536 + "\n")  # one line as long as the scan matches (MAX_LINE_BYTES)
    # Passes the pack lint (one quantifier, nothing overlapping: the exponential forms are refused at load
    # now), and still costs seconds on that line: a search for it is quadratic in the line's length (about
    # 14 s of CPU here), far beyond the log's share of the deadline.
    pack = tmp_path / "slow.yaml"
    pack.write_text("pack: slow\nsignatures:\n  - {name: slow, regex: '\\w*=', severity: warning}\n")
    (host,) = sshd_cluster.hosts("healthy")
    host = dataclasses.replace(host, logs=(str(blocking), str(huge), str(slow)))
    options = SweepOptions(samples=2, interval_s=0.1, deadline_s=8.0, settings=CheckSettings(),
                           logs=LogOptions(pack_files=(str(pack),), tail_mib=1024.0))
    transport = SshTransport(SshOptions(connect_timeout_s=5.0, ssh_config=[]))
    began = time.monotonic()
    (report,) = asyncio.run(sweep([host], transport, options)).hosts
    assert time.monotonic() - began < 30.0
    assert report.status is HostStatus.OK, report.error
    assert report.readings is not None and len(report.gpus) > 0
    scans = {scan.path: scan for scan in report.readings.logs}
    assert any("FIFO" in note for note in scans[str(blocking)].notes)
    assert scans[str(huge)].cut or scans[str(huge)].bytes_scanned == 1024 * 1024 * 1024  # streamed, in its share
    said = " ".join([scans[str(slow)].error or "", *scans[str(slow)].notes])
    assert scans[str(slow)].cut and "share of the" in said  # stopped, or never reached, within the share
