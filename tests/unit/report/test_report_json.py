"""The JSON report: schema gpudiag.sweep/4, derived values, the summary block, and the round trip."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import fields

import pytest
from builders import finding, gpu, host_report, node, sample, sweep

from gpudiag.model import (
    SWEEP_SCHEMA,
    CheckSettings,
    GpuLink,
    GpuReading,
    GpuSample,
    HostReport,
    HostStatus,
    LogLine,
    LogMatch,
    LogScan,
    LogStatus,
    NodeContext,
    NodeReadings,
    PowerSource,
    ServerFacts,
    Severity,
    SmiStatus,
    UnreachableReason,
)
from gpudiag.report.json_report import from_document, render_json, to_document


def _logs():
    """A server log with a match (and a group_by match), facts from its configuration echo; a missing log."""
    line = LogLine(seq=7, text="[2025-06-01 12:00:00] KV cache pool is full. Retract requests.")
    return (
        LogScan(path="~/sglang.log", resolved="/home/u/sglang.log", source="file", files=("/home/u/sglang.log",),
                bytes_scanned=4096, lines=40, cut=True, notes=("a note",),
                matches=(LogMatch(signature="sglang_kv_cache_full", count=2, older=1, first=line, last=line,
                                  recent=(line,), last_seq=7, values=(("running_req", "64"),)),
                         LogMatch(signature="kernel_xid", count=1, first=line, last=line, last_seq=7,
                                  key=(("pci", "0000:2b:00"), ("xid", "79")))),
                facts=(ServerFacts(echo="sglang_server_args", server="SGLang", count=2, seq=1,
                                   values=(("tp_size", 8), ("disable_flashinfer_autotune", False),
                                           ("model_path", "/m"), ("mem_fraction_static", 0.88),
                                           ("chunked_prefill_size", None))),)),
        LogScan(path="/var/log/missing.log", status=LogStatus.MISSING, error="no such file"),
    )


def _context():
    return NodeContext(links=(GpuLink(gpu_a=0, gpu_b=1, link="PIX"),), virtualization="kvm", container="none",
                       dmi_product_name="KVM", dmi_sys_vendor="QEMU", hypervisor_flag=True)


def _report():
    """Every kind of host: healthy, busy at low power with samples, partial with problems, down."""
    busy = gpu(
        index=1,
        power_w=90.0,
        clock_event_reasons=("sw_power_cap", "hw_slowdown"),
        samples=[sample(t_s=0.0, power_w=88.0, clock_event_reasons_mask=0x4), sample(t_s=1.0, power_w=92.0)],
    )
    bad_finding = finding(
        host="gpu02",
        gpu=1,
        evidence={"power_w": 90.0, "samples_w": (88.0, 92.0), "reasons": ("sw_power_cap",), "severity": None},
    )
    partial = host_report(
        "gpu03",
        gpus=[gpu(sm=None, compute_capability=None, power_w=None, lost=True)],
        status=HostStatus.PARTIAL,
        readings=node(
            [gpu(sm=None, compute_capability=None, power_w=None, lost=True)],
            hostname="gpu03",
            smi_status=SmiStatus.FAILED,
            smi_message="Unable to determine the device handle for GPU 0000:19:00.0: Unknown Error",
            smi_exit_code=15,
            output_truncated=True,
            problems=("nvidia-smi -q timed out",),
        ),
        error="the collector's output was cut at 1 MiB",
    )
    unknown = finding(host="gpu04", gpu=None, code="HOST_UNREACHABLE", severity=Severity.UNKNOWN, summary="x")
    return sweep(
        host_report("gpu01", gpus=[gpu(index=0), gpu(index=1, name="NVIDIA RTX PRO 6000", sm="SM120")]),
        host_report("gpu02", gpus=[gpu(index=0), busy], findings=[bad_finding], address="10.0.0.2",
                    readings=node([gpu(index=0), busy], hostname="gpu02", logs=_logs(), context=_context())),
        partial,
        host_report("gpu04", status=HostStatus.UNREACHABLE, findings=[unknown], duration_s=None),
    )


def test_round_trip_through_json_text_gives_the_same_report():
    report = _report()

    assert from_document(json.loads(render_json(report, samples_detail=True))) == report


def test_without_samples_detail_the_combined_readings_stay_and_the_samples_go():
    report = _report()
    doc = json.loads(render_json(report))
    busy = doc["hosts"][1]["gpus"][1]

    assert "samples" not in busy and busy["power"]["readings"]["power_draw"] == 90.0
    assert doc["hosts"][1]["node"]["sample_count"] == 5
    back = from_document(doc)
    assert back.hosts[1].gpus[1] == dataclasses.replace(report.hosts[1].gpus[1], samples=())


def test_top_level_keys_in_schema_order():
    doc = to_document(_report())

    assert list(doc) == ["schema", "started_at", "duration_s", "settings", "hosts", "jobs", "notes", "summary"]
    assert doc["schema"] == SWEEP_SCHEMA == "gpudiag.sweep/4"


def test_host_node_gpu_sample_finding_keys():
    doc = to_document(_report())
    host = doc["hosts"][1]

    assert list(host) == [f.name for f in fields(HostReport) if f.name not in ("readings", "findings")] + [
        "action", "node", "gpus", "findings"]
    # Every field in declaration order (nothing listed by hand), then the derived values.
    def names(cls, skip=()):
        return [f.name for f in fields(cls) if f.name not in skip]

    assert list(host["node"]) == names(NodeReadings, skip={"gpus"})
    assert list(host["node"]["logs"][0]) == names(LogScan)
    assert list(host["node"]["logs"][0]["matches"][0]) == names(LogMatch)
    assert list(host["node"]["logs"][0]["facts"][0]) == names(ServerFacts)
    assert list(host["node"]["context"]) == names(NodeContext) + ["interconnect", "is_vm"]
    assert list(host["node"]["context"]["links"][0]) == names(GpuLink) + ["kind"]
    # The raw power readings are not the GPU's keys: they are in its one power object, by source.
    raw_power = {"power_w", "power_instant_w", "energy_power_w"}
    assert list(host["gpus"][0]) == names(GpuReading, skip={"samples"} | raw_power) + [
        "power", "clock_event_reasons"]
    detailed = to_document(_report(), samples_detail=True)["hosts"][1]["gpus"][1]
    assert list(detailed)[-3:] == ["samples", "power", "clock_event_reasons"]
    assert list(detailed["samples"][0]) == names(GpuSample)
    assert list(host["findings"][0]) == ["code", "severity", "host", "gpu", "summary", "evidence", "action"]


def test_every_model_field_is_written():
    """A field added to the model and forgotten here would be lost by the round trip."""
    host = to_document(_report())["hosts"][1]

    assert {f.name for f in fields(NodeReadings)} - {"gpus"} <= set(host["node"])
    scan = host["node"]["logs"][0]
    assert {f.name for f in fields(LogScan)} <= set(scan)
    assert {f.name for f in fields(LogMatch)} <= set(scan["matches"][0])
    assert {f.name for f in fields(ServerFacts)} <= set(scan["facts"][0])
    assert {f.name for f in fields(NodeContext)} <= set(host["node"]["context"])
    assert {f.name for f in fields(GpuLink)} <= set(host["node"]["context"]["links"][0])
    raw_power = {"power_w": "power_draw", "power_instant_w": "power_draw_instant", "energy_power_w": "energy_counter"}
    assert {f.name for f in fields(GpuReading)} - {"samples"} - set(raw_power) <= set(host["gpus"][1])
    assert set(host["gpus"][1]["power"]["readings"]) == set(raw_power.values()) == {s.value for s in PowerSource}
    detailed = to_document(_report(), samples_detail=True)["hosts"][1]
    assert [set(s) for s in detailed["gpus"][1]["samples"]] == [{f.name for f in fields(GpuSample)}] * 2


def test_values_are_written_as_json_values():
    doc = to_document(_report())
    busy = doc["hosts"][1]["gpus"][1]
    partial = doc["hosts"][2]

    assert busy["clock_event_reasons"] == ["sw_power_cap", "hw_slowdown"]
    assert busy["clock_event_reasons_mask"] == 0x4 | 0x8
    assert busy["power"] == {"watts": 90.0, "source": "power_draw", "pct_of_limit": 12.9,
                             "readings": {"energy_counter": None, "power_draw": 90.0, "power_draw_instant": None}}
    assert not {"power_w", "power_instant_w", "energy_power_w"} & set(busy)  # one power figure, no raw beside it
    assert doc["hosts"][1]["findings"][0]["severity"] == "critical"
    assert doc["hosts"][1]["findings"][0]["evidence"]["samples_w"] == [88.0, 92.0]
    assert partial["status"] == "partial"
    assert partial["node"]["smi_status"] == "failed"
    assert partial["node"]["problems"] == ["nvidia-smi -q timed out"]
    assert partial["gpus"][0]["lost"] is True
    assert partial["gpus"][0]["power"] is None
    node = doc["hosts"][1]["node"]
    assert node["logs"][0]["facts"][0]["values"] == {"tp_size": 8, "disable_flashinfer_autotune": False,
                                                    "model_path": "/m", "mem_fraction_static": 0.88,
                                                    "chunked_prefill_size": None}
    assert node["logs"][0]["matches"][1]["key"] == {"pci": "0000:2b:00", "xid": "79"}
    assert node["logs"][1] == {"path": "/var/log/missing.log", "status": "missing", "error": "no such file",
                               "resolved": None, "source": None, "files": [], "bytes_scanned": 0, "lines": 0,
                               "cut": False, "notes": [], "matches": [], "facts": [], "found_from": None,
                               "found_server": None}
    assert node["context"]["links"] == [{"gpu_a": 0, "gpu_b": 1, "link": "PIX", "kind": "pcie"}]
    assert (node["context"]["interconnect"], node["context"]["is_vm"]) == ("pcie", True)
    assert doc["hosts"][0]["node"]["logs"] == [] and doc["hosts"][0]["node"]["context"] is None


def test_host_that_did_not_answer_has_null_node_and_no_gpus():
    down = to_document(_report())["hosts"][3]

    assert down["status"] == "unreachable"
    assert down["error"] == "could not connect: connection refused"
    assert down["node"] is None
    assert down["gpus"] == []
    assert down["duration_s"] is None


@pytest.mark.parametrize(
    ("power_w", "enforced_power_limit_w", "expected"),
    [
        (330.0, 600.0, 55.0),
        (100.0, 300.0, 33.3),
        (90.0, 700.0, 12.9),
        (None, 600.0, None),  # [N/A] power is no reading, not 0 W
        (330.0, None, None),
        (330.0, 0.0, None),  # a limit of 0 is no limit to divide by
    ],
)
def test_power_pct_of_limit(power_w, enforced_power_limit_w, expected):
    g = gpu(power_w=power_w, enforced_power_limit_w=enforced_power_limit_w)
    (written,) = to_document(sweep(host_report("h", gpus=[g])))["hosts"][0]["gpus"]
    assert "power_pct_of_limit" not in written  # schema 3: the share is said once, in the power object
    assert (written["power"] or {}).get("pct_of_limit") == expected


def test_summary_counts():
    summary = to_document(_report())["summary"]

    assert summary == {
        "hosts": 4,
        "hosts_by_status": {
            "ok": 2, "partial": 1, "unreachable": 1, "timeout": 0, "auth_failed": 0,
            "host_key_rejected": 0, "error": 0, "cancelled": 0,
        },
        "gpus": 5,
        "gpus_by_sm": {"SM90": 3, "SM120": 1, "unknown": 1},
        "findings_by_code": {"BUSY_LOW_POWER": 1, "HOST_UNREACHABLE": 1},
        "findings_by_severity": {"ok": 0, "warning": 0, "critical": 1, "unknown": 1},
        "gpus_held_idle": 0,
        "exit_code": 2,
    }  # fmt: skip


def test_summary_of_an_empty_sweep():
    summary = to_document(sweep())["summary"]

    assert summary["hosts"] == 0
    assert set(summary["hosts_by_status"]) == {s.value for s in HostStatus}
    assert summary["gpus_by_sm"] == {}
    assert summary["findings_by_code"] == {}
    assert summary["exit_code"] == 0


def test_non_finite_numbers_are_written_as_null():
    report = sweep(host_report("gpu01", gpus=[gpu(power_w=math.nan, temperature_c=math.inf)]))

    text = render_json(report)  # allow_nan=False: this raises if a NaN got through

    assert json.loads(text)["hosts"][0]["gpus"][0]["power"]["readings"]["power_draw"] is None
    assert json.loads(text)["hosts"][0]["gpus"][0]["temperature_c"] is None


def test_render_json_is_indented_and_stable():
    report = _report()

    assert render_json(report) == render_json(report)
    assert render_json(report).startswith('{\n  "schema": "gpudiag.sweep/4",\n  "started_at"')


@pytest.mark.parametrize("schema", ["gpudiag.sweep/5", "gpudiag.probe/1", None])
def test_from_document_refuses_another_schema(schema):
    doc = to_document(_report())
    doc["schema"] = schema

    with pytest.raises(ValueError, match="not a gpudiag.sweep/4 document") as info:
        from_document(doc)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda doc: doc.pop("hosts"), "missing key 'hosts'"),
        (lambda doc: doc["hosts"][0].update(status="asleep"), "'asleep' is not a valid HostStatus"),
        (lambda doc: doc["hosts"][1]["findings"][0].update(severity="dire"), "unknown severity 'dire'"),
        (lambda doc: doc["hosts"][0]["gpus"][0].update(index=None), "a required value is null"),
        (lambda doc: doc["hosts"][0].update(node=None), "lists GPUs but has no node object"),
    ],
)
def test_from_document_refuses_a_malformed_document_in_one_line(damage, message):
    doc = json.loads(render_json(_report()))
    damage(doc)

    with pytest.raises(ValueError, match="malformed gpudiag.sweep/4 document") as info:
        from_document(doc)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_from_document_ignores_derived_values():
    doc = to_document(_report(), samples_detail=True)
    doc["hosts"][1]["gpus"][1]["power"]["pct_of_limit"] = 99.0
    doc["summary"] = {"exit_code": 0}

    assert from_document(doc) == _report()


def test_a_schema_3_document_is_read_as_schema_4():
    """Shards written by gpudiag.sweep/3 still merge: their GPUs carry the raw power readings as their own keys
    (power_w, power_instant_w, energy_power_w) and the power object without them."""
    report = _report()
    doc = to_document(report, samples_detail=True)
    doc["schema"] = "gpudiag.sweep/4"
    for host in doc["hosts"]:
        for g in host["gpus"]:
            raw = (g["power"] or {}).pop("readings", {})
            g.update(power_w=raw.get("power_draw"), power_instant_w=raw.get("power_draw_instant"),
                     energy_power_w=raw.get("energy_counter"))

    assert from_document(doc) == report


def test_a_schema_2_document_is_read_as_schema_3():
    """Shards written by gpudiag.sweep/2 still merge: the share said twice (power_pct_of_limit beside the
    power object) is a derived value, not read back; there is no settings block (not known)."""
    report = dataclasses.replace(_report(), settings=CheckSettings(low_power_pct=40.0))
    doc = to_document(report, samples_detail=True)
    doc["schema"] = "gpudiag.sweep/2"
    del doc["settings"]
    for host in doc["hosts"]:
        for g in host["gpus"]:
            g["power_pct_of_limit"] = (g["power"] or {}).get("pct_of_limit")

    assert from_document(doc) == dataclasses.replace(report, settings=None)


def test_the_settings_block_is_written_and_read_back():
    report = dataclasses.replace(_report(), settings=CheckSettings(low_power_pct=40.0))
    doc = to_document(report)

    assert doc["settings"] == {f.name: getattr(CheckSettings(low_power_pct=40.0), f.name)
                               for f in fields(CheckSettings)}
    assert doc["settings"]["low_power_pct"] == 40.0
    assert from_document(json.loads(render_json(report))).settings == CheckSettings(low_power_pct=40.0)
    assert to_document(_report())["settings"] is None  # a report that does not say: null, not the defaults


def test_a_schema_1_document_is_read_as_schema_3():
    """Shards written before schema 2 still merge: power_limit_w and reason names are read as today's."""
    doc = to_document(_report(), samples_detail=True)
    doc["schema"] = "gpudiag.sweep/1"
    busy = doc["hosts"][1]["gpus"][1]
    busy["power_limit_w"] = busy.pop("enforced_power_limit_w")
    del busy["clock_event_reasons_mask"]  # schema 1 had only the names

    assert from_document(doc) == _report()


def test_scheduler_state_and_unreachable_reason_are_written_and_read_back():
    plain_report = _report()
    assert all(h["scheduler_state"] is None for h in to_document(plain_report)["hosts"])  # not reported
    drained = dataclasses.replace(plain_report.hosts[1], scheduler_state="drained", scheduler_reason="rma: fan")
    refused = dataclasses.replace(plain_report.hosts[3], unreachable_reason=UnreachableReason.REFUSED)
    report = dataclasses.replace(plain_report, hosts=(plain_report.hosts[0], drained, plain_report.hosts[2], refused))
    doc = to_document(report)
    assert (doc["hosts"][1]["scheduler_state"], doc["hosts"][1]["scheduler_reason"]) == ("drained", "rma: fan")
    assert doc["hosts"][3]["unreachable_reason"] == "refused"
    assert from_document(json.loads(render_json(report, samples_detail=True))) == report


def test_orjson_and_the_standard_library_write_the_same_text():
    """With the fast extra the report's text must not change: orjson and json.dumps, byte for byte."""
    orjson = pytest.importorskip("orjson")  # installed by the test extra: CI runs this
    from gpudiag.report import json_report

    doc = to_document(_report(), samples_detail=True)
    doc["hosts"][0]["node"]["hostname"] = "gpu01 – ünïcode ✓"
    standard = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False)
    assert orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() == standard
    assert json_report.dumps(doc) == standard
    assert json_report.dumps({"big": 2**70}) == '{\n  "big": 1180591620717411303424\n}'


def test_a_sweep_stopped_by_a_signal_says_so_and_reads_back():
    stopped = dataclasses.replace(_report(), stopped_by="SIGTERM")
    doc = to_document(stopped)
    assert doc["stopped_by"] == "SIGTERM" and doc["summary"]["exit_code"] == 143
    assert from_document(json.loads(json.dumps(doc))).stopped_by == "SIGTERM"
    assert "stopped_by" not in to_document(_report())  # the key is there only when a signal stopped the sweep
