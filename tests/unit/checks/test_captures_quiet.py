"""Every real capture in the repository (tests/data: the H200's probe documents of both paths, recorded
sweeps, the field-by-field capture of driver 580) runs through every check, and none of issue 20's findings
fires: a health sweep of healthy GPUs must stay quiet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudiag.checks import CheckSettings, evaluate
from gpudiag.collect.parse import parse_probe
from gpudiag.model import HostStatus, NodeReadings
from gpudiag.model.report import SWEEP_SCHEMAS_READ
from gpudiag.report.json_report import from_document
from gpudiag_node.smi import choose_fields, known_fields
from gpudiag_node.wire import SCHEMA as PROBE_SCHEMA

DATA = Path(__file__).resolve().parents[2] / "data"
NEW_CODES = {"ROW_REMAP_PENDING", "ROW_REMAP_FAILED", "RETIRED_PAGES_PENDING", "ECC_DISABLED", "ECC_MODE_PENDING",
             "RECOVERY_ACTION", "NVLINK_DOWN", "NVLINK_ERRORS", "FABRIC_NOT_READY", "PERSISTENCE_OFF"}


def field_capture_document(path: Path, help_text: str) -> dict[str, object]:
    """A one-sample nvidia-smi document of every field the collector asks for, each value taken from a
    field-by-field capture of the real H200: ``fields.tsv`` (field, exit, header, with units, ``nounits``)
    or ``every_field.csv`` (field, exit, value as ``csv,noheader`` prints it, units and all)."""
    values = {}
    for line in path.read_text().splitlines():
        cells = line.split("\t")
        if len(cells) >= 3:
            values[cells[0]] = cells[4] if len(cells) >= 5 else cells[2]
    values.setdefault("clocks.sm", values.get("clocks.current.sm", ""))
    chosen = choose_fields(known_fields(help_text))
    row = ", ".join(values[name] for _, name in chosen)
    return {"schema": PROBE_SCHEMA, "collector": "python", "host": {"hostname": "h200", "kernel": "6"},
            "nvidia_smi": {"path": "/usr/bin/nvidia-smi", "help_exit": 0},
            "fields": [list(f) for f in chosen], "samples": [{"t_s": 0.0, "exit": 0, "stdout": row + "\n"}],
            "cuda_version": "13.0", "problems": []}


def captures() -> list[tuple[str, list[NodeReadings]]]:
    found: list[tuple[str, list[NodeReadings]]] = []
    for path in sorted(DATA.rglob("*.json")):
        if "golden" in path.parts:
            continue  # made by the tests themselves, not read off a machine
        doc = json.loads(path.read_text())
        if not isinstance(doc, dict):
            continue
        if doc.get("schema") == PROBE_SCHEMA:
            found.append((str(path.relative_to(DATA)), [parse_probe(doc)]))
        elif doc.get("schema") in SWEEP_SCHEMAS_READ:
            nodes = [h.readings for h in from_document(doc).hosts if h.readings is not None]
            found.append((str(path.relative_to(DATA)), nodes))
    help_text = (DATA / "h200_580.159_fields" / "help-query-gpu.txt").read_text()  # the same driver's
    for capture in sorted([*DATA.rglob("fields.tsv"), *DATA.rglob("every_field.csv")]):
        found.append((str(capture.relative_to(DATA)), [parse_probe(field_capture_document(capture, help_text))]))
    return found


CAPTURES = captures()


def test_the_captures_are_many_and_read_gpus() -> None:
    """The sweep below is not vacuous: it covers dozens of documents, each with a GPU read."""
    assert len(CAPTURES) >= 40
    assert all(any(node.gpus for node in nodes) for _, nodes in CAPTURES)


@pytest.mark.parametrize(("name", "nodes"), CAPTURES, ids=[name for name, _ in CAPTURES])
def test_no_new_finding_fires_on_a_real_capture(name: str, nodes: list[NodeReadings]) -> None:
    for node in nodes:
        codes = {f.code for f in evaluate("h200", HostStatus.OK, None, node, CheckSettings())}
        assert not codes & NEW_CODES, f"{name}: {sorted(codes & NEW_CODES)}"


def test_the_field_capture_reads_the_healthy_values() -> None:
    """The real H200's values of issue 20's readings, nvidia-smi path: zeros, "No", ECC on, no recovery."""
    (node,) = dict(CAPTURES)["h200_580.159_fields/fields.tsv"]
    (g,) = node.gpus
    assert (g.remapped_rows_correctable, g.remapped_rows_uncorrectable, g.remapped_rows_pending,
            g.remapped_rows_failure) == (0, 0, False, False)
    assert (g.retired_pages_sbe, g.retired_pages_dbe, g.retired_pages_pending) == (None, None, None)  # [N/A]: Hopper
    assert (g.ecc_mode_enabled, g.ecc_mode_pending_enabled, g.ecc_uncorrected, g.ecc_corrected,
            g.ecc_uncorrected_aggregate, g.ecc_corrected_aggregate) == (True, True, 0, 0, 0, 0)
    assert (g.gpu_recovery_action, g.persistence_mode_enabled, g.compute_mode) == ("none", True, "default")
    assert (g.mig_mode_enabled, g.mig_mode_pending_enabled) == (False, False)
    assert (g.vbios_version, g.inforom_image_version) == ("96.00.A5.00.1A", "G520.0282.02.02")
    assert (g.fabric_state, g.fabric_status, g.fabric_health) == (None, None, None)  # N/A: no fabric in this VM
    assert (g.memory_temperature_c, g.temperature_c) == (36.0, 33.0)
    assert g.nvlinks == () and g.failed_readings == ()


def test_the_health_capture_reads_the_healthy_values_and_the_aggregate_quirk() -> None:
    """bench/device_capture.sh's every field of the H200 (tests/data/h200_580.159_health): the same healthy
    values; nvidia-smi's aggregate uncorrected total reads 2 (SRAM, L2: since manufacture) where NVML's
    total reads 0 - evidence only, no finding rests on it."""
    (node,) = dict(CAPTURES)["h200_580.159_health/every_field.csv"]
    (g,) = node.gpus
    assert (g.remapped_rows_pending, g.remapped_rows_failure, g.ecc_mode_enabled, g.gpu_recovery_action) == (
        False, False, True, "none")
    assert (g.ecc_uncorrected, g.ecc_uncorrected_aggregate, g.memory_temperature_c) == (0, 2, 35.0)
    assert (g.memory_total_mib, g.power_w) == (143771.0, 78.25)  # values with units, as csv,noheader prints them
