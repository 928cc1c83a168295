"""The live progress display, driven by SweepObserver events and a fake clock: what it says, and that it
erases itself (rich Live, transient) on a terminal console."""

from __future__ import annotations

import io

from builders import host_report
from rich.console import Console

from gpudiag.cli.progress import SweepProgress
from gpudiag.model import Host, HostStatus
from pty_screen import render_screen


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _progress(total: int | None, width: int = 80) -> tuple[SweepProgress, Clock, io.StringIO]:
    clock, out = Clock(), io.StringIO()
    console = Console(file=out, width=width, force_terminal=True, color_system=None, _environ={})
    return SweepProgress(total, console=console, clock=clock), clock, out


def test_counts_in_flight_failures_and_the_hosts_waited_on_longest() -> None:
    progress, clock, _ = _progress(50)
    for name in ("gpu01", "gpu02", "gpu03", "gpu04", "gpu05"):
        progress.host_started(Host(name=name))
        clock.now += 1.0
    progress.host_finished(host_report("gpu01", status=HostStatus.UNREACHABLE))
    progress.host_finished(host_report("gpu03"))
    clock.now += 2.0

    first, waiting = progress.lines(80)

    assert first.endswith("  2/50 hosts, 3 in flight, 1 failed, 7 s")
    assert first.startswith("[#-")  # 2 of 50: one cell of the bar
    assert waiting == "waiting on gpu02 6 s, gpu04 4 s, gpu05 3 s"


def test_the_longest_waits_named_and_the_rest_counted_narrow_without_the_bar() -> None:
    progress, clock, _ = _progress(10)
    for i in range(6):
        progress.host_started(Host(name=f"node{i}"))
    clock.now += 5

    first, waiting = progress.lines(40)

    assert first == "0/10 hosts, 6 in flight, 5 s"
    assert waiting.startswith("waiting on node0 5 s, node1 5 s") and len(waiting) <= 40


def test_a_cancelled_host_is_not_a_failure_and_an_unknown_total_counts_up() -> None:
    progress, clock, _ = _progress(None)
    progress.host_started(Host(name="a"))
    progress.host_finished(host_report("a", status=HostStatus.CANCELLED))

    assert progress.lines(80) == ("1 done, 0 in flight, 0 s",)


def test_a_host_name_cannot_send_escapes_to_the_terminal() -> None:
    progress, clock, _ = _progress(1)
    progress.host_started(Host(name="evil\x1b]0;owned\x07"))
    clock.now += 3

    assert "\x1b" not in progress.lines(80)[1]


def test_it_erases_itself_when_done() -> None:
    progress, clock, out = _progress(2)
    with progress:
        progress.host_started(Host(name="a"))
        clock.now += 2
        progress.host_finished(host_report("a"))
    text = out.getvalue()
    # Drawn, then the cursor goes back up over what was drawn and each line is erased: the screen is blank.
    assert "1/2 hosts" in text
    assert [line for line in render_screen(text) if line] == []
