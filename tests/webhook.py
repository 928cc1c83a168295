"""A webhook receiver for the notification tests: a real HTTP server on loopback (the standard library's
``http.server`` in a thread) that keeps every JSON body POSTed to it, and can be told to fail."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Webhook:
    """The running receiver: its URL, what arrived, and the status it answers with (200 unless set)."""

    url: str
    bodies: list[Any] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    status: int = 200


@contextlib.contextmanager
def running_webhook() -> Iterator[Webhook]:
    hook = Webhook(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            hook.headers.append(dict(self.headers))
            if hook.status == 200:
                hook.bodies.append(json.loads(body))
            self.send_response(hook.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    hook.url = f"http://127.0.0.1:{server.server_address[1]}/hook?token=secret"
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# ---------------------------------------------------------------------------------------------- hostile receivers

HOSTILE = ("endless_body", "drip_body", "drip_status", "many_headers", "reset", "slow_accept")


@dataclass
class HostileReceiver:
    """A running hostile receiver: its URL, and how many bytes of a dripped status line it has sent so far."""

    url: str
    dripped: int = 0


@contextlib.contextmanager
def hostile_webhook(behaviour: str, drip_every_s: float = 2.0) -> Iterator[HostileReceiver]:
    """A receiver on loopback (a threaded socket server) that misbehaves as ``behaviour`` says; yields its URL.

    ``endless_body``: 200 and a body that never ends; ``drip_body``: 200, then a body byte every
    ``drip_every_s``; ``drip_status``: the status line itself a byte every ``drip_every_s``; ``many_headers``:
    200 with 200 headers (http.client refuses more than 100); ``reset``: reads the request, then resets the
    connection (RST); ``slow_accept``: listens but never accepts (the kernel's backlog completes the
    handshake, nothing ever answers)."""
    receiver = HostileReceiver(url="")
    import socket
    import socketserver
    import struct
    import time

    if behaviour not in HOSTILE:
        raise ValueError(behaviour)
    stop = threading.Event()
    if behaviour == "slow_accept":
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        try:
            receiver.url = f"http://127.0.0.1:{listener.getsockname()[1]}/hook"
            yield receiver
        finally:
            listener.close()
        return

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            sock: socket.socket = self.request
            sock.settimeout(1.0)
            with contextlib.suppress(OSError):
                sock.recv(65536)  # the request (small): what is in it does not matter here
                if behaviour == "reset":
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    sock.close()  # a zero linger: RST (here, before socketserver's own shutdown would send FIN)
                    return
                if behaviour == "drip_status":
                    for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n":
                        if stop.wait(drip_every_s):
                            return
                        sock.sendall(bytes((byte,)))
                        receiver.dripped += 1
                    return
                head = b"HTTP/1.1 200 OK\r\n"
                if behaviour == "many_headers":
                    head += b"".join(b"X-Filler-%d: %d\r\n" % (i, i) for i in range(200))
                    sock.sendall(head + b"Content-Length: 0\r\n\r\n")
                    time.sleep(0.5)
                    return
                sock.sendall(head + b"Content-Type: text/plain\r\n\r\n")  # no length: the body runs to the end
                chunk = b"x" * 65536
                while not stop.is_set():
                    if behaviour == "drip_body":
                        if stop.wait(drip_every_s):
                            return
                        sock.sendall(b"x")
                    else:
                        sock.settimeout(5.0)
                        sock.sendall(chunk)

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook?token=secret"
        yield receiver
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
