"""`gpudiag watch` and `gpudiag exporter` under an open-file limit that cannot hold one kept connection per host
(issue 23, item 5; there ``ulimit -n 256`` with 300 hosts, here 48 with 50): the connections that fit are kept,
one line says what does not, the other hosts connect afresh each refresh, every host answers every refresh,
and /metrics keeps answering. Before, watch died of EMFILE (a traceback) and the exporter's scrapes hung.

The limit is set in the child alone (``preexec_fn``), hard and soft, so it cannot be raised. The waits are
bounded and generous; nothing here asserts a timing.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from loopback import interrupt

# Many SSH handshakes (or a browser) at once: one worker runs the "bursts" group, one test after another
# (pyproject.toml: --dist loadgroup), so no two bursts share the two cores and read as timeouts.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("bursts")]
REPO = Path(__file__).resolve().parents[2]
HOSTS = 50
OPEN_FILES = 48  # hard and soft: less than one descriptor per host beside what the process itself holds
SCRAPE_TIMEOUT_S = 5.0  # a scrape that gets no answer in this long is one that hangs


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))


def _inventory(cluster, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(cluster.inventory_defaults() + "hosts:\n" + "".join(
        f"  h{i:02d}: {{address: {a}}}\n" for i, a in enumerate(cluster.extra_addresses[:HOSTS])))
    return inventory


def test_watch_keeps_what_fits_and_reads_every_host(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    done = subprocess.run([sys.executable, "-m", "gpudiag", "watch", "-i", str(_inventory(sshd_cluster, tmp_path)),
                           "--count", "3", "--every", "0.5", "--samples", "1", "--interval", "0", "--format", "json"],
                          capture_output=True, text=True, cwd=REPO, timeout=600, preexec_fn=_limited)
    assert "Traceback" not in done.stderr and "Too many open files" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]
    (note,) = [line for line in done.stderr.splitlines() if "open-file limit" in line]
    assert f"of {HOSTS} connections open" in note and "ulimit -n" in note
    refreshes = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(refreshes) == 3
    for doc in refreshes:
        assert [h["status"] for h in doc["hosts"]] == ["ok"] * HOSTS


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT_S) as answer:
        return str(answer.read().decode())


def test_the_exporter_answers_every_scrape_and_reads_every_host(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("prometheus_client", reason="prometheus_client not installed: pip install 'gpudiag[exporter]'")
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    log = tmp_path / "exporter.log"
    with log.open("w") as err:
        inventory = _inventory(sshd_cluster, tmp_path)
        proc = subprocess.Popen([sys.executable, "-m", "gpudiag", "exporter", "-i", str(inventory), "--listen",
                                 f"127.0.0.1:{port}", "--every", "0.5", "--samples", "1", "--interval", "0"],
                                cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, preexec_fn=_limited)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        text, scrapes, deadline = "", 0, time.monotonic() + 300
        while "gpudiag_exporter_refreshes 3.0" not in text:  # three refreshes: the kept ones reused twice
            assert time.monotonic() < deadline and proc.poll() is None, log.read_text()[-3000:]
            try:
                text = _scrape(url)
            except urllib.error.URLError as exc:
                assert isinstance(exc.reason, ConnectionRefusedError), exc  # only: not listening yet
                time.sleep(0.2)
                continue
            scrapes += 1  # a scrape that hung raised TimeoutError above, and failed the test
            time.sleep(0.2)
        up = [line for line in text.splitlines() if line.startswith("gpudiag_host_up{")]
        assert len(up) == HOSTS and all(line.endswith(" 1.0") for line in up), [u for u in up if "1.0" not in u]
        assert scrapes > 3
    finally:
        interrupt(proc, wait_s=30)
    said = log.read_text()
    assert "Traceback" not in said and "Too many open files" not in said, said[-3000:]
    assert f"of {HOSTS} connections open" in said
