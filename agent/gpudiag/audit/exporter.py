"""``gpudiag exporter``: keeps the watch connections to every host and serves ``/metrics`` for the whole fleet
(:mod:`gpudiag.audit.metrics_server`: the page rendered once per refresh, the connections bounded).

Each scrape is answered from the last finished refresh, never from a sweep in flight, so a slow or hung
host never blocks Prometheus: it only delays the next refresh, up to its deadline. The metrics are the
ones the ``--prom-file`` writes (:func:`gpudiag.report.prometheus.render_prometheus`), plus
``gpudiag_exporter_refreshes_total`` and ``gpudiag_exporter_last_refresh_timestamp_seconds``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from gpudiag.audit.metrics_server import MetricsPage, MetricsServer
from gpudiag.model import Host, SweepReport
from gpudiag.model.request import SweepOptions
from gpudiag.sweep.watch import Changes, watch
from gpudiag.transport.base import Transport

if TYPE_CHECKING:
    from gpudiag.logs import LogPlan


class ExporterError(Exception):
    """The exporter cannot start: the message is one line for the operator."""


def parse_listen(text: str) -> tuple[str, int]:
    """ "127.0.0.1:9835" → ("127.0.0.1", 9835); :class:`ExporterError` otherwise."""
    address, _, port = text.rpartition(":")
    if not address or not port.isdigit() or not 0 < int(port) < 65536:
        raise ExporterError(f"--listen {text}: expected ADDRESS:PORT, e.g. 127.0.0.1:9835")
    return address.strip("[]"), int(port)


def listening_line(address: str, port: int, hosts: int, every_s: float) -> str:
    """What the exporter says when it starts, in one line of 80 columns: where it listens (the port the server
    got), how many hosts, how often."""
    shown = f"[{address}]" if ":" in address else address
    counted = f"{hosts} host{'s' * (hosts != 1)}"
    return f"gpudiag exporter: serving http://{shown}:{port}/metrics, {counted}, every {every_s:g} s"


async def run_exporter(hosts: Sequence[Host], transport: Transport, options: SweepOptions, *, listen: str,
                       every_s: float, count: int = 0, plans: Mapping[str, LogPlan] | None = None,
                       announce: Callable[[str], None] | None = None) -> SweepReport | None:
    """Refresh the fleet every ``every_s`` seconds (``count`` times; 0: until cancelled) and serve ``/metrics``.
    ``plans``: each host's log plan, as for :func:`gpudiag.sweep.watch.watch`; ``announce``: told
    :func:`listening_line` once the server listens (the CLI writes it to stderr)."""
    address, port = parse_listen(listen)
    page = MetricsPage()
    server = MetricsServer(page)
    try:
        port = await server.start(address, port)
    except OSError as exc:
        raise ExporterError(f"--listen {listen}: {(exc.strerror or str(exc)).lower()}") from None
    if announce is not None:
        announce(listening_line(address, port, len(hosts), every_s))
    loop = asyncio.get_running_loop()
    rendering: set[asyncio.Future[None]] = set()

    def refreshed(_refresh: int, report: SweepReport, _changes: Changes) -> None:
        # Rendered once per refresh, off the loop: the scrapes meanwhile get the last page.
        future = loop.run_in_executor(None, page.update, report)
        rendering.add(future)
        future.add_done_callback(rendering.discard)

    try:
        report = await watch(hosts, transport, options, every_s=every_s, count=count, on_refresh=refreshed,
                             plans=plans)
        if rendering:
            await asyncio.gather(*rendering)
        return report
    finally:
        await server.close()
