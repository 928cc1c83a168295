"""The active test (``--active``) in every report format: the table's lines, the HTML page's section, the
Prometheus gauges, the JSON's per-GPU object. Pure text; the figures' names and units are the model's
(:data:`gpudiag.model.active.FIGURE_UNITS`).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from typing import Any

from gpudiag.model import GpuReading, HostReport, SweepReport
from gpudiag.model.active import ActiveGpu, ActiveState
from gpudiag.model.json_codec import encode
from gpudiag.report.escape import html_text as escape
from gpudiag.report.escape import safe_lines
from gpudiag.report.fold import index_ranges


def _results(report: SweepReport) -> Iterator[tuple[HostReport, ActiveGpu]]:
    for host in report.hosts:
        test = host.readings.active if host.readings is not None else None
        for result in test.gpus if test is not None else ():
            yield host, result


def under_load(result: ActiveGpu) -> str:
    """ "1980 MHz, 284 W, Gen5 x16": what NVML read during the load (what is known of it)."""
    said = []
    if result.compute_sm_clock_mhz is not None:
        said.append(f"{result.compute_sm_clock_mhz:.0f} MHz")
    if result.compute_power_max_w is not None:
        said.append(f"{result.compute_power_max_w:.0f} W")
    if result.compute_clock_event_reasons:
        said.append("/".join(result.compute_clock_event_reasons))
    if result.pcie_gen_under_load is not None and result.pcie_width_under_load is not None:
        said.append(f"Gen{result.pcie_gen_under_load} x{result.pcie_width_under_load}")
    return ", ".join(said)


def text_lines(report: SweepReport, width: int = 80) -> list[str]:
    """The table's "Active test" lines, ``width`` columns wide: a heading, then per host its error (if any),
    each tested GPU's figures, and the GPUs not tested folded by what became of them (a line wrapped under
    itself). Empty when no host ran the test."""
    lines: list[str] = []
    for host in report.hosts:
        test = host.readings.active if host.readings is not None else None
        if test is None:
            continue
        if test.error:
            lines.append(f"{host.host}: {test.error}")
        said: dict[str, list[int]] = {}  # GPUs not tested, by what became of them: one line each
        for result in test.gpus:
            if result.state is ActiveState.NOT_RUN and result.why == test.error:
                continue  # said once for the node, above
            if result.state is not ActiveState.TESTED:
                said.setdefault(test.line(result.gpu) or "", []).append(result.gpu)
                continue
            load = under_load(result)
            lines.append(f"{host.host} GPU {result.gpu}: {test.line(result.gpu)}{f' ({load})' if load else ''}")
        lines += [f"{host.host} GPU {index_ranges(gpus)}: {text}" for text, gpus in said.items()]
    if not lines:
        return []
    elapsed = [h.readings.active.elapsed_s for h in report.hosts
               if h.readings is not None and h.readings.active is not None and h.readings.active.elapsed_s]
    took = f" (up to {max(elapsed):.1f} s a node)" if elapsed else ""
    wrapped = [part for line in lines for part in textwrap.wrap(safe_lines(line), max(20, width),
                                                                subsequent_indent="    ", break_on_hyphens=False)]
    return [f"Active test{took}", *wrapped]


def gpu_document(host: HostReport, gpu: GpuReading) -> dict[str, Any] | None:
    """The GPU's ``active`` object in the JSON (its result, as the model's fields), or None: not tested."""
    test = host.readings.active if host.readings is not None else None
    result = test.of(gpu.index) if test is not None else None
    if result is None:
        return None
    return encode(result, {ActiveGpu: (frozenset(), lambda r: {"compute_clock_event_reasons":
                                                                r.compute_clock_event_reasons})})


def html_section(report: SweepReport) -> str:
    """The page's "Active test" section: a row per GPU named to the test; empty when none was."""
    rows = []
    for host, result in _results(report):
        def cell(value: float | None, digits: int = 0) -> str:
            return "" if value is None else f"{value:.{digits}f}"

        cells = (host.host, str(result.gpu), result.state.value.replace("_", " "), cell(result.compute_tflops, 1),
                 cell(result.memory_copy_gb_s), cell(result.pcie_h2d_gb_s, 1), cell(result.pcie_d2h_gb_s, 1),
                 under_load(result), result.why or "")
        rows.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    if not rows:
        return ""
    head = "".join(f"<th>{c}</th>" for c in ("host", "GPU", "state", "fp32 TFLOP/s", "copy GB/s", "h2d GB/s",
                                            "d2h GB/s", "under load", "why"))
    return f'<h2>Active test</h2><div class="wide"><table id="active"><tr>{head}</tr>{"".join(rows)}</table></div>'


# (metric, HELP, how it is read off a result): the figures in base units (FLOP/s, bytes/s, hertz, watts).
GAUGES: tuple[tuple[str, str, Any], ...] = (
    ("gpudiag_gpu_active_fp32_flops", "Active test: fp32 FMA rate on every SM (FLOP/s).",
     lambda r: None if r.compute_tflops is None else r.compute_tflops * 1e12),
    ("gpudiag_gpu_active_memory_copy_bytes_per_second", "Active test: device-to-device copy, bytes read plus "
     "written per second.", lambda r: None if r.memory_copy_gb_s is None else r.memory_copy_gb_s * 1e9),
    ("gpudiag_gpu_active_pcie_h2d_bytes_per_second", "Active test: host-to-device copy from pinned memory.",
     lambda r: None if r.pcie_h2d_gb_s is None else r.pcie_h2d_gb_s * 1e9),
    ("gpudiag_gpu_active_pcie_d2h_bytes_per_second", "Active test: device-to-host copy into pinned memory.",
     lambda r: None if r.pcie_d2h_gb_s is None else r.pcie_d2h_gb_s * 1e9),
    ("gpudiag_gpu_active_sm_clock_hertz", "Active test: median SM clock during the FMA loop.",
     lambda r: None if r.compute_sm_clock_mhz is None else r.compute_sm_clock_mhz * 1e6),
    ("gpudiag_gpu_active_power_watts", "Active test: highest power draw during the FMA loop.",
     lambda r: r.compute_power_max_w),
)
STATE_HELP = "Active test: what became of the GPU's test (one series, value 1, labelled with its state)."


def gauge_samples(report: SweepReport) -> Iterator[tuple[str, str, tuple[str, ...], list[tuple[tuple[tuple[str, str],
                                                                                              ...], float]]]]:
    """(name, HELP, label names, samples) of each active-test gauge, for the Prometheus writer."""
    labels = ("host", "gpu")
    results = list(_results(report))
    for name, help_text, read in GAUGES:
        samples = [(tuple(zip(labels, (h.host, str(r.gpu)), strict=True)), float(v))
                   for h, r in results if (v := read(r)) is not None]
        yield name, help_text, labels, samples
    yield ("gpudiag_gpu_active_state", STATE_HELP, (*labels, "state"),
           [((("host", h.host), ("gpu", str(r.gpu)), ("state", r.state.value)), 1.0) for h, r in results])
