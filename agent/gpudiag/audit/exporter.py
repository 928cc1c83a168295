"""``gpudiag exporter``: keeps the watch connections to every host and serves ``/metrics`` for the whole fleet
through the official ``prometheus_client`` library (imported here and nowhere else; the ``exporter`` extra).

Each scrape is answered from the last finished refresh, never from a sweep in flight, so a slow or hung
host never blocks Prometheus: it only delays the next refresh, up to its deadline. The metrics are the
ones the ``--prom-file`` writes (:func:`gpudiag.report.prometheus.families`), plus
``gpudiag_exporter_refreshes`` and ``gpudiag_exporter_last_refresh_timestamp_seconds``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gpudiag.model import Host, SweepReport
from gpudiag.model.request import SweepOptions
from gpudiag.report.prometheus import families
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


class FleetCollector:
    """A prometheus_client collector that answers from the last report it was given."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._report: SweepReport | None = None
        self._refreshes = 0
        self._at_s: float | None = None

    def update(self, report: SweepReport) -> None:
        with self._lock:
            self._report, self._refreshes, self._at_s = report, self._refreshes + 1, time.time()

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        with self._lock:
            report, refreshes, at_s = self._report, self._refreshes, self._at_s
        yield GaugeMetricFamily("gpudiag_exporter_refreshes", "Fleet refreshes finished since the exporter started.",
                                value=refreshes)
        if report is None or at_s is None:
            return
        yield GaugeMetricFamily("gpudiag_exporter_last_refresh_timestamp_seconds",
                                "When the last refresh finished (Unix time).", value=at_s)
        for family in families(report):
            gauge = GaugeMetricFamily(family.name, family.help, labels=list(family.label_names))
            for labels, value in family.samples:
                gauge.add_metric([v for _, v in labels], float(value))
            yield gauge


def start_server(listen: str, collector: FleetCollector) -> object:
    """Serve ``/metrics`` from ``collector`` on ``listen`` (a thread of prometheus_client's own)."""
    from prometheus_client import CollectorRegistry, start_http_server

    address, port = parse_listen(listen)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    try:
        return start_http_server(port, addr=address, registry=registry)
    except OSError as exc:
        raise ExporterError(f"--listen {listen}: {exc.strerror or exc}") from None


def listening_line(server: Any, listen: str, hosts: int, every_s: float) -> str:
    """What the exporter says when it starts, in one line of 80 columns: where it listens (the server's own
    port where it says one), how many hosts, how often."""
    address, port = parse_listen(listen)
    with contextlib.suppress(AttributeError, IndexError, TypeError):  # prometheus_client's (server, thread)
        port = int(server[0].server_port)
    shown = f"[{address}]" if ":" in address else address
    counted = f"{hosts} host{'s' * (hosts != 1)}"
    return f"gpudiag exporter: serving http://{shown}:{port}/metrics, {counted}, every {every_s:g} s"


async def run_exporter(hosts: Sequence[Host], transport: Transport, options: SweepOptions, *, listen: str,
                       every_s: float, count: int = 0, plans: Mapping[str, LogPlan] | None = None,
                       announce: Callable[[str], None] | None = None) -> SweepReport | None:
    """Refresh the fleet every ``every_s`` seconds (``count`` times; 0: until cancelled) and serve ``/metrics``.
    ``plans``: each host's log plan, as for :func:`gpudiag.sweep.watch.watch`; ``announce``: told
    :func:`listening_line` once the server listens (the CLI writes it to stderr)."""
    collector = FleetCollector()
    server = start_server(listen, collector)
    if announce is not None:
        announce(listening_line(server, listen, len(hosts), every_s))

    def refreshed(_refresh: int, report: SweepReport, _changes: Changes) -> None:
        collector.update(report)

    return await watch(hosts, transport, options, every_s=every_s, count=count, on_refresh=refreshed, plans=plans)
