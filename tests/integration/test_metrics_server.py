"""The exporter's /metrics server (issue 30, fault matrix #1): prometheus_client's server had a listen backlog
of 5, a thread per connection and rebuilt the page on every scrape: 129 of 200 concurrent scrapes of a 49-host
exporter timed out. Here, on loopback: many concurrent scrapes all answered whole from the page rendered once;
only /metrics (and /) answer; a client over the bound gets 503 at once; slow headers are dropped; the refresh
count is a counter. Bench: bench/exporter_scrapes.py (1,000 scrapes of 300 hosts)."""

from __future__ import annotations

import asyncio
import gzip
import time

import pytest
from builders import finding, gpu, host_report, sweep

from gpudiag.audit.metrics_server import MetricsPage, MetricsServer
from gpudiag.model import HostStatus

pytestmark = pytest.mark.integration


def page() -> MetricsPage:
    metrics = MetricsPage()
    metrics.update(sweep(*(host_report(f"gpu{i:03d}", gpus=[gpu(index=g) for g in range(8)],
                                       findings=[finding(gpu=0)]) for i in range(40)),
                         host_report("dead", status=HostStatus.TIMEOUT)))
    return metrics


async def get(port: int, request: bytes) -> tuple[bytes, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    data = await reader.read()
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return head, body


def test_many_concurrent_scrapes_are_all_answered_whole() -> None:
    async def run() -> None:
        metrics = page()
        server = MetricsServer(metrics)
        port = await server.start("127.0.0.1", 0)
        try:
            answers = await asyncio.wait_for(asyncio.gather(*(get(port, b"GET /metrics HTTP/1.1\r\n\r\n")
                                                              for _ in range(300))), 120)
            assert all(head.startswith(b"HTTP/1.1 200 OK") for head, _ in answers)
            assert {body for _, body in answers} == {metrics.bytes(gzipped=False)}
            text = answers[0][1].decode()
            assert "# TYPE gpudiag_exporter_refreshes_total counter\ngpudiag_exporter_refreshes_total 1\n" in text
            assert 'gpudiag_host_up{host="dead"} 0' in text and server.served == 300
            head, body = await get(port, b"GET /metrics HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\n")
            assert b"Content-Encoding: gzip" in head and gzip.decompress(body) == metrics.bytes(gzipped=False)
        finally:
            await server.close()

    asyncio.run(run())


@pytest.mark.parametrize(("request_line", "status"), [
    (b"GET /nope HTTP/1.1", b"404"), (b"GET /metricsx HTTP/1.1", b"404"), (b"POST /metrics HTTP/1.1", b"405"),
    (b"GET / HTTP/1.1", b"200"), (b"HEAD /metrics HTTP/1.1", b"200"), (b"GET /metrics?x=1 HTTP/1.1", b"200")])
def test_only_metrics_answers_with_the_metrics(request_line: bytes, status: bytes) -> None:
    async def run() -> None:
        server = MetricsServer(page())
        port = await server.start("127.0.0.1", 0)
        try:
            head, body = await get(port, request_line + b"\r\n\r\n")
            assert head.split(b" ")[1] == status
            has_metrics = b"gpudiag_host_up" in body
            assert has_metrics == (status == b"200" and not request_line.startswith((b"HEAD", b"GET / ")))
        finally:
            await server.close()

    asyncio.run(run())


def test_slow_headers_are_dropped_and_a_client_over_the_bound_gets_503() -> None:
    async def run() -> None:
        server = MetricsServer(page(), max_clients=3, header_timeout_s=0.5)
        port = await server.start("127.0.0.1", 0)
        try:
            idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]  # send nothing
            await asyncio.sleep(0.1)
            head, _ = await get(port, b"GET /metrics HTTP/1.1\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 503") and server.refused == 1
            start = time.monotonic()
            for reader, writer in idle:  # dropped at the header timeout: the server closes them
                assert await asyncio.wait_for(reader.read(), 10) == b""
                writer.close()
            assert time.monotonic() - start < 10
            head, _ = await get(port, b"GET /metrics HTTP/1.1\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200")
        finally:
            await server.close()

    asyncio.run(run())
