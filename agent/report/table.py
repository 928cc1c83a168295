"""The sweep as a terminal table (rich): one row per GPU, the findings by host, a cluster summary.

Hosts whose rows read the same (same cells after rounding, same finding codes and severities) are folded
into one block labelled with a host range ("gpu[01-03]"), as ``clush -b`` folds identical output; hosts whose
findings read the same are folded the same way. rich is imported here and by the other terminal renderers
(``live.py``, ``inventory_table.py``) only: ruff's banned-api rule (pyproject.toml). Everything returns text;
nothing prints.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from rich import box
from rich.cells import cell_len
from rich.console import Console, JustifyMethod, RenderableType
from rich.padding import Padding
from rich.table import Table

from gpudiag.model import Finding, GpuReading, HostReport, Severity, SmiStatus, SweepReport, host_status_label, worst
from gpudiag.report.counts import findings_by_code, findings_by_severity, gpus_by_sm, hosts_by_status
from gpudiag.report.evidence import evidence_lines
from gpudiag.report.terminal import safe, safe_text

K = TypeVar("K", bound=Hashable)

MISSING = "-"  # a cell whose reading was not reported

SEVERITY_TAGS = {
    Severity.CRITICAL: ("CRITICAL", "bold red"),
    Severity.WARNING: ("WARNING", "yellow"),
    Severity.UNKNOWN: ("UNKNOWN", "magenta"),
    Severity.OK: ("OK", "green"),
}

EXIT_MEANINGS = {
    0: "nothing needs attention",
    1: "warnings or missing readings",
    2: "critical findings",
    130: "stopped by SIGINT: the hosts that finished, the rest cancelled",
    143: "stopped by SIGTERM: the hosts that finished, the rest cancelled",
}

COLUMNS = (
    "host",
    "gpu",
    "name",
    "cc/SM",
    "util %",
    "mem %",
    "power",
    "SM clock",
    "temp °C",
    "PCIe",
    "reasons",
)


def _most_serious_first(severity: Severity) -> int:
    return -severity.rank  # UNKNOWN between CRITICAL and WARNING, as worst() ranks it


# ------------------------------------------------------------------------------------------- folding


def group_identical(items: Iterable[tuple[str, K]]) -> list[tuple[tuple[str, ...], K]]:
    """Group host names whose keys are equal, as ``clush -b`` groups identical output.

    Groups come in the order of their first host; names keep their order inside a group.
    ``[("a", 1), ("b", 2), ("c", 1)]`` → ``[(("a", "c"), 1), (("b",), 2)]``.
    """
    groups: dict[K, list[str]] = {}
    for name, key in items:
        groups.setdefault(key, []).append(name)
    return [(tuple(names), key) for key, names in groups.items()]


def _label(names: Sequence[str]) -> str:
    """A host range for ``names`` ("gpu[01-03]"); the plain list when no range can hold them."""
    from gpudiag.hostlist import fold  # imported here so the report does not need it at import time

    try:
        return fold(names)
    except ValueError:  # a name no host pattern can hold (e.g. with a space): list it rather than fail
        return ",".join(names)


# ------------------------------------------------------------------------------------------- cells


def _num(value: float | None) -> str:
    return MISSING if value is None else f"{value:.0f}"


def _pair(value: float | None, limit: float | None, unit: str) -> str:
    """ "330/600 W", "330 W", "-/600 W" or "-"."""
    if value is None and limit is None:
        return MISSING
    if limit is None:
        return f"{_num(value)} {unit}"
    return f"{_num(value)}/{_num(limit)} {unit}"


def short_name(name: str | None) -> str:
    """The GPU's name without the vendor prefix: "NVIDIA H100 80GB HBM3" → "H100 80GB HBM3"."""
    if not name:
        return MISSING
    return name.removeprefix("NVIDIA ").strip() or name


def cc_cell(gpu: GpuReading) -> str:
    """ "12.0 SM120"; either part alone when the other was not reported."""
    parts = [p for p in (gpu.compute_capability, gpu.sm) if p]
    return " ".join(parts) or MISSING


def power_cell(gpu: GpuReading) -> str:
    """ "330/600 W (55%)": the GPU's power figure (``GpuReading.power``: the same number the checks and the
    JSON use), its enforced limit, and the share of the limit."""
    power = gpu.power()
    text = _pair(power.watts if power else None, gpu.enforced_power_limit_w, "W")
    if power is not None and power.pct_of_limit is not None:
        text += f" ({power.pct_of_limit:.0f}%)"
    return text


def clock_cell(gpu: GpuReading) -> str:
    """ "2400/2430 MHz": SM clock and its maximum."""
    return _pair(gpu.sm_clock_mhz, gpu.max_sm_clock_mhz, "MHz")


def pcie_cell(gpu: GpuReading) -> str:
    """ "5x16", or "3x8/5x16" when the link runs below its maximum generation or width."""

    def link(gen: int | None, width: int | None) -> str:
        return f"{'?' if gen is None else gen}x{'?' if width is None else width}"

    if gpu.pcie_gen is None and gpu.pcie_width is None:
        return MISSING
    current = link(gpu.pcie_gen, gpu.pcie_width)
    return f"{current}/{link(gpu.pcie_gen_max, gpu.pcie_width_max)}" if gpu.pcie_below_max else current


def gpu_cells(gpu: GpuReading) -> tuple[str, ...]:
    """The row for one GPU, every column after ``host``; numbers rounded as shown."""
    reasons = ", ".join(gpu.clock_event_reasons) or MISSING
    if gpu.lost:
        reasons = "LOST" if reasons == MISSING else f"LOST, {reasons}"
    return (
        str(gpu.index),
        short_name(gpu.name),
        cc_cell(gpu),
        _num(gpu.utilization_pct),
        _num(gpu.memory_utilization_pct),
        power_cell(gpu),
        clock_cell(gpu),
        _num(gpu.temperature_c),
        pcie_cell(gpu),
        reasons,
    )


@dataclass(frozen=True, slots=True)
class HostBlock:
    """What one host shows in the tables; hosts with equal blocks are folded into one.

    ``rows`` holds, per GPU, its cells (``gpu_cells``) and the worst severity of its findings (None when it
    has none). A host without GPU rows (it did not answer, or nvidia-smi gave none) has ``message`` instead.
    ``codes`` holds (gpu, code, severity) of every finding, so hosts with different verdicts never fold.
    """

    status: str
    rows: tuple[tuple[tuple[str, ...], Severity | None], ...] = ()
    message: str | None = None
    codes: tuple[tuple[int, str, int], ...] = ()


def _no_gpu_message(host: HostReport) -> str:
    readings = host.readings
    if host.status.answered and readings is not None and readings.smi_status is not SmiStatus.OK:
        return f"nvidia-smi {readings.smi_status.value}: {readings.smi_message or host.error or 'no GPUs'}"
    if host.status.answered:
        return host.error or "no GPUs reported"
    return host.error or "no answer"


def host_block(host: HostReport) -> HostBlock:
    """The host's block: its GPU rows (or a message), and its finding codes."""
    codes = tuple(sorted((-1 if f.gpu is None else f.gpu, f.code, int(f.severity)) for f in host.findings))
    if not host.gpus:
        return HostBlock(status=host_status_label(host), message=_no_gpu_message(host), codes=codes)
    rows = []
    for gpu in sorted(host.gpus, key=lambda g: g.index):
        severities = [f.severity for f in host.findings if f.gpu == gpu.index]
        rows.append((gpu_cells(gpu), worst(severities) if severities else None))
    return HostBlock(status=host.status.value, rows=tuple(rows), codes=codes)


# ------------------------------------------------------------------------------------------- rendering

# One space of padding right of each cell plus SIMPLE_HEAD's blank column divider: two spaces between columns.
_CELL_PADDING = (0, 1, 0, 0)
_COLUMN_GAP = 2
_NAME_MAX_WIDTH = 24  # "RTX PRO 6000 Blackwell Server Edition" takes two lines rather than a third of the row
_TWO_LINE_HEADERS = frozenset({"util %", "mem %", "temp °C"})


def _layout(groups: Sequence[tuple[str, HostBlock]], width: int) -> tuple[int | None, bool]:
    """How to fit the GPU table in ``width``: the name column's maximum width, and whether to use
    two-line headers. Full names and one-line headers when they fit; else the name capped; else both."""
    natural = [cell_len(header) for header in COLUMNS]
    for label, block in groups:
        for cells, _severity in block.rows:
            for position, cell in enumerate((label, *cells)):
                natural[position] = max(natural[position], cell_len(cell))
    gaps = _COLUMN_GAP * (len(COLUMNS) - 1)
    if sum(natural) + gaps <= width:
        return None, False
    natural[2] = min(natural[2], _NAME_MAX_WIDTH)
    return _NAME_MAX_WIDTH, sum(natural) + gaps > width


def _gpu_table(groups: Sequence[tuple[str, HostBlock]], width: int, color: bool) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=_CELL_PADDING)
    # When the table is too wide, headers wider than their numbers go on two lines ("util" over "%"),
    # which leaves the space to the GPU name instead of squeezing it.
    name_max_width, compact = _layout(groups, width)
    table.add_column("host", overflow="fold", style="bold" if color else "")
    table.add_column("gpu", justify="right", no_wrap=True)
    table.add_column("name", overflow="fold", max_width=name_max_width)
    for header in COLUMNS[3:-1]:
        justify: JustifyMethod = "left" if header in ("cc/SM", "PCIe") else "right"
        shown = header.replace(" ", "\n") if compact and header in _TWO_LINE_HEADERS else header
        table.add_column(shown, justify=justify, no_wrap=True)
    table.add_column("reasons", overflow="fold", min_width=8)
    for label, block in groups:
        for position, (cells, severity) in enumerate(block.rows):
            gpu_index = safe_text(cells[0], style=SEVERITY_TAGS[severity][1] if color and severity else "")
            table.add_row(
                safe_text(label if position == 0 else ""),
                gpu_index,
                *(safe_text(c) for c in cells[1:]),
                end_section=position == len(block.rows) - 1,
            )
    return table


def _no_gpu_table(groups: Sequence[tuple[str, HostBlock]], color: bool) -> Table:
    """Hosts without GPU rows: one row each, host, status, and the error sentence."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=_CELL_PADDING)
    table.add_column("host", overflow="fold", style="bold" if color else "")
    table.add_column("status", no_wrap=True)
    table.add_column("error", overflow="fold")
    for label, block in groups:
        status_style = "bold red" if color and block.status != "ok" else ""
        table.add_row(safe_text(label), safe_text(block.status, style=status_style), safe_text(block.message or ""))
    return table


def _index_ranges(indexes: Sequence[int]) -> str:
    """[0, 1, 2, 5] → "0-2,5" (sorted, distinct indexes)."""
    runs: list[list[int]] = []
    for i in indexes:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def _finding_lines(host: HostReport) -> tuple[tuple[Severity, str, str, str], ...]:
    """One line per finding; the same code and severity on several GPUs of a host is one line whose
    sentence is the first GPU's (eight identical lines hide the one that differs)."""

    def order(f: Finding) -> tuple[int, int, str]:
        return (_most_serious_first(f.severity), -1 if f.gpu is None else f.gpu, f.code)

    lines: list[tuple[Severity, str, str, str]] = []
    per_gpu: dict[tuple[Severity, str], list[Finding]] = {}
    for f in sorted(host.findings, key=order):
        if f.gpu is None:
            lines.append((f.severity, f.code, "", f.summary))
        else:
            per_gpu.setdefault((f.severity, f.code), []).append(f)
    for (severity, code), found in per_gpu.items():
        if len(found) == 1:
            lines.append((severity, code, f"gpu {found[0].gpu}", found[0].summary))
        else:
            gpus = sorted(f.gpu for f in found if f.gpu is not None)
            lines.append((severity, code, f"gpu {_index_ranges(gpus)}",
                          f"{len(found)} GPUs; gpu {found[0].gpu} {found[0].summary}"))
    return tuple(sorted(lines, key=lambda line: _most_serious_first(line[0])))


def _findings_section(report: SweepReport, color: bool) -> list[RenderableType]:
    """Findings by host (hosts with equal findings folded); an answered host's error shows in its heading."""

    def heading_note(host: HostReport) -> str:
        if host.status.answered and (host.status.value != "ok" or host.error):
            return f"{host.status.value}: {host.error}" if host.error else host.status.value
        return ""

    items = [(h.host, (heading_note(h), _finding_lines(h), evidence_lines(h))) for h in report.hosts]
    groups = [(names, key) for names, key in group_identical(items) if key[0] or key[1]]
    if not groups:
        return [safe_text("No findings.")]
    code_width = max((len(line[1]) for _, (_, lines, _) in groups for line in lines), default=4)
    gpu_width = max((len(line[2]) for _, (_, lines, _) in groups for line in lines), default=0)
    out: list[RenderableType] = [safe_text("Findings", style="bold" if color else "")]
    for names, (note, lines, extra) in groups:
        heading = safe_text(_label(names), style="bold" if color else "")
        if note:
            heading.append(safe(f"  {note}"))
        out.append(heading)
        if not lines:
            continue
        grid = Table.grid(padding=(0, 2))
        grid.add_column(no_wrap=True, min_width=8)
        grid.add_column(no_wrap=True, min_width=code_width)
        grid.add_column(no_wrap=True, min_width=gpu_width)
        grid.add_column(overflow="fold")
        for severity, code, gpu, summary in lines:
            tag, style = SEVERITY_TAGS[severity]
            grid.add_row(safe_text(tag, style=style if color else ""), safe_text(code), safe_text(gpu),
                         safe_text(summary))
        for label, text in extra:  # context for the verdict: topology, VM, the servers' configuration
            grid.add_row(safe_text(""), safe_text(label, style="dim" if color else ""), safe_text(""), safe_text(text))
        out.append(Padding(grid, (0, 0, 0, 2), expand=False))
    return out


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {name}" for name, n in counts.items() if n) or "none"


def _summary_section(report: SweepReport, color: bool) -> list[RenderableType]:
    n_gpus = sum(len(h.gpus) for h in report.hosts)
    code = report.exit_code
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    # Text, not str: rich would read "[...]" in a value as markup.
    grid.add_row(safe_text("hosts"), safe_text(f"{len(report.hosts)}: {_counts(hosts_by_status(report))}"))
    grid.add_row(safe_text("GPUs"), safe_text(f"{n_gpus}: {_counts(gpus_by_sm(report))}"))
    sources = Counter(power.source for h in report.hosts for g in h.gpus if (power := g.power()) is not None)
    if sources:  # which figure the power column shows (the same one the checks judge)
        grid.add_row(safe_text("power"), safe_text("shown as " + ", ".join(
            f"{source.short} ({n} GPU{'s' if n != 1 else ''})" for source, n in sources.most_common())))
    grid.add_row(safe_text("findings"), safe_text(f"{len(report.findings)}: {_counts(findings_by_code(report))}"))
    grid.add_row(safe_text("sweep"), safe_text(f"started {report.started_at}, took {report.duration_s:.1f} s"))
    exit_style = {0: "green", 1: "yellow", 2: "bold red"}.get(code, "") if color else ""
    return [
        safe_text("Summary", style="bold" if color else ""),
        Padding(grid, (0, 0, 0, 2), expand=False),
        safe_text(f"exit {code}: {EXIT_MEANINGS.get(code, 'unexpected exit code')}", style=exit_style),
    ]


def render_table(report: SweepReport, *, width: int = 160, color: bool = False) -> str:
    """The whole report as text ``width`` columns wide, with ANSI colours when ``color``.

    The GPU table (identical hosts folded), then the hosts without GPU rows, the findings by host, and the
    cluster summary ending with the exit code and its meaning.
    """
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=color,
        no_color=not color,
        color_system="standard" if color else None,
        highlight=False,
        emoji=False,
        # The caller decides colour and width; NO_COLOR, COLUMNS, TERM and friends are the CLI's business.
        _environ={},
    )
    groups = [(_label(names), block) for names, block in group_identical((h.host, host_block(h)) for h in report.hosts)]
    with_gpus = [(label, block) for label, block in groups if block.message is None]
    without_gpus = [(label, block) for label, block in groups if block.message is not None]
    if with_gpus:
        console.print(_gpu_table(with_gpus, width, color))
    if without_gpus:
        if with_gpus:
            console.print()
        console.print(_no_gpu_table(without_gpus, color))
    console.print()
    for renderable in _findings_section(report, color):
        console.print(renderable)
    console.print()
    for renderable in _summary_section(report, color):
        console.print(renderable)
    # rich pads every line to the console width; the padding is noise in a terminal and in golden files.
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def render_summary_line(report: SweepReport) -> str:
    """One line: hosts by status, GPUs, findings by severity, exit code and its meaning."""
    code = report.exit_code
    n_gpus = sum(len(h.gpus) for h in report.hosts)
    findings = len(report.findings)
    counts = findings_by_severity(report)
    by_severity = _counts({s.label: counts[s.label] for s in sorted(Severity, key=_most_serious_first)})
    findings_text = f"{findings} findings ({by_severity})" if findings else "0 findings"
    return (
        f"{len(report.hosts)} hosts ({_counts(hosts_by_status(report))}), {n_gpus} GPUs, {findings_text}; "
        f"exit {code}: {EXIT_MEANINGS.get(code, 'unexpected exit code')}"
    )
