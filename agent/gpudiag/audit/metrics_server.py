"""The exporter's ``/metrics`` server: asyncio, on the exporter's own event loop, serving bytes rendered once
per refresh. Standard library only.

prometheus_client's server (a listen backlog of 5, a thread per connection, the whole page rebuilt on every
scrape: 2.26 MB and 0.2-0.4 s of CPU at 300 hosts) left 129 of 200 concurrent scrapes timing out, and 1,500
half-open connections took it to 1.8 GB. Here:

- the page is rendered once per refresh (:meth:`MetricsPage.update`, in a worker thread so that the loop
  keeps answering), plain and gzipped; a scrape copies nothing, it writes the current bytes;
- a page is sent in :data:`CHUNK_BYTES` pieces, each waited for, so a slow reader holds one piece, not a copy;
- at most :data:`MAX_CLIENTS` connections are served at once; one more is answered ``503`` at once and closed
  (Prometheus retries next interval), so memory is bounded by that many send buffers, not by the clients;
- a request's headers must arrive within :data:`HEADER_TIMEOUT_S` and are at most :data:`MAX_HEADER_BYTES`; a
  client that stops reading is dropped after :data:`SEND_TIMEOUT_S`;
- ``/metrics`` only (and ``/``, a one-line pointer to it); any other path is 404; one request a connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import time
from dataclasses import dataclass

from gpudiag.model import SweepReport

MAX_CLIENTS = 2048  # served at once; each holds at most a send buffer (one chunk) and its request
HEADER_TIMEOUT_S = 10.0  # a request line and headers that take longer are a slow or stuck client
SEND_TIMEOUT_S = 60.0  # a client that reads none of the page for this long is gone
MAX_HEADER_BYTES = 16 * 1024
CHUNK_BYTES = 256 * 1024  # a connection's send buffer holds at most about this much of the page
BACKLOG = 4096  # the kernel's queue of connections not yet accepted (the listen() backlog)
CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True, slots=True)
class _Page:
    plain: bytes
    gzipped: bytes


def _exporter_metrics(refreshes: int, at_s: float | None) -> str:
    lines = ["# HELP gpudiag_exporter_refreshes_total Fleet refreshes finished since the exporter started.",
             "# TYPE gpudiag_exporter_refreshes_total counter", f"gpudiag_exporter_refreshes_total {refreshes}"]
    if at_s is not None:
        lines += ["# HELP gpudiag_exporter_last_refresh_timestamp_seconds When the last refresh finished "
                  "(Unix time).", "# TYPE gpudiag_exporter_last_refresh_timestamp_seconds gauge",
                  f"gpudiag_exporter_last_refresh_timestamp_seconds {at_s!r}"]
    return "\n".join(lines) + "\n"


def _page(text: str) -> _Page:
    plain = text.encode("utf-8")
    return _Page(plain=plain, gzipped=gzip.compress(plain, compresslevel=6))


class MetricsPage:
    """What ``/metrics`` answers: the last finished refresh's text (:func:`gpudiag.report.prometheus.
    render_prometheus`) and the exporter's own metrics, rendered once each time :meth:`update` is called."""

    def __init__(self) -> None:
        self._refreshes = 0
        self._page = _page(_exporter_metrics(0, None))

    def update(self, report: SweepReport) -> None:
        """Render ``report`` (thread-safe: the page is swapped whole, so a scrape sees the old or the new)."""
        from gpudiag.report.prometheus import render_prometheus

        refreshes = self._refreshes + 1
        text = _exporter_metrics(refreshes, time.time()) + render_prometheus(report)
        self._page, self._refreshes = _page(text), refreshes

    def bytes(self, *, gzipped: bool) -> bytes:
        page = self._page
        return page.gzipped if gzipped else page.plain


def _response(status: str, body: bytes, *, content_type: bytes = b"text/plain; charset=utf-8",
              gzipped: bool = False, head: bool = False) -> tuple[bytes, bytes]:
    headers = (f"HTTP/1.1 {status}\r\n".encode() + b"Content-Type: " + content_type + b"\r\n"
               + (b"Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n" if gzipped else b"")
               + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode())
    return headers, b"" if head else body


class MetricsServer:
    """Serves a :class:`MetricsPage` on an address; :meth:`start` listens, :meth:`close` stops."""

    def __init__(self, page: MetricsPage, *, max_clients: int = MAX_CLIENTS,
                 header_timeout_s: float = HEADER_TIMEOUT_S, send_timeout_s: float = SEND_TIMEOUT_S) -> None:
        self.page = page
        self._max_clients = max_clients
        self._header_timeout_s = header_timeout_s
        self._send_timeout_s = send_timeout_s
        self._clients = 0
        self._server: asyncio.Server | None = None
        self.served = 0  # answered 200 (tests and the bench read these)
        self.refused = 0  # answered 503: over max_clients

    async def start(self, host: str, port: int) -> int:
        """Listen on ``host:port`` (OSError when it cannot); returns the port (the one chosen for 0)."""
        self._server = await asyncio.start_server(self._serve, host, port, backlog=BACKLOG,
                                                  limit=MAX_HEADER_BYTES)
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._clients += 1
        try:
            if self._clients > self._max_clients:
                self.refused += 1
                await self._send(writer, _response("503 Service Unavailable", b"gpudiag exporter: busy\n"))
                return
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self._header_timeout_s)
            except (asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
                return  # slow, cut or oversized headers: no answer owed
            await self._send(writer, self._answer(head))
        except (OSError, asyncio.TimeoutError):
            pass  # the client went away
        finally:
            self._clients -= 1
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _answer(self, head: bytes) -> tuple[bytes, bytes]:
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or parts[0] not in ("GET", "HEAD"):
            return _response("405 Method Not Allowed", b"gpudiag exporter: GET /metrics\n")
        method, target = parts[0], parts[1].split("?", 1)[0]
        if target == "/":
            return _response("200 OK", b"gpudiag exporter: the metrics are at /metrics\n", head=method == "HEAD")
        if target != "/metrics":
            return _response("404 Not Found", b"gpudiag exporter: no such page; the metrics are at /metrics\n")
        accepts = ",".join(line.split(":", 1)[1] for line in lines[1:] if line.lower().startswith("accept-encoding:"))
        gzipped = "gzip" in accepts.lower()
        self.served += 1
        return _response("200 OK", self.page.bytes(gzipped=gzipped), content_type=CONTENT_TYPE, gzipped=gzipped,
                         head=method == "HEAD")

    async def _send(self, writer: asyncio.StreamWriter, response: tuple[bytes, bytes]) -> None:
        """The headers, then the body in chunks, each waited for: a connection holds at most one chunk and the
        transport's buffer, whatever the page's size."""
        headers, body = response
        writer.write(headers)
        view = memoryview(body)
        for start in range(0, len(view), CHUNK_BYTES):
            writer.write(view[start:start + CHUNK_BYTES])
            await asyncio.wait_for(writer.drain(), self._send_timeout_s)
        await asyncio.wait_for(writer.drain(), self._send_timeout_s)
