"""One bad value costs that value, never the host (issue 30, fault matrix #2 and #7). Before: a listener on
the RAS port answering ``[`` 200,000 times raised RecursionError (only ValueError was caught) and the host
read "error" with 0 GPUs; a compute capability "².0" passed isdigit() and failed int(); a 5,000-digit NVLink
counter passed the pattern and failed int() past Python's digit limit; a webhook status line
``HTTP/1.1 \\xb200`` crashed the end of the run."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from gpudiag.audit.webhook import WebhookError, _status_line
from gpudiag.collect.parse import parse_probe
from gpudiag.collect.parse_links import parse_links
from gpudiag.model.arch import parse_compute_capability

DATA = Path(__file__).resolve().parents[2] / "data"
NVML_DOC = json.loads((DATA / "h200_580.159_idle" / "nvml.json").read_text())
GPUS = len(NVML_DOC["nvml"]["gpus"])


def test_a_ras_answer_nested_past_the_recursion_limit_costs_the_ras_reading() -> None:
    doc = copy.deepcopy(NVML_DOC)
    doc["nccl_ras"] = {"asked": True, "port": 28028, "from": "default", "format": "json", "answer": "[" * 200_000}
    node = parse_probe(doc)
    assert len(node.gpus) == GPUS and node.nccl_ras is not None and node.nccl_ras.answered is False


@pytest.mark.parametrize("cc", ["².0", "12.²", "9" * 5000 + ".0", "１２.0"])
def test_a_compute_capability_of_other_digits_is_not_reported(cc: str) -> None:
    assert parse_compute_capability(cc) is None
    doc = copy.deepcopy(NVML_DOC)
    doc["nvml"]["gpus"][0]["compute_capability"] = cc
    node = parse_probe(doc)
    assert len(node.gpus) == GPUS and node.gpus[0].sm is None and node.gpus[0].uuid  # the GPU itself is read


def test_a_5000_digit_nvlink_counter_costs_that_counter() -> None:
    def answer(crc: str) -> dict[str, str]:
        return {"stdout": f"GPU 0: NVIDIA H200 (UUID: GPU-0)\n\t Link 0: Replay Errors: 0\n"
                          f"\t Link 0: CRC Errors: {crc}\n\t Link 1: CRC Errors: 7\n"}

    links, _ = parse_links({"nvlink_smi": {"start": answer("1"), "end": answer("9" * 5000),
                                           "status": {"stdout": "GPU 0: x\n\t Link 0: 26.562 GB/s\n"}}})
    assert links  # the other counters of the GPU are read
    doc = copy.deepcopy(NVML_DOC)
    doc["nvml"]["nvlink"] = {"start": {"0": {"crc": [10**5000]}}, "end": {"0": {"crc": [10**5000]}}}
    assert len(parse_probe(doc).gpus) == GPUS


def test_a_section_no_parser_foresaw_costs_that_section(monkeypatch: pytest.MonkeyPatch) -> None:
    """The net under every section: whatever one raises, the host keeps its GPUs and says what was left out."""
    import gpudiag.collect.parse as parse

    def broken(value: object) -> None:
        raise MemoryError("the test's")

    monkeypatch.setattr(parse, "parse_nccl_ras", broken)
    node = parse_probe(copy.deepcopy(NVML_DOC))
    assert len(node.gpus) == GPUS and node.nccl_ras is None
    assert "the node's NCCL RAS section could not be read (MemoryError); left out" in node.problems


@pytest.mark.parametrize("line", [b"HTTP/1.1 \xb200 OK", b"HTTP/1.1 \xb2\xb2\xb2", "HTTP/1.1 ２００ OK".encode()])
def test_a_webhook_status_of_other_digits_is_no_status(line: bytes) -> None:
    with pytest.raises(WebhookError, match="not an HTTP answer"):
        _status_line(line)
