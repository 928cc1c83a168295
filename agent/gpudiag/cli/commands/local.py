"""``gpudiag local``: this machine's GPUs and logs (no SSH), through the same checks and report."""

from __future__ import annotations

import typer

from gpudiag.cli.common import configuration_errors, fail, render_report, sweep_report
from gpudiag.cli.options import command
from gpudiag.cli.params import Given
from gpudiag.report import OutputFormat

COULD_NOT_READ = 2  # as a host that did not answer, and grep's "a host or log could not be read"


@command("local")
def local(*, given: Given) -> None:
    """Read this machine's GPUs (no SSH) and logs, through the same checks and report."""
    from gpudiag.cli import build
    from gpudiag.model import SmiStatus
    from gpudiag.model.request import HostSelection, OutputRequest, SweepOptions

    # The inventory's check settings do not apply here: there is no inventory (and so no SSH either).
    try:
        request = build.request(given, {SweepOptions: {"concurrency": 1}, HostSelection: {"local": True},
                                        OutputRequest: {"progress": False}})
        report = sweep_report(request)
    except configuration_errors() as exc:
        raise fail(str(exc)) from None
    (host,) = report.hosts
    no_gpu = host.readings is not None and host.readings.smi_status is SmiStatus.MISSING
    # No GPU could be read: the code of a host that could not be read (README's table), not a warning's 1.
    # With --log the logs were read, and their findings say the code.
    code = max(report.exit_code, COULD_NOT_READ) if no_gpu and not given["log"] else report.exit_code
    if given["quiet"] and code == 0:
        pass
    elif no_gpu and given["fmt"] is OutputFormat.TABLE and not given["log"]:  # with --log, the logs still count
        why = host.readings.nvml_unavailable if host.readings else None
        typer.echo("gpudiag: no NVIDIA GPU can be read on this machine: nvidia-smi is not installed"
                   + (f" and NVML does not load ({why})" if why else ""))
    else:
        typer.echo(render_report(report, request.output))
    raise typer.Exit(code)
