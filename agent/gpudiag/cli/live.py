"""The watch view: per-GPU utilization and power bars, what changed since the last refresh, and a
``LiveScreen`` that redraws it in place on a terminal (rich Live). Rendering is pure and returns text."""

from __future__ import annotations

import io
from datetime import datetime
from types import TracebackType

from rich import box
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from gpudiag.model import Finding, GpuReading, SweepReport
from gpudiag.report.findings_section import SEVERITY_TAGS
from gpudiag.report.table import render_summary_line
from gpudiag.report.terminal import safe_text

BAR_CELLS = 12


CHANGE_LINE_MAX = 280  # characters of a finding's line in the watch view

def bar(pct: float | None) -> str:
    """``55.0`` → ``"██████▌      55%"``: a 12-cell bar with half cells, then the number."""
    if pct is None:
        return " " * BAR_CELLS + "    -"
    filled = max(0.0, min(100.0, pct)) / 100 * BAR_CELLS
    whole = int(filled)
    half = "▌" if filled - whole >= 0.5 else ""
    return ("█" * whole + half).ljust(BAR_CELLS) + f" {pct:3.0f}%"


def _power_pct(gpu: GpuReading) -> float | None:
    power = gpu.power()  # the one figure the table, the JSON and the checks show
    return power.pct_of_limit if power is not None else None


def _change_line(sign: str, f: Finding) -> Text:
    tag, style = SEVERITY_TAGS[f.severity]
    where = f"{f.host}" + (f" gpu {f.gpu}" if f.gpu is not None else "")
    verb = "cleared" if sign == "-" else tag
    line = f"{sign} {verb:<8} {f.code:<20} {where}: {f.summary}"
    if len(line) > CHANGE_LINE_MAX:  # a live view keeps each change to two screen lines; the report has it all
        line = line[:CHANGE_LINE_MAX - 1].rsplit(" ", 1)[0] + " …"
    return safe_text(line, style=style if sign == "+" else "dim")


def render_watch(refresh: int, count: int, report: SweepReport, *, appeared: tuple[Finding, ...] = (),
                 cleared: tuple[Finding, ...] = (), width: int = 140, color: bool = False,
                 now: datetime | None = None) -> str:
    """One refresh: a header, the bars table, the findings that appeared and cleared since the last one."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for column in ("host", "gpu", "util", "power of limit", "SM MHz", "findings"):
        table.add_column(column, no_wrap=column != "findings", overflow="fold")
    for host in report.hosts:
        codes: dict[int | None, list[str]] = {}
        for f in host.findings:
            codes.setdefault(f.gpu, []).append(f.code)
        if not host.gpus:
            table.add_row(safe_text(host.host), "-", "", "", "",
                          safe_text(", ".join(codes.get(None, [])) + f" ({host.status.value})"))
            continue
        for gpu in host.gpus:
            clock = "-" if gpu.sm_clock_mhz is None else f"{gpu.sm_clock_mhz:.0f}"
            table.add_row(safe_text(host.host), str(gpu.index), bar(gpu.utilization_pct), bar(_power_pct(gpu)), clock,
                          safe_text(", ".join(codes.get(gpu.index, []) + codes.get(None, []) * (gpu.index == 0))))
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color, no_color=not color,
                      color_system="standard" if color else None, highlight=False, _environ={})
    stamp = (now or datetime.now()).strftime("%H:%M:%S")
    of = f"/{count}" if count else ""
    console.print(safe_text(f"refresh {refresh}{of} at {stamp}: {render_summary_line(report)}"))
    console.print(table)
    for f in appeared:
        console.print(_change_line("+", f))
    for f in cleared:
        console.print(_change_line("-", f))
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


class LiveScreen:
    """Redraws the watch view in place on a terminal; leaves the last view on screen at exit."""

    def __init__(self) -> None:
        self._live = Live(safe_text(""), auto_refresh=False, transient=False)

    def __enter__(self) -> LiveScreen:
        self._live.__enter__()
        return self

    def show(self, text: str) -> None:
        self._live.update(Text.from_ansi(text), refresh=True)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._live.__exit__(kind, exc, tb)
