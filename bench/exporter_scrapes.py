"""``gpudiag exporter``'s /metrics under many clients at once (issue 30, fault matrix #1).

A 300-host fleet (the demo's six hosts, copied under new names: 2,000 GPUs' worth of samples and findings)
is rendered into the exporter's page; the server (gpudiag.audit.metrics_server, as the exporter runs it)
listens in a child process; this process opens N connections at once and scrapes /metrics on each, plain
text as curl asks (no gzip: the worst case; --gzip as Prometheus asks), then once more with 1,500 half-open
connections that send nothing and close together. Printed: how many scrapes answered whole, how many timed
out (60 s), the latency percentiles, and the server's peak resident memory (VmHWM).

    python bench/exporter_scrapes.py                 # 1,000 concurrent scrapes of 300 hosts
    python bench/exporter_scrapes.py --clients 200 --hosts 49
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

TIMEOUT_S = 60.0

SERVER = r"""
import asyncio, json, sys
from gpudiag.audit.metrics_server import MetricsPage, MetricsServer
from gpudiag.report.json_report import from_document

async def main():
    page = MetricsPage()
    page.update(from_document(json.load(open(sys.argv[1]))))
    server = MetricsServer(page)
    port = await server.start("127.0.0.1", 0)
    print(port, len(page.bytes(gzipped=False)), flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


def fleet(hosts: int, path: Path) -> None:
    """The demo's report with its hosts copied to ``hosts`` hosts, as JSON in ``path``."""
    done = subprocess.run([sys.executable, "-m", "gpudiag", "sweep", "--demo", "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    from gpudiag.report.json_report import from_document, render_json

    demo = from_document(json.loads(done.stdout))
    copies = []
    for n in range(hosts):
        host = demo.hosts[n % len(demo.hosts)]
        name = f"{host.host}-{n:04d}"
        copies.append(dataclasses.replace(host, host=name, findings=tuple(
            dataclasses.replace(f, host=name) for f in host.findings)))
    path.write_text(render_json(dataclasses.replace(demo, hosts=tuple(copies))))


GZIP = [False]


async def scrape(port: int) -> tuple[float, int, bool]:
    """(seconds, body bytes, whole) of one GET /metrics; raises TimeoutError past TIMEOUT_S."""
    start = time.perf_counter()

    async def go() -> tuple[int, bool]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        accept = b"Accept-Encoding: gzip\r\n" if GZIP[0] else b""
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nUser-Agent: bench\r\n" + accept + b"\r\n")
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(
            b"content-length")))
        body = await reader.readexactly(length)
        writer.close()
        return len(body), head.startswith(b"HTTP/1.1 200")

    size, ok = await asyncio.wait_for(go(), TIMEOUT_S)
    return time.perf_counter() - start, size, ok


async def many(port: int, clients: int) -> None:
    results = await asyncio.gather(*(scrape(port) for _ in range(clients)), return_exceptions=True)
    timed_out = sum(1 for r in results if isinstance(r, (asyncio.TimeoutError, TimeoutError)))
    failed = [r for r in results if isinstance(r, BaseException) and not isinstance(r, (asyncio.TimeoutError,
                                                                                           TimeoutError))]
    good = [r for r in results if isinstance(r, tuple) and r[2]]
    lat = sorted(r[0] for r in good)
    how = " (gzip)" if GZIP[0] else " (plain text)"
    print(f"  {clients} concurrent scrapes{how}: {len(good)} answered whole (200), {timed_out} timed out "
          f"({TIMEOUT_S:g} s), {len(failed)} failed{f' ({failed[0]!r})' if failed else ''}")
    if lat:
        print(f"  latency s: p50 {statistics.median(lat):.2f}, p90 {lat[int(len(lat) * 0.9) - 1]:.2f}, "
              f"max {lat[-1]:.2f}")


async def half_open(port: int, count: int) -> None:
    conns = []
    for _ in range(count):
        try:
            conns.append(await asyncio.open_connection("127.0.0.1", port))
        except OSError:
            break
    await asyncio.sleep(1.0)
    for _, writer in conns:
        writer.close()
    start = time.perf_counter()
    seconds, size, ok = await scrape(port)
    print(f"  {len(conns)} half-open connections closed at once; the next scrape: {seconds:.2f} s "
          f"({'whole' if ok else 'not 200'}, {time.perf_counter() - start:.2f} s)")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=300)
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--half-open", type=int, default=1500)
    parser.add_argument("--gzip", action="store_true", help="ask for gzip, as Prometheus does")
    args = parser.parse_args()
    GZIP[0] = args.gzip
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))  # the clients' sockets; the child's too
    report = Path(f"/tmp/gpudiag-bench-fleet-{os.getpid()}.json")
    fleet(args.hosts, report)
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(report)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port_text, size = server.stdout.readline().split()
        port = int(port_text)
        print(f"exporter page: {args.hosts} hosts, {int(size) / 1e6:.2f} MB; server RSS at start "
              f"{peak_rss_mb(server.pid):.0f} MB")
        asyncio.run(many(port, args.clients))
        print(f"  server peak RSS {peak_rss_mb(server.pid):.0f} MB")
        asyncio.run(half_open(port, args.half_open))
        print(f"  server peak RSS {peak_rss_mb(server.pid):.0f} MB")
    finally:
        server.kill()
        server.wait()
        report.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
