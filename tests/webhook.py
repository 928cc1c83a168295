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
