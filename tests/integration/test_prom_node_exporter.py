"""--prom-file as node_exporter reads it: a real ``prometheus-node-exporter`` (Debian's package), started here on
loopback with only its textfile collector pointed at a temp folder, scraped over HTTP; the series are found
with their labels (escaped ones too) and node_exporter reports no textfile error."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpudiag.audit.scheduled import AuditOptions, audit
from gpudiag.model import Finding, GpuReading, HostReport, HostStatus, NodeReadings, Severity, SweepReport
from gpudiag.model.request import OutputRequest
from gpudiag.report import OutputFormat

pytestmark = pytest.mark.integration
NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def node_exporter(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(metrics URL, textfile folder) of a node_exporter started for this test."""
    if NODE_EXPORTER is None:
        pytest.skip("node_exporter not installed: apt-get install prometheus-node-exporter")
    folder = tmp_path / "textfile"
    folder.mkdir()
    port = _free_port()
    log = (tmp_path / "node_exporter.log").open("wb")
    proc = subprocess.Popen([NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
                             "--collector.textfile", f"--collector.textfile.directory={folder}"],
                            stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                urllib.request.urlopen(url, timeout=2).read()
                break
            except OSError as exc:
                if proc.poll() is not None or time.monotonic() > deadline:
                    why = (tmp_path / "node_exporter.log").read_text()
                    raise RuntimeError(f"node_exporter did not start: {why}") from exc
                time.sleep(0.1)
        yield url, folder
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def report() -> SweepReport:
    gpus = (GpuReading(index=0, uuid="GPU-5f1b2c3d", sm="SM90", utilization_pct=100.0, memory_utilization_pct=40.0,
                       power_w=210.0, enforced_power_limit_w=700.0, default_power_limit_w=700.0,
                       sm_clock_mhz=1980.0, temperature_c=61.0, pcie_gen=5, pcie_width=16, ecc_uncorrected=0),
            GpuReading(index=1, uuid="GPU-77aa", sm="SM90", utilization_pct=None, power_w=None))
    odd = 'rack"7\\b\nx'  # a host name no one should use, but escaping must hold
    return SweepReport(started_at="2025-06-01T12:00:00Z", duration_s=3.25, hosts=(
        HostReport(host="gpu01", address=None, status=HostStatus.OK, readings=NodeReadings(gpus=gpus),
                   findings=(Finding(code="BUSY_LOW_POWER", severity=Severity.WARNING, host="gpu01", gpu=0,
                                     summary="busy at 30% of its limit"),)),
        HostReport(host=odd, address=None, status=HostStatus.UNREACHABLE, error="refused",
                   findings=(Finding(code="HOST_UNREACHABLE", severity=Severity.CRITICAL, host=odd, gpu=None,
                                     summary="unreachable: refused"),))))


def test_node_exporter_serves_the_prom_file(node_exporter: tuple[str, Path]) -> None:
    url, folder = node_exporter
    target = folder / "gpudiag.prom"
    outcome = audit(report(), OutputRequest(format=OutputFormat.TABLE, quiet=True), AuditOptions(prom_file=target))
    assert outcome.exit_code == 2 and outcome.stderr == ()
    assert sorted(p.name for p in folder.iterdir()) == ["gpudiag.prom"]  # the PATH.tmp.<pid> file is gone
    metrics = urllib.request.urlopen(url, timeout=5).read().decode()
    lines = metrics.splitlines()
    labels = 'gpu="0",host="gpu01",sm="SM90",uuid="GPU-5f1b2c3d"'
    for expected in (f"gpudiag_gpu_utilization_ratio{{{labels}}} 1",
                     f"gpudiag_gpu_power_watts{{{labels}}} 210",
                     f"gpudiag_gpu_power_limit_ratio{{{labels}}} 0.3",
                     f"gpudiag_gpu_sm_clock_hertz{{{labels}}} 1.98e+09",
                     f"gpudiag_gpu_temperature_celsius{{{labels}}} 61",
                     'gpudiag_finding{code="BUSY_LOW_POWER",gpu="0",host="gpu01",severity="warning"} 1',
                     'gpudiag_host_up{host="gpu01"} 1',
                     'gpudiag_host_up{host="rack\\"7\\\\b\\nx"} 0',
                     'gpudiag_finding{code="HOST_UNREACHABLE",gpu="",host="rack\\"7\\\\b\\nx",severity="critical"} 1',
                     "gpudiag_run_duration_seconds 3.25",
                     "gpudiag_run_timestamp_seconds 1.7487792e+09",
                     "node_textfile_scrape_error 0",
                     "# TYPE gpudiag_gpu_power_watts gauge"):
        assert expected in lines, expected
    assert not any(line.startswith("gpudiag_gpu_utilization_ratio") and 'gpu="1"' in line for line in lines)
