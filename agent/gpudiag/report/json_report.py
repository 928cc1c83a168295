"""The sweep as a JSON document (schema ``gpudiag.sweep/4``, docs/json.md), and back.

``to_document`` turns a :class:`~gpudiag.model.SweepReport` into plain JSON values; ``render_json`` writes
it as text; ``from_document`` rebuilds the report (from ``gpudiag.sweep/3``, ``/2`` and ``/1`` documents
too), so several sweeps' JSON outputs can be merged later. Every field of the model is written by walking the
dataclasses (:mod:`gpudiag.model.json_codec`): a new reading needs no edit here. At the top: ``schema``,
``started_at``, ``duration_s``, ``stopped_by`` (only when a signal stopped the sweep), ``settings`` (the
check thresholds the run used), ``hosts``, ``jobs`` (the job view: one object per job across its hosts),
``notes`` (what a whole group said once) and ``summary``. Per host: ``host``, ``address``, ``status``,
``error``, ``duration_s``, ``node`` (the node's readings, logs and context), ``gpus`` and ``findings``.

Derived values, written for the reader and ignored when read back:

* per GPU, ``power``: the one power figure every report shows (:func:`power_document`: ``watts``,
  ``source``: ``energy_counter``, ``power_draw`` or ``power_draw_instant``, ``pct_of_limit``), and
  ``clock_event_reasons`` (the names of the mask's bits);
* per host, ``action``: the highest of its findings' actions on the ladder (each finding's own ``action`` is a
  field of the finding);
* per GPU link, ``kind``; per node context, ``interconnect`` and ``is_vm``;
* the ``summary`` block.

A GPU's raw ``samples`` are written only with ``samples_detail`` (``--samples-detail``): the combined readings
and ``node.sample_count`` stay. What each schema changed is in docs/json.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gpudiag.model import (
    SWEEP_SCHEMA,
    SWEEP_SCHEMAS_READ,
    CheckSettings,
    GpuLink,
    GpuReading,
    GroupNote,
    HostReport,
    JobView,
    NodeContext,
    NodeReadings,
    SweepReport,
    reasons_mask,
)
from gpudiag.model.gpu import POWER_READINGS
from gpudiag.model.json_codec import Shape, decode, encode, plain
from gpudiag.report.active_report import gpu_document
from gpudiag.report.changes_report import annotate
from gpudiag.report.counts import findings_by_code, findings_by_severity, gpus_by_sm, held_idle, hosts_by_status
from gpudiag.report.escape import json_safe
from gpudiag.report.view import ReportView


def summarize(report: SweepReport) -> dict[str, object]:
    """The document's ``summary`` block."""
    return {
        "hosts": len(report.hosts),
        "hosts_by_status": hosts_by_status(report),
        "gpus": sum(len(h.gpus) for h in report.hosts),
        "gpus_by_sm": gpus_by_sm(report),
        "findings_by_code": findings_by_code(report),
        "findings_by_severity": findings_by_severity(report),
        "gpus_held_idle": held_idle(report)[0],
        "exit_code": report.exit_code,
    }


# -------------------------------------------------------------------------------------------- writing


def power_document(gpu: GpuReading) -> dict[str, object] | None:
    """The GPU's ``power`` object, its one power figure (:meth:`GpuReading.power`): ``watts``, ``source`` (a
    :class:`~gpudiag.model.PowerSource`), ``pct_of_limit``, and the raw ``readings`` it was chosen from, by
    source; None when no power was read. The sweep document and the history's stored readings both write this
    one (schema ``gpudiag.sweep/4``: before, the raw readings were the GPU's own ``power_w``,
    ``power_instant_w`` and ``energy_power_w``)."""
    power = gpu.power()
    if power is None:
        return None
    return {"watts": plain(power.watts), "source": plain(power.source), "pct_of_limit": plain(power.pct_of_limit),
            "readings": {source.value: plain(getattr(gpu, name)) for source, name in POWER_READINGS}}


# The raw power readings are not the GPU's own keys: they are in its power object (power_document).
GPU_LEFT_OUT = frozenset(name for _, name in POWER_READINGS)


def gpu_shape(samples_detail: bool = False) -> Shape:
    """How a GPU is written: every field but the raw power readings (and the raw samples unless asked), then
    its ``power`` object and its clock-event reasons by name."""
    left_out = GPU_LEFT_OUT if samples_detail else GPU_LEFT_OUT | {"samples"}
    return {GpuReading: (left_out, lambda gpu: {"power": power_document(gpu),
                                                "clock_event_reasons": gpu.clock_event_reasons})}


def _shape(samples_detail: bool) -> Shape:
    return {
        **gpu_shape(samples_detail),
        NodeReadings: (frozenset({"gpus"}), None),  # a host's GPUs are listed beside its node object
        GpuLink: (frozenset(), lambda link: {"kind": link.kind}),
        NodeContext: (frozenset(), lambda c: {"interconnect": c.interconnect, "is_vm": c.is_vm}),
    }


def _host_derived(shape: Shape) -> Any:
    def derived(host: HostReport) -> dict[str, object]:
        # A host's action (the highest of its findings'), its readings as its "node" object, its GPUs listed
        # beside it, then its findings (each with its own action).
        return {"action": plain(host.action),
                "node": encode(host.readings, shape) if host.readings is not None else None,
                "gpus": [_with_active(encode(g, shape), gpu_document(host, g)) for g in host.gpus],
                "findings": [encode(f, shape) for f in host.findings]}
    return derived


def _with_active(gpu: dict[str, Any], active: dict[str, Any] | None) -> dict[str, Any]:
    """A GPU's object with its ``active`` result (``--active``; absent when the GPU was not named to the test)."""
    return gpu if active is None else {**gpu, "active": active}


def _host_document(host: HostReport, shape: Shape) -> dict[str, object]:
    """Every field of the host (walked, like everything else), then its node, GPUs and findings."""
    return encode(host, {**shape, HostReport: (frozenset({"readings", "findings"}), _host_derived(shape))})


def to_document(report: SweepReport, *, samples_detail: bool = False) -> dict[str, object]:
    """The report as a ``gpudiag.sweep/4`` document: plain JSON values, keys in schema order."""
    shape = _shape(samples_detail)
    return {
        "schema": SWEEP_SCHEMA,
        "started_at": report.started_at,
        "duration_s": plain(report.duration_s),
        # only when a signal stopped the sweep: "SIGINT" or "SIGTERM" (the summary's exit_code: 130, 143)
        **({"stopped_by": report.stopped_by} if report.stopped_by is not None else {}),
        # the thresholds the checks judged by (null: not known, e.g. merged shards that used different ones)
        "settings": None if report.settings is None else encode(report.settings),
        "hosts": [_host_document(h, shape) for h in report.hosts],
        # the jobs across hosts (the job view) and what whole groups said once (gpudiag.checks.jobs, .fleet)
        "jobs": [encode(j) for j in report.jobs],
        "notes": [encode(n) for n in report.notes],
        "summary": plain(summarize(report)),
    }


def render_json(report: SweepReport, *, samples_detail: bool = False) -> str:
    """The report as indented JSON text (no trailing newline)."""
    return dumps(to_document(report, samples_detail=samples_detail))


def render(report: SweepReport, view: ReportView) -> str:
    """The JSON format (:class:`gpudiag.report.Format`): the document, raw samples too with
    ``view.samples_detail``; with a history, each finding's change and the ``changes`` and ``history`` blocks
    (:func:`gpudiag.report.changes_report.annotate`); the view's ``extra`` blocks at the top level; on one line
    with ``view.one_line`` (``gpudiag watch``), else indented."""
    document = to_document(report, samples_detail=view.samples_detail)
    if view.changes is not None:
        document = annotate(document, report, view.changes, view.run_id)
    document.update(view.extra)
    if view.one_line:
        return json.dumps(document, separators=(",", ":"))
    return dumps(document)


def dumps(document: object) -> str:
    """``document`` as JSON indented by two spaces, non-ASCII as UTF-8. orjson (a dependency where it has
    wheels: CPython) writes it - byte for byte what the standard library writes, in a twentieth of the time
    (Python's own encoder is pure Python once indent is set: 0.6-0.8 ms per 8-GPU host, bench/sweep_loopback.py
    --profile); without orjson, and for an integer past 64 bits, the standard library writes it."""
    if _orjson is not None:
        try:
            return json_safe(str(_orjson.dumps(document, option=_orjson.OPT_INDENT_2).decode("utf-8")))
        except TypeError:  # an integer orjson cannot write
            pass
    # Node text's C1 controls and bidi characters as \uXXXX escapes: a JSON file shown in a terminal acts on nothing.
    return json_safe(json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False))


def _load_orjson() -> object:
    """orjson when installed (a dependency on CPython), else None."""
    try:
        import orjson
    except ImportError:
        return None
    return orjson


_orjson: Any = _load_orjson()


# -------------------------------------------------------------------------------------------- reading

# Schema 1 spelled these differently; read them as schemas 2 and 3 do. Schema 2 differs from 3 only in derived
# values (power_pct_of_limit), which are not read back, and has no settings block: it reads as it is.
_SCHEMA_1 = "gpudiag.sweep/1"
_SCHEMA_1_GPU = {"power_limit_w": "enforced_power_limit_w"}


def _gpu_from(doc: Mapping[str, Any], schema: str) -> GpuReading:
    power = doc.get("power")
    if isinstance(power, Mapping) and isinstance(power.get("readings"), Mapping):  # gpudiag.sweep/4
        raw = power["readings"]
        doc = {**doc, **{name: raw.get(source.value) for source, name in POWER_READINGS}}
    if schema == _SCHEMA_1:
        doc = {_SCHEMA_1_GPU.get(k, k): v for k, v in doc.items()}
        if "clock_event_reasons_mask" not in doc and doc.get("clock_event_reasons"):
            known = [r for r in doc["clock_event_reasons"] if isinstance(r, str)]
            doc = {**doc, "clock_event_reasons_mask": reasons_mask(r for r in known if not r.startswith("0x"))
                   | sum(int(r, 16) for r in known if r.startswith("0x"))}
    return decode(GpuReading, doc)


def _host_from(doc: Mapping[str, Any], schema: str) -> HostReport:
    gpus = tuple(_gpu_from(g, schema) for g in doc.get("gpus") or ())
    node = doc.get("node")
    if node is None and gpus:
        raise ValueError(f"host {doc['host']!r} lists GPUs but has no node object")
    host = decode(HostReport, doc, readings=decode(NodeReadings, node, gpus=gpus) if node is not None else None)
    if any("action" not in f for f in doc.get("findings") or ()):
        # A document from before findings had an action: each gets the one its code gets now.
        from gpudiag.checks.actions import with_action

        host = replace(host, findings=tuple(with_action(f) for f in host.findings))
    return host


def from_document(doc: Mapping[str, Any]) -> SweepReport:
    """Rebuild the report from a ``gpudiag.sweep/4`` (or ``/3``, ``/2``, ``/1``) document (derived values are ignored).

    Raises ``ValueError`` with a one-line message when the schema is not one of those or the document is
    malformed.
    """
    schema = doc.get("schema") if isinstance(doc, Mapping) else None
    if schema not in SWEEP_SCHEMAS_READ:
        raise ValueError(f"not a {SWEEP_SCHEMA} document (schema is {schema!r})")
    try:
        return SweepReport(
            started_at=str(doc["started_at"]),
            duration_s=float(doc["duration_s"]),
            hosts=tuple(_host_from(h, str(schema)) for h in doc["hosts"]),
            stopped_by=None if doc.get("stopped_by") is None else str(doc["stopped_by"]),
            settings=None if doc.get("settings") is None else decode(CheckSettings, doc["settings"]),
            jobs=tuple(decode(JobView, j) for j in doc.get("jobs") or ()),
            notes=tuple(decode(GroupNote, n) for n in doc.get("notes") or ()),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        detail = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc).splitlines()[0]
        raise ValueError(f"malformed {SWEEP_SCHEMA} document: {detail}") from exc
