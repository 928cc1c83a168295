"""``gpudiag exporter``: kept connections to every host (or the demo cluster's) and ``/metrics`` for the fleet."""

from __future__ import annotations

import typer

from gpudiag.cli.common import configuration_errors, fail, prepared_hosts, say
from gpudiag.cli.options import command
from gpudiag.cli.params import Given

LISTEN = typer.Option("127.0.0.1:9835", "--listen", metavar="ADDRESS:PORT", help="Where to serve /metrics.")
EVERY = typer.Option(30.0, "--every", min=0.0, metavar="S", help="Seconds from one refresh to the next.")


@command("exporter")
def exporter(listen: str = LISTEN, every: float = EVERY, *, given: Given) -> None:
    """Keep one connection per host and serve /metrics for the fleet (Prometheus), each scrape from the last refresh."""
    import contextlib

    from gpudiag.audit.exporter import ExporterError, parse_listen
    from gpudiag.cli import build
    from gpudiag.model.request import SweepOptions
    from gpudiag.run.execute import export

    running = contextlib.ExitStack()  # the run's hosts (and what their sources started), until the exporter ends
    try:
        parse_listen(listen)
        try:
            import prometheus_client  # noqa: F401
        except ImportError:
            raise ExporterError("gpudiag exporter needs prometheus_client: pip install 'gpudiag[exporter]'") from None
        # stream: as for watch, one collector per host stays on its kept connection and answers every refresh.
        request = build.request(given, {SweepOptions: {"stream": True}})
        prepared = running.enter_context(prepared_hosts(request, "no hosts to export: give targets, -i INVENTORY "
                                                                 "or --demo"))
    except (ExporterError,) + configuration_errors() as exc:  # read as it propagates: what was imported by then
        running.close()
        raise fail(str(exc)) from None
    def announce(line: str) -> None:  # on stderr: stdout stays empty for whoever reads it
        typer.echo(line, err=True)

    try:
        with running:
            export(prepared, listen=listen, every_s=every, announce=announce, say=say)
    except ExporterError as exc:  # the address cannot be listened on
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        typer.echo("gpudiag: exporter stopped", err=True)
        raise typer.Exit(130) from None
