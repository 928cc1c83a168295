"""``gpudiag exporter`` against the loopback cluster, with a node whose nvidia-smi hangs: /metrics (served by
prometheus_client) answers at once from the last finished refresh, before the first refresh too, and shows
the fleet's series once a refresh has finished; the hung node shows as down. ``--demo`` serves the demo cluster's
metrics."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from loopback import interrupt

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(url: str) -> tuple[float, str]:
    started = time.monotonic()
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    return time.monotonic() - started, text


def scrape_until(port: int, proc: subprocess.Popen[bytes], log: Path, marker: str) -> str:
    """Scrape /metrics until it holds ``marker`` (60 s at most, and only while the exporter runs)."""
    text, deadline = "", time.monotonic() + 60
    while marker not in text:
        assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
        try:
            _, text = scrape(f"http://127.0.0.1:{port}/metrics")
        except OSError:  # not listening yet
            pass
        time.sleep(0.2)
    return text


def test_exporter_answers_from_the_last_refresh(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(f"{sshd_cluster.inventory_defaults()}hosts:\n" + "".join(
        f"  {s}: {{address: {sshd_cluster.address_of(s)}}}\n" for s in ("healthy", "case_study", "hang")))
    port = _free_port()
    log = tmp_path / "exporter.log"
    url = f"http://127.0.0.1:{port}/metrics"
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "gpudiag", "exporter", "-i", str(inventory),
                                 "--listen", f"127.0.0.1:{port}", "--every", "1", "--samples", "1", "--interval",
                                 "0", "--timeout", "4"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
    try:
        latencies, text = [], ""
        deadline = time.monotonic() + 60
        while 'gpudiag_host_up{host="healthy"} 1' not in text:
            assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
            try:
                latency, text = scrape(url)
            except OSError:  # not listening yet
                time.sleep(0.2)
                continue
            latencies.append(latency)
            time.sleep(0.2)
        assert len(latencies) > 3 and max(latencies) < 2.0  # the hung node (4 s deadline) never held a scrape
        lines = text.splitlines()
        # The hung node answered (its nvidia-smi was killed at its bound): up, with a critical finding.
        assert 'gpudiag_host_up{host="hang"} 1' in lines
        assert any(line.startswith('gpudiag_finding{host="hang",') and 'code="NVIDIA_SMI_HUNG"' in line
                   for line in lines)
        assert any(line.startswith('gpudiag_finding{host="case_study",gpu="0",code="BUSY_LOW_POWER"') for line in lines)
        assert any(line.startswith('gpudiag_gpu_power_watts{host="healthy",gpu="0"') for line in lines)
        assert "# TYPE gpudiag_gpu_utilization_ratio gauge" in lines
    finally:
        interrupt(proc)
    assert sshd_cluster.hung_stub_ended("hang", wait_s=10)


def test_exporter_serves_the_demo_cluster(tmp_path: Path) -> None:
    port = _free_port()
    log = tmp_path / "exporter.log"
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "gpudiag", "exporter", "--demo", "--listen",
                                 f"127.0.0.1:{port}", "--every", "1", "--samples", "1", "--interval", "0"],
                                cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
    try:
        text = scrape_until(port, proc, log, 'gpudiag_host_up{host="train-h200-01"} 1')
        lines = text.splitlines()
        assert 'gpudiag_host_up{host="train-h200-05"} 0' in lines  # the demo's unreachable node
        # its logs: entry is a mapping ({path: "@kernel", since_hours: 48}): read, not failed (issue 19)
        assert 'gpudiag_host_up{host="spare-h200-03"} 1' in lines
        assert not [line for line in lines if 'status="error"' in line]
        assert any(line.startswith("gpudiag_exporter_refreshes_total ") for line in lines)
    finally:
        interrupt(proc)
    assert proc.returncode == 130, log.read_text()
    said = log.read_text()
    # where it listens and how many hosts, on stderr, as it starts
    assert said.startswith(f"gpudiag exporter: serving http://127.0.0.1:{port}/metrics, 6 hosts, every 1 s\n"), said
    assert said.endswith("gpudiag: exporter stopped\n")


def test_exporter_reads_a_host_whatever_form_its_logs_take(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from test_watch_sshd import LOG_FORMS, log_forms_hosts

    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(f"{sshd_cluster.inventory_defaults()}hosts:\n{log_forms_hosts(sshd_cluster)}")
    port = _free_port()
    log = tmp_path / "exporter.log"
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "gpudiag", "exporter", "-i", str(inventory), "--listen",
                                 f"127.0.0.1:{port}", "--every", "1", "--samples", "1", "--interval", "0"],
                                cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
    try:
        # two refreshes: a host that fails, fails on every one
        text = scrape_until(port, proc, log, "gpudiag_exporter_refreshes_total 2")
        lines = text.splitlines()
        for name in LOG_FORMS:
            assert f'gpudiag_host_up{{host="{name}"}} 1' in lines, text
        assert not [line for line in lines if 'status="error"' in line]
    finally:
        interrupt(proc)
    assert log.read_text().startswith(f"gpudiag exporter: serving http://127.0.0.1:{port}/metrics, 5 hosts, every 1 s")
