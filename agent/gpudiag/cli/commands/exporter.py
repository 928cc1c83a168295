"""``gpudiag exporter``: kept connections to every host (or the demo cluster's) and ``/metrics`` for the fleet."""

from __future__ import annotations

import typer

from gpudiag.cli.common import (
    configuration_errors,
    fail,
    prepare_hosts,
    run_async,
    stop_code,
    terminate_as_interrupt,
)
from gpudiag.cli.options import command
from gpudiag.cli.params import Given, finite

LISTEN = typer.Option("127.0.0.1:9835", "--listen", metavar="ADDRESS:PORT", help="Where to serve /metrics.")
EVERY = typer.Option(30.0, "--every", min=0.0, metavar="S", callback=finite,
                      help="Seconds from one refresh to the next.")


@command("exporter")
def exporter(listen: str = LISTEN, every: float = EVERY, *, given: Given) -> None:
    """Keep one connection per host and serve /metrics for the fleet (Prometheus), each scrape from the last refresh."""
    from gpudiag.audit.exporter import ExporterError, parse_listen, run_exporter
    from gpudiag.cli import build
    from gpudiag.transport.build import open_transport

    errors: tuple[type[Exception], ...] = (ExporterError, *configuration_errors())
    try:
        parse_listen(listen)
        # stream: as for watch, one collector per host stays on its kept connection and answers every refresh.
        request = build.request(given, sweep=build.sweep_options(given, stream=True))
        prepared, demo_plan = prepare_hosts(request, "no hosts to export: give targets, -i INVENTORY or --demo")
    except errors as exc:
        raise fail(str(exc)) from None
    def announce(line: str) -> None:  # on stderr: stdout stays empty for whoever reads it
        typer.echo(line, err=True)

    try:
        with terminate_as_interrupt():  # systemd's stop (SIGTERM) ends it as Ctrl-C does, with its line
            if demo_plan is not None:
                from gpudiag.demo.demo import export_demo

                options, planner, nodes = demo_plan
                run_async(export_demo(options, listen=listen, every_s=every, planner=planner, nodes=nodes,
                                      connect_timeout_s=request.ssh.connect_timeout_s, announce=announce))
            elif prepared is not None:
                run_async(run_exporter(prepared.hosts, open_transport(prepared.ssh), prepared.options,
                                       plans=prepared.plans, listen=listen, every_s=every, announce=announce))
    except ExporterError as exc:  # the address cannot be listened on
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        typer.echo("gpudiag: exporter stopped", err=True)
        raise typer.Exit(stop_code()) from None
