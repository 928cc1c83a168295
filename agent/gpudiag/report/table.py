"""The sweep as a terminal table (rich): one row per GPU, the hosts without GPUs, the findings by host
(:mod:`gpudiag.report.findings_section`), a cluster summary; in the width it is given (the CLI gives the
terminal's), the columns that matter least left out first (:mod:`gpudiag.report.columns`).

Folded as ``clush -b`` folds identical output (:mod:`gpudiag.report.fold`; ``fold=False`` shows every row):
hosts whose rows read the same (same cells after rounding, same finding codes and severities) are one block
under a host range ("gpu[01-03]"), GPUs of a host that read the same one row ("0-7"), hosts without GPUs
that say the same (their own name and address taken out) one line. rich is imported by the terminal
renderers only: ruff's banned-api rule (pyproject.toml). Everything returns text; nothing prints.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rich import box
from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from gpudiag.model import (
    GpuReading,
    HostReport,
    Severity,
    SmiStatus,
    SweepReport,
    host_status_label,
    worst,
)
from gpudiag.report.active_report import text_lines
from gpudiag.report.changes_text import render_changes
from gpudiag.report.columns import Column, allot, fit, total, wrap
from gpudiag.report.counts import (
    actions_phrase,
    findings_by_code,
    findings_by_severity,
    gpus_by_sm,
    held_idle,
    hosts_by_status_words,
)
from gpudiag.report.evidence import shown_process
from gpudiag.report.findings_section import SEVERITY_TAGS, findings_section, most_serious_first
from gpudiag.report.fold import counted_label, generic, group_hosts, host_label, index_ranges, label_parts, shown
from gpudiag.report.jobs_section import jobs_section
from gpudiag.report.terminal import safe, safe_text, trimmed_lines
from gpudiag.report.text_grid import draw as draw_plain
from gpudiag.report.view import ReportView

MISSING = "-"  # a cell whose reading was not reported

EXIT_MEANINGS = {
    0: "nothing needs attention",
    1: "warnings or missing readings",
    2: "critical findings",
    130: "stopped by SIGINT: the hosts that finished, the rest cancelled",
    143: "stopped by SIGTERM: the hosts that finished, the rest cancelled",
}

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


def reasons_cell(gpu: GpuReading) -> str:
    """ "sw_power_cap, hw_slowdown", "LOST" first for a lost GPU."""
    reasons = ", ".join(gpu.clock_event_reasons) or MISSING
    if gpu.lost:
        reasons = "LOST" if reasons == MISSING else f"LOST, {reasons}"
    return reasons


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuColumn:
    """One column of the GPU table, declared once: its header, its cell, how much it matters at a glance (the
    findings say the rest: the least left out first in a narrow terminal), and how it is laid out."""

    header: str
    # (GPU, its main process) -> the cell; None for the host column, whose cell is the host (range) label
    cell: Callable[[GpuReading, str], str] | None
    priority: int
    degraded_priority: int | None = None  # the priority when some GPU's PCIe link runs below its maximum
    left: bool = False  # left-aligned (text), else right-aligned (numbers)
    fold_to: int | None = None  # narrow terminals: wrap to this width ("sw_power_cap," whole)
    # the cells a typical value takes ("330/600 W (55%)"): the columns shown are chosen from these and the
    # width alone, so that two runs of one cluster show the same columns whatever their values
    nominal: int = 3
    wraps: bool = False  # the cell may take several lines
    two_line_header: bool = False  # narrow terminals: "util" over "%"
    unit_in_header: tuple[str, str] | None = None  # narrow terminals: (header, the unit taken out of each cell)


NAME_COLUMN = "name"  # its width is chosen by the layout (_NAME_WIDE or _NAME_NARROW)
PROCESS_COLUMN = "process"  # the process the GPU's findings name, else its kernels' (evidence.shown_process)

GPU_COLUMNS: tuple[GpuColumn, ...] = (
    GpuColumn(header="host", cell=None, priority=100, left=True, fold_to=20, nominal=13, wraps=True),
    GpuColumn(header="gpu", cell=lambda g, _: str(g.index), priority=100),
    GpuColumn(header=NAME_COLUMN, cell=lambda g, _: short_name(g.name), priority=60, left=True, nominal=12,
              wraps=True),
    GpuColumn(header="cc/SM", cell=lambda g, _: cc_cell(g), priority=10, left=True, nominal=10),
    GpuColumn(header="util %", cell=lambda g, _: _num(g.utilization_pct), priority=90, two_line_header=True),
    # Above the temperature: a busy GPU at low power is not BUSY_LOW_POWER when its memory is busy (bandwidth-
    # bound), and without this column nothing on screen said why (a hot GPU's reasons column says "thermal").
    GpuColumn(header="mem %", cell=lambda g, _: _num(g.memory_utilization_pct), priority=45, two_line_header=True),
    GpuColumn(header="power", cell=lambda g, _: power_cell(g), priority=85, nominal=15),
    GpuColumn(header="SM clock", cell=lambda g, _: clock_cell(g), priority=50, unit_in_header=("SM MHz", " MHz"),
              nominal=13),
    GpuColumn(header="temp °C", cell=lambda g, _: _num(g.temperature_c), priority=40, two_line_header=True),
    GpuColumn(header="PCIe", cell=lambda g, _: pcie_cell(g), priority=20, degraded_priority=75, left=True,
              nominal=8),
    GpuColumn(header="reasons", cell=lambda g, _: reasons_cell(g), priority=70, left=True, fold_to=14,
              nominal=14, wraps=True),
    GpuColumn(header=PROCESS_COLUMN, cell=lambda _, process: process, priority=30, left=True, fold_to=28,
              nominal=28, wraps=True),
)
COLUMNS = tuple(c.header for c in GPU_COLUMNS)  # the headers, in order


def gpu_cells(gpu: GpuReading, process: str = MISSING) -> tuple[str, ...]:
    """The row for one GPU, every column after ``host``; numbers rounded as shown. ``process``: its main
    process, "pid 4312 sglang (job 81723)"."""
    return tuple(c.cell(gpu, process) for c in GPU_COLUMNS if c.cell is not None)


@dataclass(frozen=True, slots=True)
class HostBlock:
    """What one host shows in the tables; hosts with equal blocks are folded into one.

    ``rows`` holds, per GPU (or per run of GPUs of the host whose cells are equal, when folding), its cells
    (``gpu_cells``) and the worst severity of its findings (None when it has none). A host without GPU rows
    (it did not answer, or nvidia-smi gave none) has ``message`` instead, its own name and address replaced
    (:func:`gpudiag.report.fold.generic`) so that hosts saying the same thing fold.
    ``codes`` holds (gpu, code, severity) of every finding, so hosts with different verdicts never fold.
    """

    status: str
    rows: tuple[tuple[tuple[str, ...], Severity | None], ...] = ()
    message: str | None = None
    codes: tuple[tuple[int, str, int], ...] = ()


def no_gpu_message(host: HostReport) -> str:
    """Why ``host`` has no GPU rows, in one sentence."""
    readings = host.readings
    if host.status.answered and readings is not None and readings.smi_status is not SmiStatus.OK:
        return f"nvidia-smi {readings.smi_status.value}: {readings.smi_message or host.error or 'no GPUs'}"
    if host.status.answered:
        return host.error or "no GPUs reported"
    return host.error or "no answer"


Row = tuple[tuple[str, ...], Severity | None]  # a GPU's cells after the host, and its worst finding


def _fold_gpu_rows(rows: list[Row]) -> list[Row]:
    """Consecutive GPUs whose cells and severity are equal become one row, "0-7" in the gpu column."""
    runs: list[tuple[list[int], tuple[str, ...], Severity | None]] = []
    for cells, severity in rows:
        if runs and runs[-1][1:] == (cells[1:], severity) and int(cells[0]) == runs[-1][0][-1] + 1:
            runs[-1][0].append(int(cells[0]))
        else:
            runs.append(([int(cells[0])], cells[1:], severity))
    return [((index_ranges(indexes), *cells), severity) for indexes, cells, severity in runs]


def host_block(host: HostReport, *, fold: bool = True) -> HostBlock:
    """The host's block: its GPU rows (or a message), and its finding codes."""
    codes = tuple(sorted((-1 if f.gpu is None else f.gpu, f.code, f.severity.rank) for f in host.findings))
    if not host.gpus:
        return HostBlock(status=host_status_label(host), message=generic(no_gpu_message(host), host), codes=codes)
    rows = []
    for gpu in sorted(host.gpus, key=lambda g: g.index):
        severities = [f.severity for f in host.findings if f.gpu == gpu.index]
        shown = shown_process(host.readings, gpu.index, host.findings) if host.readings is not None else None
        rows.append((gpu_cells(gpu, shown.label if shown else MISSING), worst(severities) if severities else None))
    return HostBlock(status=host_status_label(host), rows=tuple(_fold_gpu_rows(rows) if fold else rows), codes=codes)


# ------------------------------------------------------------------------------------------- the GPU table

# One space of padding right of each cell plus SIMPLE_HEAD's blank column divider: COLUMN_GAP between columns.
_CELL_PADDING = (0, 1, 0, 0)
_NAME_WIDE = 24  # "RTX PRO 6000 Blackwell Server Edition" takes two lines rather than a third of the row
_NAME_NARROW = 12  # ... or three at 80 columns ("RTX PRO 6000" on the first)
_NAME = COLUMNS.index(NAME_COLUMN)
_PROCESS = COLUMNS.index(PROCESS_COLUMN)
_PCIE = COLUMNS.index("PCIe")


def _columns(name_width: int, pcie_matters: bool) -> tuple[Column, ...]:
    """The GPU table's columns by how much they matter at a glance (the findings say the rest): a link below
    its maximum makes PCIe matter."""
    return tuple(Column(header=c.header, fold_to=name_width if c.header == NAME_COLUMN else c.fold_to,
                        priority=c.degraded_priority if pcie_matters and c.degraded_priority is not None
                        else c.priority) for c in GPU_COLUMNS)


@dataclass(frozen=True, slots=True)
class _Layout:
    shown: tuple[int, ...]  # positions in COLUMNS
    applies: tuple[int, ...]  # the columns some row has a value for (no process anywhere: no process column)
    max_widths: dict[int, int]  # the folding columns' widths, by position (empty: every column at full width)
    two_line_headers: bool


def _layout(groups: Sequence[tuple[tuple[str, ...], HostBlock]], width: int) -> _Layout:
    """How to fit the GPU table in ``width``: every column when they fit; else headers wider than their
    numbers on two lines ("util" over "%") and the name capped; else the columns that matter least left out
    (:func:`gpudiag.report.columns.fit`), the name capped narrower if that keeps more of them.

    Which columns show is chosen from the width and each column's ``nominal`` cells alone, never from this
    run's values (a "405/1980 MHz" one run and "2400/2430 MHz" the next must not swap the temperature for
    the SM clock); the values only size the columns shown, the folding ones capped to fit."""
    natural = [0] * len(COLUMNS)
    for label, block in groups:
        for cells, _severity in block.rows:
            natural[0] = max(natural[0], *(cell_len(line) for line in label))
            for position, cell in enumerate(cells, start=1):
                natural[position] = max(natural[position], cell_len(cell))
    pcie_matters = any("/" in cells[_PCIE - 1] for _, b in groups for cells, _ in b.rows)
    has_process = any(cells[_PROCESS - 1] != MISSING for _, b in groups for cells, _ in b.rows)
    every = tuple(p for p in range(len(COLUMNS)) if p != _PROCESS or has_process)
    nominal = [max(c.nominal, cell_len(c.header)) for c in GPU_COLUMNS]
    headers = [max(natural[i], cell_len(h)) for i, h in enumerate(COLUMNS)]
    if total(_columns(_NAME_WIDE, pcie_matters), nominal, every) <= width and total(
            _columns(_NAME_WIDE, pcie_matters), headers, every) <= width:
        return _Layout(every, every, {}, False)
    compact = [max(natural[i], *(cell_len(part) for part in c.header.split())) if c.two_line_header
               else headers[i] for i, c in enumerate(GPU_COLUMNS)]
    compact_nominal = [max(c.nominal, *(cell_len(part) for part in c.header.split())) if c.two_line_header
                       else nominal[i] for i, c in enumerate(GPU_COLUMNS)]
    for i, column in enumerate(GPU_COLUMNS):
        if column.unit_in_header is not None:
            short, unit = column.unit_in_header
            compact[i] = max([cell_len(short), *(cell_len(cells[i - 1].removesuffix(unit))
                                                 for _, b in groups for cells, _ in b.rows)])
            compact_nominal[i] = max(cell_len(short), column.nominal - cell_len(unit))
    layouts = []
    for name_width in (_NAME_WIDE, _NAME_NARROW):
        columns = _columns(name_width, pcie_matters)
        shown = tuple(every[i] for i in fit([columns[p] for p in every], [compact_nominal[p] for p in every], width))
        layouts.append(_Layout(shown, every, allot(columns, compact, shown, width), True))
    priority = [column.priority for column in _columns(_NAME_WIDE, pcie_matters)]
    # The layout that keeps the columns that matter most (the wider name when both keep the same ones).
    return max(layouts, key=lambda layout: sorted((priority[p] for p in layout.shown), reverse=True))


def _gpu_table(groups: Sequence[tuple[tuple[str, ...], HostBlock]], width: int,
               color: bool) -> list[RenderableType | str]:
    """The GPU table: one renderable for the console, or (every column at its widest cell, no colour: a pipe,
    a file, a wide terminal) its text drawn without rich (:mod:`gpudiag.report.text_grid`, the same text)."""
    # "(3 hosts)" under the range, where a narrow host column cannot break it in the middle.
    labelled = [((host_label(names), f"({len(names)} hosts)") if len(names) > 1 else (names[0],), block)
                for names, block in groups]
    layout = _layout(labelled, width)
    if not color and not layout.max_widths and not layout.two_line_headers:
        lines = draw_plain(
            [COLUMNS[p] for p in layout.shown], [GPU_COLUMNS[p].left for p in layout.shown],
            [[tuple((tuple(safe(line) for line in label) if row_number == 0 else ("",)) if p == 0
                    else (safe(cells[p - 1]),) for p in layout.shown)
              for row_number, (cells, _severity) in enumerate(block.rows)] for label, block in labelled],
            cell_len, width)
        if lines is not None:
            return ["".join(line + "\n" for line in lines)]
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=_CELL_PADDING)
    for position in layout.shown:
        column = GPU_COLUMNS[position]
        shown_header = column.header
        if layout.two_line_headers and column.unit_in_header is not None:
            shown_header = column.unit_in_header[0]
        elif layout.two_line_headers and column.two_line_header:
            shown_header = column.header.replace(" ", "\n")
        table.add_column(shown_header, justify="left" if column.left else "right", overflow="fold",
                         no_wrap=not column.wraps, style="bold" if color and column.cell is None else "",
                         max_width=layout.max_widths.get(position))
    for label, block in labelled:
        for row_number, (cells, severity) in enumerate(block.rows):
            # The label's own line break is kept; anything else unsafe in a name is escaped.
            row = [Text("\n").join(safe_text(line) for line in label) if row_number == 0 else Text()]
            for position, cell in enumerate(cells, start=1):
                if layout.two_line_headers and position == _NAME and row_number and cell == block.rows[0][0][1]:
                    cell = ""  # a narrow name column wraps: a host's GPUs of one model say it once
                unit = GPU_COLUMNS[position].unit_in_header
                if layout.two_line_headers and unit is not None:
                    cell = cell.removesuffix(unit[1])
                style = SEVERITY_TAGS[severity][1] if color and severity and position == 1 else ""
                row.append(safe_text(cell, style=style))
            table.add_row(*(row[p] for p in layout.shown), end_section=row_number == len(block.rows) - 1)
    out: list[RenderableType | str] = [table]
    left_out = [COLUMNS[p] for p in layout.applies if p not in layout.shown]
    if left_out:  # said, so that a missing column reads as "no room", not "not measured"
        out.append(safe_text(f"(not shown at {width} columns: {', '.join(left_out)}; a wider terminal shows them)",
                             style="dim" if color else ""))
    return out


def _no_gpu_lines(groups: Sequence[tuple[tuple[str, ...], HostBlock]], hosts: Mapping[str, HostReport],
                  width: int, color: bool) -> list[RenderableType]:
    """Hosts without GPU rows, folded: "gpu[01-50] (50 hosts): unreachable: no answer in 3 s", one line a group
    (as ``clush -b`` heads each group), the sentence wrapped under itself."""
    out: list[RenderableType] = []
    for names, block in groups:
        label = counted_label(names) + ":"
        if cell_len(label) > width // 3:  # a long range heads its group, the sentence under it (clush -b)
            message = shown(no_gpu_message(hosts[names[0]]), block.message or "", names)
            # Escaped first, then wrapped: the line breaks are the wrap's own, never an escaped "\x0a" inside a
            # host name (4,375 of them at 100,000 hosts), and the width holds for the escaped text.
            heading = _wrapped_label(safe(label), width)
            said = [f"    {line}" for line in wrap("", safe(f"{block.status}: {message}"), width - 4)]
            text = Text("\n".join(heading), style="bold" if color else "")
            out.append(text.append("\n").append(Text("\n".join(said))))
            continue
        grid = Table.grid(padding=(0, 1))
        grid.add_column(overflow="fold", max_width=max(12, width // 2), style="bold" if color else "")
        grid.add_column(overflow="fold")
        message = shown(no_gpu_message(hosts[names[0]]), block.message or "", names)
        status = safe_text(block.status, style="bold red" if color and block.status != "ok" else "")
        grid.add_row(safe_text(counted_label(names) + ":"), status.append(safe(f": {message}")))
        out.append(grid)
    return out


def _wrapped_label(label: str, width: int) -> list[str]:
    """A host label in lines of ``width``, broken between host ranges (after a comma), never inside one; a
    single range longer than the line is cut."""
    lines = [""]
    parts = label_parts(label)
    for n, part in enumerate(parts):
        piece = part + ("," if n < len(parts) - 1 else "")
        if lines[-1] and cell_len(lines[-1] + piece) > width:
            lines.append("")
        lines[-1] += piece
    return [chunk for line in lines for chunk in ([line[i:i + width] for i in range(0, len(line), width)] or [""])]


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {name}" for name, n in counts.items() if n) or "none"


def _summary_section(report: SweepReport, color: bool) -> list[RenderableType]:
    n_gpus = sum(len(h.gpus) for h in report.hosts)
    code = report.exit_code
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    # Text, not str: rich would read "[...]" in a value as markup.
    grid.add_row(safe_text("hosts"), safe_text(f"{len(report.hosts)}: {_counts(hosts_by_status_words(report))}"))
    grid.add_row(safe_text("GPUs"), safe_text(f"{n_gpus}: {_counts(gpus_by_sm(report))}"))
    sources = Counter(power.source for h in report.hosts for g in h.gpus if (power := g.power()) is not None)
    if sources:  # which figure the power column shows (the same one the checks judge)
        grid.add_row(safe_text("power"), safe_text("shown as " + ", ".join(
            f"{source.short} ({n} GPU{'s' if n != 1 else ''})" for source, n in sources.most_common())))
    grid.add_row(safe_text("findings"), safe_text(f"{len(report.findings)}: {_counts(findings_by_code(report))}"))
    actions = actions_phrase(report)
    if actions:  # what to do, highest first: the hosts by their action (the highest of their findings')
        grid.add_row(safe_text("actions"), safe_text(actions))
    idle, gib, owners = held_idle(report)
    if idle:  # a cluster operator's first cost question: which allocated GPUs do nothing, and whose
        grid.add_row(safe_text("held idle"), safe_text(
            f"{idle} GPU{'s' if idle != 1 else ''} held at 0% ({gib:.1f} GiB): {_counts(owners)}"))
    grid.add_row(safe_text("sweep"), safe_text(f"started {report.started_at}, took {report.duration_s:.1f} s"))
    exit_style = {0: "green", 1: "yellow", 2: "bold red"}.get(code, "") if color else ""
    return [
        safe_text("Summary", style="bold" if color else ""),
        Padding(grid, (0, 0, 0, 2), expand=False),
        safe_text(f"exit {code}: {EXIT_MEANINGS.get(code, 'unexpected exit code')}", style=exit_style),
    ]


def _console(buffer: io.StringIO, width: int, color: bool) -> Console:
    return Console(
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


def render_table(report: SweepReport, *, width: int = 160, color: bool = False, fold: bool = True,
                 findings_only: bool = False) -> str:
    """The whole report as text ``width`` columns wide, with ANSI colours when ``color``.

    The GPU table (identical hosts folded unless not ``fold``), then the hosts without GPU rows, the findings
    by host, and the cluster summary ending with the exit code and its meaning. ``findings_only`` (``--quiet``
    when something is wrong): the findings and the exit line, nothing else.
    """
    buffer = io.StringIO()
    console = _console(buffer, width, color)
    if not findings_only:
        by_name = {h.host: h for h in report.hosts}
        groups = group_hosts(((h.host, host_block(h, fold=fold)) for h in report.hosts), fold=fold)
        with_gpus = [(names, block) for names, block in groups if block.message is None]
        without_gpus = [(names, block) for names, block in groups if block.message is not None]
        if with_gpus:
            for renderable in _gpu_table(with_gpus, width, color):
                if isinstance(renderable, str):  # drawn without rich: the console's own lines come after it
                    buffer.write(renderable)
                else:
                    console.print(renderable)
        if without_gpus:
            if with_gpus:
                console.print()
            for renderable in _no_gpu_lines(without_gpus, by_name, width, color):
                console.print(renderable)
        active = text_lines(report, width)  # issue 31: each GPU's figures under --active
        if active:
            console.print()
            buffer.write("\n".join(active) + "\n")
        console.print()
    for renderable in findings_section(report, width=width, color=color, fold=fold):
        console.print(renderable)
    console.print()
    if not findings_only:
        for renderable in jobs_section(report, width=width, color=color):
            console.print(renderable)
    summary = _summary_section(report, color)
    for renderable in summary[-1:] if findings_only else summary:
        console.print(renderable)
    # rich pads every line to the console width; the padding is noise in a terminal and in golden files.
    return trimmed_lines(buffer.getvalue())


def render(report: SweepReport, view: ReportView) -> str:
    """The table format (:class:`gpudiag.report.Format`): :func:`render_table` in the view's width, colour and
    folding, then the view's ``tail`` lines and, with a history, what changed since the last recorded run."""
    text = render_table(report, width=view.width, color=view.color, fold=view.fold,
                        findings_only=view.findings_only) + (f"\n{view.tail}" if view.tail else "")
    if view.changes is not None:
        said = render_changes(view.changes, view.flap, width=view.width)
        text += "\n\n" + said if said else "\n\nNo change since the last recorded run."
    return text


def render_summary_line(report: SweepReport) -> str:
    """One line: hosts by status, GPUs (and how many are held idle), findings by severity, exit code and its
    meaning."""
    code = report.exit_code
    n_gpus = sum(len(h.gpus) for h in report.hosts)
    findings = len(report.findings)
    counts = findings_by_severity(report)
    by_severity = _counts({s.label: counts[s.label] for s in sorted(Severity, key=most_serious_first)})
    findings_text = f"{findings} findings ({by_severity})" if findings else "0 findings"
    idle = held_idle(report)[0]
    gpus_text = f"{n_gpus} GPUs" + (f" ({idle} held idle)" if idle else "")
    return (
        f"{len(report.hosts)} hosts ({_counts(hosts_by_status_words(report))}), {gpus_text}, {findings_text}; "
        f"exit {code}: {EXIT_MEANINGS.get(code, 'unexpected exit code')}"
    )
