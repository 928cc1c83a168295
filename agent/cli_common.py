"""What the command modules (agent/cli.py, agent/cli_logs.py) share: the "cannot run" exit, the one-line
failure, the event loop, and carrying out a :class:`~gpudiag.request.SweepRequest`.

Both command modules import this one and it imports neither, so the command layer has no import cycle.
Like them it imports the layers below only where they are used, so that ``gpudiag --help`` starts fast.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from gpudiag.choices import EventLoop
from gpudiag.report import OutputFormat

if TYPE_CHECKING:
    from gpudiag.model import SweepReport
    from gpudiag.request import HostSelection, OutputRequest, SelectedHosts, SweepRequest

T = TypeVar("T")

EXIT_CANNOT_RUN = 3


# The global --event-loop option, set once per invocation by the app's callback before any command runs.
_event_loop = [EventLoop.ASYNCIO]


def use_event_loop(loop: EventLoop) -> None:
    """Run every later :func:`run_async` on ``loop``."""
    _event_loop[0] = loop


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the chosen event loop; uvloop falls back to asyncio, saying so, when not installed."""
    if _event_loop[0] is EventLoop.UVLOOP:
        try:
            import uvloop
        except ImportError:
            typer.echo("gpudiag: uvloop is not installed; using asyncio", err=True)
        else:
            loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
            try:
                asyncio.set_event_loop(loop)
                return loop.run_until_complete(coro)
            finally:
                asyncio.set_event_loop(None)
                loop.close()
    return asyncio.run(coro)


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


async def until_signal(start: Callable[[asyncio.Event], Coroutine[Any, Any, T]], stopped_by: list[str]) -> T:
    """Run ``start(stop)``; the first SIGINT or SIGTERM sets ``stop`` (the sweep cancels what is in flight and
    reports what finished) and puts its name in ``stopped_by``, a second one exits at once with no report.
    Where the loop cannot watch signals (not the main thread), it runs as is."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        if stop.is_set():
            _exit_at_once(signum)
        stopped_by.append(signal.Signals(signum).name)
        typer.echo(f"gpudiag: {stopped_by[0]}: stopping; reporting the hosts that finished "
                   "(again to exit at once)", err=True)
        stop.set()

    watched = []
    try:
        for signum in _STOP_SIGNALS:
            loop.add_signal_handler(signum, on_signal, signum)
            watched.append(signum)
    except (ValueError, RuntimeError, NotImplementedError):  # not the main thread, or no signals here
        pass
    try:
        return await start(stop)
    finally:
        for signum in watched:
            loop.remove_signal_handler(signum)
            if stop.is_set():  # while the report of what finished is written, another signal still exits at once
                signal.signal(signum, lambda number, _frame: _exit_at_once(number))


def _exit_at_once(signum: int) -> None:
    """The second signal: exit now, with no report (the nodes end their collectors when the connections drop)."""
    os.write(2, b"gpudiag: interrupted again; exiting without a report\n")
    os._exit(128 + signum)


def fail(message: str) -> typer.Exit:
    """Print ``message`` as gpudiag's one line on stderr; the exit to raise (code 3: cannot run)."""
    typer.echo(f"gpudiag: {message}", err=True)
    return typer.Exit(EXIT_CANNOT_RUN)


def configuration_errors() -> tuple[type[Exception], ...]:
    """The exceptions that mean "the configuration is wrong" (one line, exit 3), imported on use."""
    from gpudiag.inventory import InventoryError
    from gpudiag.transport import KeyLoadError

    # ValueError covers the rest: RequestError, SettingsError, ShardError, LogConfigError, PackError.
    return InventoryError, KeyLoadError, ValueError


def selected_hosts(selection: HostSelection) -> SelectedHosts:
    """:func:`gpudiag.request.select_hosts`, saying on stderr what an inventory not in gpudiag's format (an
    Ansible one) was read as."""
    from gpudiag.request import select_hosts

    selected = select_hosts(selection)
    if selected.read_as:
        typer.echo(f"gpudiag: {selected.read_as}", err=True)
    return selected


def sweep_report(request: SweepRequest, *, no_hosts: str = "no hosts given") -> SweepReport:
    """Carry out ``request``: the demo cluster, or the hosts it selects (none: :class:`RequestError` with
    ``no_hosts``, unless a shard came out empty). Configuration errors raise before any connection."""
    from gpudiag.request import RequestError, prepare_demo

    if request.demo:
        from gpudiag.simulate.demo import sweep_demo

        options, planner, nodes = prepare_demo(request)
        stopped_by: list[str] = []
        report = run_async(until_signal(lambda stop: sweep_demo(
            options, planner=planner, nodes=nodes, connect_timeout_s=request.ssh.connect_timeout_s, stop=stop),
            stopped_by))
        return dataclasses.replace(report, stopped_by=stopped_by[0]) if stopped_by else report
    selected = selected_hosts(request.hosts)
    if not selected.hosts and request.hosts.shard is None:
        raise RequestError(no_hosts)
    return sweep_selected(request, selected)


def sweep_selected(request: SweepRequest, selected: SelectedHosts) -> SweepReport:
    """Sweep the ``selected`` hosts as ``request`` asks (its own host selection is not read again)."""
    from gpudiag.request import open_transport, prepare
    from gpudiag.runner import sweep

    prepared = prepare(request, selected)
    # A lowered window (the open-file limit cannot hold the fan-out) is said once, before any connection.
    # SIGINT/SIGTERM stop it: the report then holds what finished, the rest cancelled, and says which signal.
    transport = open_transport(prepared)
    stopped_by: list[str] = []
    report = run_async(until_signal(lambda stop: sweep(
        prepared.hosts, transport, prepared.options, plans=prepared.plans, stop=stop,
        on_note=lambda line: typer.echo(f"gpudiag: {line}", err=True)), stopped_by))
    return dataclasses.replace(report, stopped_by=stopped_by[0]) if stopped_by else report


def render_report(report: SweepReport, output: OutputRequest, *, color: bool = False) -> str:
    """``report`` as the text ``output`` asks for."""
    from gpudiag.report import render

    if output.format is OutputFormat.TABLE:
        return render(report, output.format, color=color)
    return render(report, output.format, samples_detail=output.samples_detail)
