"""The sweep in the Prometheus text exposition format, for node_exporter's textfile collector
(``--collector.textfile.directory``; it reads only ``*.prom`` files). Pure: returns text.

Each metric is declared once in :data:`GPU_METRICS` / :data:`METRICS` with its HELP text; names carry their
base unit as the Prometheus conventions say (``_ratio`` for shares 0-1, ``_watts``, ``_celsius``, ``_hertz``,
``_seconds``). A reading that is None (not reported) has no sample: never a 0.
https://prometheus.io/docs/instrumenting/exposition_formats/ and https://prometheus.io/docs/practices/naming/

``gpudiag_finding{host,gpu,code,severity}`` has one series per open finding; its value is how many open
findings share those labels (two log signatures of one host), so the series stay unique.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gpudiag.model import Action, GpuReading, JobView, SweepReport
from gpudiag.model.changes import epoch_of
from gpudiag.report.escape import safe_lines
from gpudiag.report.view import ReportView


def _ratio(pct: float | None) -> float | None:
    return None if pct is None else pct / 100.0


def _power_ratio(g: GpuReading) -> float | None:
    power = g.power()
    return None if power is None else power.limit_ratio  # unrounded: not the JSON's one-decimal percent


def _watts(g: GpuReading) -> float | None:
    power = g.power()
    return None if power is None else power.watts


def _hertz(mhz: float | None) -> float | None:
    return None if mhz is None else mhz * 1e6


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuMetric:
    """One per-GPU gauge: its name (unit included), HELP, and how it is read off a GPU."""

    name: str
    help: str
    value: Callable[[GpuReading], float | int | None]


GPU_METRICS: tuple[GpuMetric, ...] = (
    GpuMetric(name="gpudiag_gpu_utilization_ratio", help="GPU utilization (utilization.gpu), median over the "
              "sampling window, 0-1.", value=lambda g: _ratio(g.utilization_pct)),
    GpuMetric(name="gpudiag_gpu_memory_utilization_ratio", help="Memory controller utilization "
              "(utilization.memory), median, 0-1.", value=lambda g: _ratio(g.memory_utilization_pct)),
    GpuMetric(name="gpudiag_gpu_power_watts", help="The GPU's power figure: NVML's energy-counter average over "
              "the window, else the power.draw median.", value=_watts),
    GpuMetric(name="gpudiag_gpu_power_limit_ratio", help="The power figure as a share of the enforced power "
              "limit, 0-1.", value=_power_ratio),
    GpuMetric(name="gpudiag_gpu_enforced_power_limit_watts", help="Enforced power limit (enforced.power.limit).",
              value=lambda g: g.enforced_power_limit_w),
    GpuMetric(name="gpudiag_gpu_default_power_limit_watts", help="Default power limit (power.default_limit).",
              value=lambda g: g.default_power_limit_w),
    GpuMetric(name="gpudiag_gpu_sm_clock_hertz", help="SM clock (clocks.sm), median.",
              value=lambda g: _hertz(g.sm_clock_mhz)),
    GpuMetric(name="gpudiag_gpu_temperature_celsius", help="GPU temperature (temperature.gpu), median.",
              value=lambda g: g.temperature_c),
    GpuMetric(name="gpudiag_gpu_pcie_link_generation", help="PCIe link generation in use (pcie.link.gen.current).",
              value=lambda g: g.pcie_gen),
    GpuMetric(name="gpudiag_gpu_pcie_link_width_lanes", help="PCIe link width in use (pcie.link.width.current).",
              value=lambda g: g.pcie_width),
    GpuMetric(name="gpudiag_gpu_ecc_uncorrected_errors", help="Uncorrected ECC errors since the driver loaded "
              "(ecc.errors.uncorrected.volatile.total).", value=lambda g: g.ecc_uncorrected),
)

METRICS = {
    "gpudiag_host_up": "1 when the host answered the sweep (status ok or partial), else 0.",
    "gpudiag_host_status": "The host's status in the last sweep (one series, value 1, labelled with it).",
    "gpudiag_host_action": "What to do about the host: the highest action of its findings (one series, "
                           "labelled with it; value: its rung on the ladder, "
                           f"{', '.join(f'{a.rank} {a.label}' for a in Action)}).",
    "gpudiag_host_last_swept_timestamp_seconds": "When the sweep that read this host's samples started (Unix "
                                                 "time): older than the last run for a host a partial run "
                                                 "did not sweep.",
    "gpudiag_host_carried": "1 when this host's samples are carried over from an earlier run (a partial run "
                            "did not sweep it), 0 when the last run swept it.",
    "gpudiag_finding": "An open finding (value: how many share these labels).",
    "gpudiag_job_gpus": "A job's GPUs that answered the sweep, across its hosts (one series per job).",
    "gpudiag_job_utilization_ratio": "A job's median GPU utilization over its GPUs, 0-1.",
    "gpudiag_job_power_limit_ratio": "A job's median power share of the enforced limit over its GPUs, 0-1.",
    "gpudiag_job_flagged": "1 when a job check flagged the job (JOB_WAITS_ON, JOB_STRAGGLER, "
                           "GPU_ALLOCATED_IDLE, every GPU waiting), else 0.",
    "gpudiag_run_timestamp_seconds": "When the last sweep started (Unix time).",
    "gpudiag_run_duration_seconds": "How long the last sweep took.",
    "gpudiag_run_exit_code": "The last sweep's exit code: 0 all well, 1 warning, 2 critical.",
}


def escape_label(value: str) -> str:
    """A label value as the text format wants it: node text's controls and bidi characters shown escaped
    (:func:`safe_lines`), then backslash, double quote and newline escaped as the format says."""
    return safe_lines(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{escape_label(v)}"' for k, v in pairs) + "}"


def _number(value: float | int) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    return repr(float(value)) if math.isfinite(value) else ("NaN" if math.isnan(value) else
                                                            ("+Inf" if value > 0 else "-Inf"))


Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Family:
    """One metric and its samples: what the text file and ``gpudiag exporter`` both show."""

    name: str
    help: str
    label_names: tuple[str, ...]
    samples: tuple[tuple[Labels, float | int], ...]


def families(report: SweepReport) -> tuple[Family, ...]:
    """Every metric of :data:`GPU_METRICS` and :data:`METRICS` with its samples for ``report``."""
    out = []
    gpu_labels = ("host", "gpu", "uuid", "sm")
    for metric in GPU_METRICS:
        samples = []
        for host in report.hosts:
            for gpu in host.gpus:
                value = metric.value(gpu)
                if value is not None:
                    labels = (host.host, str(gpu.index), gpu.uuid or "", gpu.sm or "")
                    samples.append((tuple(zip(gpu_labels, labels, strict=True)), value))
        out.append(Family(name=metric.name, help=metric.help, label_names=gpu_labels, samples=tuple(samples)))
    open_findings = Counter((f.host, "" if f.gpu is None else str(f.gpu), f.code, f.severity.label)
                            for f in report.findings)
    finding_labels = ("host", "gpu", "code", "severity")
    rows: tuple[tuple[str, tuple[str, ...], tuple[tuple[Labels, float | int], ...]], ...] = (
        ("gpudiag_host_up", ("host",), tuple(((("host", h.host),), int(h.status.answered)) for h in report.hosts)),
        ("gpudiag_host_status", ("host", "status"),
         tuple(((("host", h.host), ("status", h.status.value)), 1) for h in report.hosts)),
        ("gpudiag_host_action", ("host", "action"),
         tuple(((("host", h.host), ("action", h.action.label)), h.action.rank) for h in report.hosts)),
        ("gpudiag_host_last_swept_timestamp_seconds", ("host",),
         tuple(((("host", h.host),), epoch_of(report.started_at)) for h in report.hosts)),
        ("gpudiag_host_carried", ("host",), tuple(((("host", h.host),), 0) for h in report.hosts)),
        ("gpudiag_finding", finding_labels,
         tuple((tuple(zip(finding_labels, key, strict=True)), n) for key, n in sorted(open_findings.items()))),
        *_job_rows(report),
        ("gpudiag_run_timestamp_seconds", (), (((), epoch_of(report.started_at)),)),
        ("gpudiag_run_duration_seconds", (), (((), report.duration_s),)),
        ("gpudiag_run_exit_code", (), (((), report.exit_code),)),
    )
    out += [Family(name=name, help=METRICS[name], label_names=names, samples=samples) for name, names, samples in rows]
    from gpudiag.report.active_report import gauge_samples  # issue 31: only where a host ran --active

    out += [Family(name=n, help=h, label_names=names, samples=tuple(s))
            for n, h, names, s in gauge_samples(report) if s]
    return tuple(out)


def _job_rows(report: SweepReport) -> tuple[tuple[str, tuple[str, ...], tuple[tuple[Labels, float | int], ...]], ...]:
    """The jobs' gauges: one series per job, labelled with the job and its user only (never per GPU: a label per
    GPU multiplies the series, dcgm-exporter#585)."""
    names = ("job", "user")

    def series(read: Callable[[JobView], float | int | None]) -> tuple[tuple[Labels, float | int], ...]:
        return tuple(((("job", j.job), ("user", j.user or "")), value)
                     for j in report.jobs if (value := read(j)) is not None)

    return (("gpudiag_job_gpus", names, series(lambda j: j.gpu_count)),
            ("gpudiag_job_utilization_ratio", names, series(lambda j: _ratio(j.utilization_pct))),
            ("gpudiag_job_power_limit_ratio", names, series(lambda j: _ratio(j.power_pct_of_limit))),
            ("gpudiag_job_flagged", names, series(lambda j: int(j.code is not None))))


def render_prometheus(report: SweepReport) -> str:
    """The report as textfile-collector text (ends with a newline)."""
    lines: list[str] = []
    for family in families(report):
        help_text = family.help.replace("\\", "\\\\").replace("\n", "\\n")
        lines += [f"# HELP {family.name} {help_text}", f"# TYPE {family.name} gauge"]
        lines += [f"{family.name}{_labels(labels) if labels else ''} {_number(value)}"
                  for labels, value in family.samples]
    return "\n".join(lines) + "\n"


def render(report: SweepReport, view: ReportView) -> str:
    """The Prometheus text as a :class:`gpudiag.report.Format` (the view has nothing for it)."""
    return render_prometheus(report)
