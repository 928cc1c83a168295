"""The watch view: per-GPU utilization and power bars, what changed since the last refresh, and a
``LiveScreen`` that redraws it in place on a terminal (rich Live). Rendering is pure and returns text."""

from __future__ import annotations

import io
from collections.abc import Sequence
from datetime import datetime
from types import TracebackType

from rich import box
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from gpudiag.model import Finding, GpuReading, HostReport, HostStatus, Severity, SweepReport, worst
from gpudiag.report.changes_text import fit
from gpudiag.report.findings_section import SEVERITY_TAGS
from gpudiag.report.fold import host_label, index_ranges, label_parts
from gpudiag.report.table import render_summary_line
from gpudiag.report.terminal import safe_text

BAR_CELLS = 12
NARROW_BAR_CELLS = 6  # under WIDE columns: the findings column keeps room for a whole code
WIDE = 100



def bar(pct: float | None, cells: int = BAR_CELLS) -> str:
    """``55.0`` → ``"██████▌      55%"``: a bar of ``cells`` cells with half cells, then the number."""
    if pct is None:
        return " " * cells + "    -"
    filled = max(0.0, min(100.0, pct)) / 100 * cells
    whole = int(filled)
    half = "▌" if filled - whole >= 0.5 else ""
    return ("█" * whole + half).ljust(cells) + f" {pct:3.0f}%"


def _power_pct(gpu: GpuReading) -> float | None:
    power = gpu.power()  # the one figure the table, the JSON and the checks show
    return power.pct_of_limit if power is not None else None


def _change_lines(sign: str, findings: Sequence[Finding], width: int) -> list[Text]:
    """The findings that appeared (``+``) or cleared (``-``), folded as ``--only-changes`` folds them: one line
    per host and code, its GPUs as ranges (``GPUs 0-7``), by host then GPU, each cut to one screen line (the
    report has every sentence whole)."""
    groups: dict[tuple[str, str, bool], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.host, f.code, f.gpu is None), []).append(f)

    def order(item: tuple[tuple[str, str, bool], list[Finding]]) -> tuple[str, int, str]:
        (host, code, _), found = item
        return host, min((f.gpu for f in found if f.gpu is not None), default=-1), code

    lines = []
    for (host, code, _), found in sorted(groups.items(), key=order):
        found = sorted(found, key=lambda f: -1 if f.gpu is None else f.gpu)
        gpus = [f.gpu for f in found if f.gpu is not None]
        where = host if not gpus else f"{host} GPU{'s' * (len(gpus) > 1)} {index_ranges(gpus)}"
        severity = worst(f.severity for f in found)
        tag, style = SEVERITY_TAGS[severity]
        verb = "cleared" if sign == "-" else tag
        summary = found[0].summary if len(found) == 1 else f"{len(found)} GPUs; GPU {gpus[0]}: {found[0].summary}"
        line = fit(f"{sign} {verb:<8} {code} {where}: {summary}", width)
        lines.append(safe_text(line, style=style if sign == "+" else "dim"))
    return lines


def _host_rank(host: HostReport) -> int:
    """How serious a host is, for the order of the view: the worst of its findings; a host not read is
    at least as serious as a critical finding."""
    rank = worst(f.severity for f in host.findings).rank
    return rank if host.status is HostStatus.OK else max(rank, Severity.CRITICAL.rank)


def _healthy(host: HostReport) -> bool:
    return host.status is HostStatus.OK and not host.findings


def _bars_table(hosts: Sequence[HostReport], cells: int, width: int, *, fold: bool = False) -> Table:
    """The bars of the hosts with something to say, one row per GPU (when ``fold``, consecutive GPUs of a
    host with the same findings are one row, ``0-7``, its bars their mean); a finding code is never cut (the
    findings column is at least as wide as the longest code, and codes wrap between codes)."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    longest = max((len(f.code) + 1 for h in hosts for f in h.findings), default=8)
    for column in ("host", "gpu", "util", "power" if cells < BAR_CELLS else "power of limit", "SM MHz"):
        table.add_column(column, no_wrap=True, overflow="fold" if column == "host" else "ellipsis")
    table.add_column("findings", overflow="fold", min_width=min(longest, width // 3))
    for host in hosts:
        codes: dict[int | None, list[str]] = {}
        for f in host.findings:
            codes.setdefault(f.gpu, []).append(f.code)
        if not host.gpus:
            table.add_row(safe_text(host.host), "-", "", "", "",
                          safe_text(", ".join(codes.get(None, [])) + f" ({host.status.value})"))
            continue
        runs: list[tuple[list[GpuReading], str]] = []
        for gpu in host.gpus:
            said = ", ".join(codes.get(gpu.index, []) + codes.get(None, []) * (gpu.index == host.gpus[0].index))
            if fold and runs and runs[-1][1] == said and gpu.index == runs[-1][0][-1].index + 1:
                runs[-1][0].append(gpu)
            else:
                runs.append(([gpu], said))
        for gpus, said in runs:
            clocks = [g.sm_clock_mhz for g in gpus if g.sm_clock_mhz is not None]
            clock = f"{sum(clocks) / len(clocks):.0f}" if clocks else "-"
            table.add_row(safe_text(host.host), index_ranges(g.index for g in gpus),
                          bar(_mean([g.utilization_pct for g in gpus]), cells),
                          bar(_mean([_power_pct(g) for g in gpus]), cells), clock, safe_text(said))
    return table


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def render_watch(refresh: int, count: int, report: SweepReport, *, appeared: tuple[Finding, ...] = (),
                 cleared: tuple[Finding, ...] = (), width: int = 140, height: int | None = None,
                 color: bool = False, now: datetime | None = None) -> str:
    """One refresh: a header, the bars of the hosts with findings (the most serious first), one line for
    the healthy hosts (``4 hosts ok: ...``), the findings that appeared and cleared since the last one.

    ``height``: the terminal's rows; when the view does not fit, a host's GPUs with the same findings fold
    into one row (``0-7``, the mean of their bars), then hosts are left out, the least serious first, and a
    line says how many and why (a live view that overflows its screen would hide what it cut).
    """
    cells = BAR_CELLS if width >= WIDE else NARROW_BAR_CELLS
    ordered = sorted(report.hosts, key=lambda h: -_host_rank(h))  # stable: the sweep's order within a rank
    flagged = [h for h in ordered if not _healthy(h)]
    healthy = [h.host for h in report.hosts if _healthy(h)]
    stamp = (now or datetime.now()).strftime("%H:%M:%S")
    of = f"/{count}" if count else ""

    changes = _change_lines("+", appeared, width) + _change_lines("-", cleared, width)

    def draw(shown: int, fold: bool = False, kept: int = len(changes)) -> str:
        buffer = io.StringIO()
        console = Console(file=buffer, width=width, force_terminal=color, no_color=not color,
                          color_system="standard" if color else None, highlight=False, _environ={})
        console.print(safe_text(f"refresh {refresh}{of} at {stamp}: {render_summary_line(report)}"))
        if flagged[:shown]:
            console.print(_bars_table(flagged[:shown], cells, width, fold=fold))
        if healthy:
            console.print(safe_text(f"{counted_ok(healthy)}: {_listed(healthy)}"), style="green" if color else "")
        left = flagged[shown:]
        if left:
            names = _listed([h.host for h in left])
            console.print(safe_text(f"{len(left)} host{'s' * (len(left) > 1)} with findings not shown "
                                    f"(the terminal has {height} rows; the least serious left out): {names}"))
        for line in changes[:kept]:
            console.print(line)
        if kept < len(changes):
            console.print(safe_text(f"… {len(changes) - kept} more change{'s' * (len(changes) - kept > 1)} since "
                                    "the last refresh (not shown: the hosts come first; the report has them all)"))
        return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())

    def fits(text: str) -> bool:
        return height is None or text.count("\n") <= height - 1  # the last row holds the cursor

    # When the view does not fit: GPUs that say the same fold into one row; then the change lines give way to
    # the hosts (one is kept, and a line says how many more); last, hosts are left out, the least serious first.
    shown, fold, kept = len(flagged), False, len(changes)
    text = draw(shown)
    if not fits(text):
        fold = True
        text = draw(shown, fold)
    while not fits(text) and kept > 1:
        kept -= 1
        text = draw(shown, fold, kept)
    while not fits(text) and shown > 0:
        shown -= 1
        text = draw(shown, fold, kept)
    return text


def _listed(names: Sequence[str]) -> str:
    """Host names folded into ranges, the ranges apart with a space, so that a narrow screen wraps between
    them: ``"gpu[01-03], login1"``."""
    return ", ".join(label_parts(host_label(names)))


def counted_ok(names: Sequence[str]) -> str:
    """``"4 hosts ok"``, ``"1 host ok"``."""
    return f"{len(names)} host{'s' * (len(names) > 1)} ok"


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
