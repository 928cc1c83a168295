"""Live progress of a sweep on stderr, for a terminal: hosts done of the total, in flight, failed so far,
elapsed, and the hosts in flight the longest (a hung ``nvidia-smi`` shows by name while it holds the sweep).

Driven only by :class:`gpudiag.sweep.runner.SweepObserver` events (``host_started``, ``host_finished``), so the same
display works when worker processes forward the events. Transient: erased when the sweep ends (report or
Ctrl-C), so nothing of it is left above the report. The CLI decides whether to show it (a terminal, not
``--quiet``); this module only draws.

Each frame is whole lines (each ends with a newline, so a log of the terminal reads as lines no wider than
it); the next frame first moves the cursor up over the last one and clears to the end of the screen.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

from rich.console import Console

from gpudiag.model import Host, HostReport, HostStatus
from gpudiag.report.terminal import safe, safe_text

SLOWEST_SHOWN = 3  # hosts named on the "waiting on" line
SLOW_AFTER_S = 1.0  # a host in flight longer than this is named
_BAR_CELLS = 20
_REFRESHES_PER_S = 4
_SHOWN = [0]  # lines of the frame on the screen now, for erase_sequence (one display at a time)


def erase_sequence() -> str:
    """What erases the frame on the screen now ("" when none is): for an exit that cannot wait for the
    display to stop (a second Ctrl-C)."""
    return f"\x1b[{_SHOWN[0]}A\x1b[G\x1b[J" if _SHOWN[0] else ""  # up, to column 1, clear below


def failed(report: HostReport) -> bool:
    """A host that counts as a failure so far: it did not answer (a cancelled host is not a failure)."""
    return not report.status.answered and report.status is not HostStatus.CANCELLED


class SweepProgress:
    """The progress display: a :class:`~gpudiag.sweep.runner.SweepObserver` and a context manager that shows it.

    ``total``: the hosts to sweep (None: not known before the sweep starts, as for the demo cluster);
    ``console``: where to draw (:meth:`on_stderr` for the CLI's); ``clock``: seconds, for tests."""

    def __init__(self, total: int | None, *, console: Console, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        self._console = console
        self._clock = clock
        self._lock = threading.Lock()  # events come on the event loop, redraws from the refresh thread
        self._screen = threading.Lock()  # one writer of the terminal at a time: a redraw, or a line said
        self._started_at = clock()
        self._in_flight: dict[str, float] = {}
        self.done = 0
        self.failures = 0
        self._stopped = threading.Event()
        self._refresh = threading.Thread(target=self._refresh_until_stopped, name="gpudiag-progress", daemon=True)

    @classmethod
    def on_stderr(cls, total: int | None) -> SweepProgress:
        """The display on this process's stderr, drawn with cursor moves even where stderr is not a terminal
        (the CLI asks for it there only with ``--progress``)."""
        return cls(total, console=Console(stderr=True, force_terminal=True, highlight=False, emoji=False))

    # SweepObserver
    def host_started(self, host: Host) -> None:
        with self._lock:
            self._in_flight[host.name] = self._clock()

    def host_finished(self, report: HostReport) -> None:
        with self._lock:
            self._in_flight.pop(report.host, None)
            self.done += 1
            self.failures += failed(report)

    def say(self, line: str) -> None:
        """Print ``line`` above the display (a note during the sweep), not through it."""
        with self._screen:
            self._erase()
            self._console.print(safe_text(line), soft_wrap=True)
            self._draw()

    def lines(self, width: int) -> tuple[str, ...]:
        """What the display shows, each line cut to ``width`` cells."""
        now = self._clock()
        with self._lock:
            done, failures, in_flight = self.done, self.failures, dict(self._in_flight)
        counts = [f"{done}/{self.total} hosts" if self.total is not None else f"{done} done",
                  f"{len(in_flight)} in flight"]
        if failures:
            counts.append(f"{failures} failed")
        counts.append(f"{now - self._started_at:.0f} s")
        first = ", ".join(counts)
        if self.total and width >= _BAR_CELLS + 42:  # the bar only where the numbers still fit beside it
            filled = round(_BAR_CELLS * done / self.total)
            first = "[" + "#" * filled + "-" * (_BAR_CELLS - filled) + "]  " + first  # ASCII: any terminal
        slow = sorted(((now - t, name) for name, t in in_flight.items() if now - t >= SLOW_AFTER_S),
                      key=lambda waited: (-waited[0], waited[1]))
        out = [first]
        if slow:
            named = ", ".join(f"{safe(name)} {s:.0f} s" for s, name in slow[:SLOWEST_SHOWN])
            more = f" (+{len(slow) - SLOWEST_SHOWN} more)" if len(slow) > SLOWEST_SHOWN else ""
            out.append(f"waiting on {named}{more}")
        return tuple(_cut(line, width) for line in out)

    def _write(self, text: str) -> None:
        self._console.file.write(text)
        self._console.file.flush()

    def _erase(self) -> None:
        """The frame off the screen, the cursor where it began (the caller holds ``_screen``)."""
        self._write(erase_sequence())
        _SHOWN[0] = 0

    def _draw(self) -> None:
        """The frame in place of the last one (the caller holds ``_screen``)."""
        lines = self.lines(max(1, self._console.width - 1))  # not the last cell: no wrap pending at its end
        self._write(erase_sequence() + "".join(f"{line}\n" for line in lines))
        _SHOWN[0] = len(lines)

    def _refresh_until_stopped(self) -> None:
        while not self._stopped.wait(1 / _REFRESHES_PER_S):
            with self._screen:
                self._draw()

    def __enter__(self) -> SweepProgress:
        with self._screen:
            self._draw()
        self._refresh.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stopped.set()
        self._refresh.join()
        with self._screen:  # the last count drawn, then erased (transient): the cursor back where it started
            self._draw()
            self._erase()


def _cut(line: str, width: int) -> str:
    return line if len(line) <= width else line[:max(0, width - 1)] + "…"
