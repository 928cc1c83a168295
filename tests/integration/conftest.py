"""The ``sshd_cluster`` fixture: a real OpenSSH ``sshd`` on loopback playing simulated GPU nodes.

The cluster itself lives in :mod:`loopback` (so the benchmarks and an installed package can
start it too); this file only starts it once per test session and skips when OpenSSH is not installed.
The names the tests use are re-exported from here.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

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


class Relay:
    """A TCP relay on loopback to ``target`` (a real sshd): it passes bytes both ways until :meth:`blackhole`,
    after which it keeps every connection open and passes nothing, as a node that froze or a network that
    drops every packet (no reset, no FIN)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.port = int(self.server.getsockname()[1])
        self.black = threading.Event()
        self.stop = threading.Event()
        self.held: list[socket.socket] = []
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def blackhole(self) -> None:
        self.black.set()

    def _accept(self) -> None:
        self.server.settimeout(0.1)
        while not self.stop.is_set():
            try:
                client = self.server.accept()[0]
            except OSError:
                continue
            upstream = socket.create_connection(self.target)
            self.held += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                thread = threading.Thread(target=self._pass, args=(a, b), daemon=True)
                thread.start()
                self.threads.append(thread)

    def _pass(self, source: socket.socket, sink: socket.socket) -> None:
        source.settimeout(0.1)
        while not self.stop.is_set():
            if self.black.is_set():
                time.sleep(0.1)  # read nothing, send nothing: the bytes wait in the kernel's buffers
                continue
            try:
                data = source.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not data:
                sink.shutdown(socket.SHUT_WR)
                return
            sink.sendall(data)

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()
        for conn in self.held:
            conn.close()
        self.server.close()


@pytest.fixture()
def relay_to_sshd(sshd_cluster: SshdCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Relay, Path]]:
    """A :class:`Relay` to the cluster's healthy node, and a known_hosts file that trusts the node's key at the
    relay's address and port."""
    relay = Relay(("127.0.0.2", sshd_cluster.port))
    key = " ".join(sshd_cluster.known_hosts.read_text().split("\n", 1)[0].split()[1:3])
    known = tmp_path_factory.mktemp("relay") / "known_hosts"
    known.write_text(f"[127.0.0.1]:{relay.port} {key}\n")
    yield relay, known
    relay.close()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A module whose tests share a module-scoped fixture (a venv, a wheel, a cluster of its own) runs on one
    worker of a parallel run (an ``xdist_group`` of its name, pyproject.toml's --dist loadgroup): spread over
    four, each worker would build the fixture again. A test already in a group keeps it."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        defs = [d for ds in (info.name2fixturedefs.values() if info else ()) for d in ds]
        if item.get_closest_marker("xdist_group") is None and any(d.scope == "module" for d in defs):
            module = getattr(item, "module", None)
            item.add_marker(pytest.mark.xdist_group(module.__name__ if module else item.nodeid))
