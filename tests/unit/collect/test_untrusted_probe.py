"""Whatever a node sends, the controller's time and memory stay bounded and the parser is total (issue 14,
items 2 and 8): what one host may claim is bounded (GPUs, indexes, samples, log matches, strings, problems),
excess is a PROBE_INCOMPLETE finding for that host, a bad field is a missing reading and a bad document is
one :class:`ProbeFormatError`. Hypothesis fuzzes documents built from the recorded captures."""

from __future__ import annotations

import copy
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudiag.checks import CheckSettings, evaluate
from gpudiag.collect.parse import ProbeFormatError, parse_probe, parse_probe_output
from gpudiag.collect.parse_logs import parse_context, parse_logs, parse_topology
from gpudiag.model import HostStatus

DATA = Path(__file__).resolve().parents[2] / "data"
SMI_DOC = json.loads((DATA / "h200_580.159_idle" / "probe.json").read_text())
NVML_DOC = json.loads((DATA / "h200_580.159_idle" / "nvml.json").read_text())
CONTEXT_DOC = json.loads((DATA / "h200x2_580.159_context" / "probe-context.json").read_text())
# What these documents cost in time is measured by bench/hostile_inputs.py (tests assert no wall time); here,
# what bounds the work: the rows, GPUs, lines and bytes read (the 300,000-row document took 2.7 GB before).


def _smi(stdout: str, *, samples: int = 1) -> dict[str, Any]:
    doc = copy.deepcopy(SMI_DOC)
    doc["fields"] = [["index", "index"], ["name", "name"]]
    doc["samples"] = [{"t_s": 0.1 * i, "exit": 0, "stdout": stdout, "stderr": ""} for i in range(samples)]
    return doc


def _incomplete(doc: dict[str, Any]) -> tuple[Any, list[Any]]:
    node = parse_probe(doc)
    findings = evaluate("h", HostStatus.OK, None, node, CheckSettings())
    return node, [f for f in findings if f.code == "PROBE_INCOMPLETE"]


def test_a_huge_gpu_index_is_refused_and_said() -> None:
    node, incomplete = _incomplete(_smi("0, NVIDIA H200\n100000000, NVIDIA H200\n"))
    assert [g.index for g in node.gpus] == [0]
    assert incomplete and "100000000" in incomplete[0].summary


@pytest.mark.scale
def test_300000_gpu_rows_cost_bounded_memory() -> None:
    stdout = "".join(f"{i}, G\n" for i in range(300_000))
    assert len(stdout) < 4 * 1024 * 1024
    raw = json.dumps(_smi(stdout)).encode()
    tracemalloc.start()
    try:
        node = parse_probe_output(raw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * 1024 * 1024
    assert len(node.gpus) == 64
    assert any("GPU" in p and "300000" in p for p in node.problems)


def test_samples_per_gpu_are_bounded() -> None:
    node, incomplete = _incomplete(_smi("0, NVIDIA H200\n", samples=5000))
    assert len(node.gpus[0].samples) <= 600 and incomplete


def test_lost_gpu_lines_and_messages_are_bounded() -> None:
    stdout = "".join(f"Unable to determine the device handle for GPU{i:08x}:00:00.0: Unknown Error\n"
                     for i in range(100_000)) + "".join(f"message {i}\n" for i in range(100_000))
    node, incomplete = _incomplete(_smi(stdout))
    assert len(node.gpus) <= 64 and len(node.smi_message or "") <= 500 and incomplete


def test_strings_and_problems_are_bounded() -> None:
    doc = copy.deepcopy(SMI_DOC)
    doc["host"] = {"hostname": "h" * 1_000_000, "kernel": "k" * 1_000_000}
    doc["problems"] = [f"problem {i}" for i in range(100_000)]
    doc["cuda_version"] = "9" * 100_000
    node, incomplete = _incomplete(doc)
    assert len(node.hostname or "") <= 259 and len(node.kernel or "") <= 259 and len(node.cuda_version or "") <= 259
    assert len(node.problems) <= 21 and incomplete
    assert len(incomplete[0].summary) < 1000


@pytest.mark.scale
def test_log_claims_are_bounded() -> None:
    line = {"seq": 1, "text": "x" * 1_000_000}
    match = {"count": 5, "older": 0, "first": line, "last": line, "recent": [line] * 10_000,
             "values": {f"k{i}": "v" * 10_000 for i in range(10_000)}}
    keyed = {"count": 1, "group_by": ["pci"], "keys": [{"key": [str(i)], "count": 1, "first": line, "last": line}
                                                       for i in range(10_000)]}
    source = {"path": "p" * 100_000, "status": "ok", "files": ["f"] * 100_000, "notes": ["n"] * 100_000,
              "matches": {**{f"s{i}": match for i in range(2_000)}, "keyed": keyed},
              "echoes": {f"e{i}": {"count": 1, "seq": 1, "text": "t", "start": 0} for i in range(10_000)}}
    doc = copy.deepcopy(SMI_DOC)
    doc["logs"] = [source] * 100
    node, incomplete = _incomplete(doc)
    assert len(node.logs) <= 32 and incomplete
    matches = [m for scan in node.logs for m in scan.matches]
    lines = [x for m in matches for x in (m.first, m.last, *m.recent) if x is not None]
    assert len(matches) <= 1024 and len(lines) <= 4096  # in all of the host's logs
    for scan in node.logs:
        assert len(scan.facts) <= 64 and len(scan.path) <= 4099 and len(scan.files) <= 16 and len(scan.notes) <= 16
    assert all(len(m.recent) <= 100 and len(m.values) <= 64 for m in matches)
    assert all(len(x.text) <= 2003 for x in lines)


# ------------------------------------------------------------------------------------ parsers are total


@pytest.mark.parametrize("raw", [
    b'{"schema": "gpudiag.probe/2", "x": ' + b"9" * 5000 + b"}",  # more digits than int() takes
    b"[" * 100_000 + b"]" * 100_000,
    b'{"schema": "gpudiag.probe/2", "problems": ' + b"[" * 900 + b"]" * 900 + b"}",
    b"\xff\xfe junk",
    b"",
], ids=["5000-digits", "nested-100000", "nested-900", "junk", "empty"])
def test_a_bad_document_is_one_probe_format_error(raw: bytes) -> None:
    try:
        parse_probe_output(raw)
    except ProbeFormatError as exc:
        assert "\n" not in str(exc)


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), 10**4000, -(10**400), 1e308,
                                   "9" * 5000, "1e999", "0x" + "f" * 5000, "x" * 200_000, [], {}, True],
                         ids=lambda v: repr(v)[:20])
def test_a_bad_field_is_a_missing_reading(value: Any) -> None:
    nvml = copy.deepcopy(NVML_DOC)
    for gpu in nvml["nvml"]["gpus"]:
        for key in list(gpu):
            if key != "index":
                gpu[key] = value
    for sample in nvml["nvml"]["samples"]:
        sample["t_s"] = value
        for row in sample["rows"]:
            for key in list(row):
                if key != "index":
                    row[key] = value
    for entry in nvml["nvml"].get("energy", []):
        entry["energy_mj"], entry["window_s"] = value, value
    smi = _smi(f"0, {value}\n")
    smi["fields"] = [["index", "index"], ["power_w", "power.draw"]]
    for doc in (nvml, smi):
        node = parse_probe_output(json.dumps(doc).encode())
        evaluate("h", HostStatus.OK, None, node, CheckSettings())
        for gpu in node.gpus:
            assert gpu.power_w is None or abs(gpu.power_w) < 1e300


NO_PAIR = "nvidia-smi topo -m listed no GPU pair"


@pytest.mark.scale
@pytest.mark.parametrize(("text", "error"), [
    # One line that reads as one GPU's row (a one-GPU node has no pair to list): no links, and no error.
    ("GPU" + "9" * 5000 + "\tGPU1\n", None),
    ("\tGPU0\tGPU1\nGPU0\tX\nGPU" + "1" * 5000 + "\tNV\tX\n", NO_PAIR),
    ("\tGPU٣\nGPU٣\tX\n", NO_PAIR),
    ("\t".join(["GPU0"] * 100_000), None),
    ("\x00\x1b[" * 1000, NO_PAIR),
], ids=["5000-digit-header", "5000-digit-row", "arabic-digit", "100000-columns", "controls"])
def test_bad_topology_text_reads_as_no_links(text: str, error: str | None) -> None:
    assert parse_topology(text) == ()
    context = parse_context({"topology": {"exit": 0, "stdout": text}})
    assert context is not None and context.links == () and context.topology_error == error


DANGEROUS = st.sampled_from([10**4000, -(10**400), 2**64 + 1, float("inf"), float("nan"), 1e308, -1, "1e999",
                             "[Unknown Error]", "0x" + "f" * 40, "9" * 400, "\x1b]0;x\x07"])
JUNK = st.recursive(
    DANGEROUS | st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value[:3]):
            found += _paths(inner, (*prefix, i))
    return found


BASES = (SMI_DOC, NVML_DOC, CONTEXT_DOC)
PATHS = tuple(tuple(_paths(base)) for base in BASES)


@pytest.mark.scale
@settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.integers(0, len(BASES) - 1), data=st.data())
def test_fuzzed_documents_read_or_fail_in_one_clear_error(base: int, data: st.DataObject) -> None:
    doc = copy.deepcopy(BASES[base])
    for _ in range(data.draw(st.integers(1, 12))):
        path = data.draw(st.sampled_from(PATHS[base]))
        if not path:
            continue
        target: Any = doc
        try:
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = data.draw(DANGEROUS | JUNK)
        except (KeyError, IndexError, TypeError):
            continue
    try:
        raw = json.dumps(doc).encode()
    except ValueError:
        return
    try:
        node = parse_probe_output(raw)
    except ProbeFormatError:
        return
    evaluate("h", HostStatus.OK, None, node, CheckSettings())


@settings(deadline=None, max_examples=100)
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_fuzzed_bytes_read_or_fail_in_one_clear_error(raw: bytes) -> None:
    try:
        parse_probe_output(b'{"schema": "gpudiag.probe/2", ' + raw)
    except ProbeFormatError:
        pass


@pytest.mark.scale
@settings(deadline=None, max_examples=100)
@given(JUNK)
def test_fuzzed_logs_and_context_parts_are_read(value: Any) -> None:
    parse_logs(value)
    parse_logs([value])
    parse_logs([{"matches": value, "echoes": value, "files": value}])
    parse_context(value)
    parse_context({"topology": value, "virt": value, "dmi": value})
    if isinstance(value, str):
        parse_topology(value)
