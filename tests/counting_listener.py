"""A TCP port that counts the connections it accepts: an SSH target that a run must not contact (the
checks made before any connection: the history, the output files)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest


@dataclass
class CountingListener:
    port: int
    accepted: int = 0


@pytest.fixture()
def listener() -> Iterator[CountingListener]:
    """A TCP port that counts the connections it accepts (and closes them): an SSH target that must not be
    contacted."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    counting = CountingListener(port=server.getsockname()[1])
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                server.accept()[0].close()
            except OSError:
                continue
            counting.accepted += 1

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield counting
    stop.set()
    thread.join()
    server.close()
