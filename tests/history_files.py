"""History files for the tests of a broken ``--history``: one recorded with enough rows to span many pages,
and the same with one page overwritten (SQLite then reads "database disk image is malformed")."""

from __future__ import annotations

from pathlib import Path

from gpudiag.audit.history import History
from gpudiag.model import Finding, GpuReading, HostReport, HostStatus, NodeReadings, Severity, SweepReport

PAGE_BYTES = 4096  # SQLite's default page size


def recorded_history(path: Path, hosts: int = 300) -> Path:
    """A history of one run of ``hosts`` hosts, each with a GPU and a finding: a few dozen pages."""
    report = SweepReport(started_at="2025-06-01T12:00:00Z", duration_s=1.0, hosts=tuple(
        HostReport(host=f"gpu{i:04d}", address=None, status=HostStatus.OK,
                   readings=NodeReadings(gpus=(GpuReading(index=0, uuid=f"GPU-{i:04d}"),)),
                   findings=(Finding(code="ECC_UNCORRECTED", severity=Severity.CRITICAL, host=f"gpu{i:04d}", gpu=0,
                                     summary="2 uncorrected ECC errors"),))
        for i in range(hosts)))
    with History.open(path) as history:
        history.record(report, now_s=1_748_779_200.0)
        history.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the file itself
    return path


def damage_a_page(path: Path, page: int = 5) -> Path:
    """Overwrite page ``page`` (counted from 1) with garbage, as a bad disk block would."""
    with open(path, "r+b") as file:
        file.seek((page - 1) * PAGE_BYTES)
        file.write(b"\xa5" * PAGE_BYTES)
    return path
