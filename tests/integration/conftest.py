"""The ``sshd_cluster`` fixture: a real OpenSSH ``sshd`` on loopback playing simulated GPU nodes.

The cluster itself lives in :mod:`loopback` (so the benchmarks and an installed package can
start it too); this file only starts it once per test session and skips when OpenSSH is not installed.
The names the tests use are re-exported from here.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from loopback import (
    EXTRA_HEALTHY_HOSTS,
    NO_NVIDIA_SMI,
    NO_PYTHON,
    SCENARIO_ADDRESSES,
    SshdCluster,
    SshdUnavailable,
    extra_address,
    running_cluster,
)

__all__ = ["EXTRA_HEALTHY_HOSTS", "NO_NVIDIA_SMI", "NO_PYTHON", "SCENARIO_ADDRESSES", "SshdCluster",
           "SshdUnavailable", "extra_address", "running_cluster", "sshd_cluster"]


@pytest.fixture(scope="session")
def sshd_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdCluster]:
    """The loopback cluster, started once for the test session (skips when OpenSSH is not installed)."""
    try:
        with running_cluster(tmp_path_factory.mktemp("sshd_cluster")) as cluster:
            yield cluster
    except SshdUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture()
def silent_listener() -> Iterator[int]:
    """A TCP port that accepts and never says a word: a hung sshd or a black-holed host."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()
