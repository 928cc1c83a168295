"""A fake NCCL RAS thread on loopback, for the RAS reader's tests: it speaks the server's side of NCCL's client
exchange (``src/ras/client_support.cc``, ``rasClientEventLoop``: a reply line per command, the status until it
closes) and can misbehave on purpose: drip, send without end, never answer, not be NCCL at all, or be an NCCL
older than 2.28 that knows no ``SET FORMAT``."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator


class FakeRas:
    """One listening socket on 127.0.0.1 (an ephemeral port), one thread per connection. ``mode``: "answer",
    "old" (no SET FORMAT: text), "drip" (a byte every 50 ms after the status is asked), "endless" (data
    without end), "silent" (never a word), "not_ras" (an HTTP server's reply)."""

    def __init__(self, mode: str = "answer", json_answer: str = "{}\n", text_answer: str = "NCCL version x\n"):
        self.mode, self.json_answer, self.text_answer = mode, json_answer, text_answer
        self.lines: list[str] = []  # every line received, over all connections
        self.connections = 0
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.server.settimeout(0.1)
        self.port = int(self.server.getsockname()[1])
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError), conn:
            conn.settimeout(5.0)
            pending = b""
            while not self.stop.is_set():
                data = conn.recv(4096)
                if not data:
                    return
                pending += data
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    text = line.decode().strip()
                    self.lines.append(text)
                    if self.mode == "silent":
                        continue
                    if self._reply(conn, text):
                        return

    def _reply(self, conn: socket.socket, line: str) -> bool:
        """Answer one command; True when the connection is done."""
        upper = line.upper()
        if self.mode == "not_ras":
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            return True
        if upper.startswith("CLIENT PROTOCOL "):
            conn.sendall(b"SERVER PROTOCOL 2\n")
        elif upper.startswith("TIMEOUT "):
            conn.sendall(b"OK\n")
        elif upper.startswith("SET FORMAT "):
            conn.sendall(b"ERROR: Unknown command " + line.encode() + b"\n" if self.mode == "old" else b"OK\n")
        elif upper in ("STATUS", "VERBOSE STATUS"):
            if self.mode == "drip":
                while not self.stop.is_set():
                    conn.sendall(b"x")
                    time.sleep(0.05)
            elif self.mode == "endless":
                chunk = b"y" * 65536
                while not self.stop.is_set():
                    conn.sendall(chunk)
            else:
                conn.sendall((self.text_answer if self.mode == "old" else self.json_answer).encode())
            return True
        else:
            conn.sendall(f"ERROR: Unknown command {line}\n".encode())
        return False

    def close(self) -> None:
        self.stop.set()
        self.thread.join(2.0)  # the accept loop wakes every 0.1 s and sees the stop
        self.server.close()


@contextlib.contextmanager
def fake_ras(mode: str = "answer", **answers: str) -> Iterator[FakeRas]:
    server = FakeRas(mode, **answers)
    try:
        yield server
    finally:
        server.close()
