"""The collector's JSON without the json package (collectors/gpudiag_node/jsoncodec.py): byte for byte json's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudiag_node import jsoncodec

DATA = Path(__file__).resolve().parents[2] / "data"

TRICKY = {
    "text": "caf\u00e9 \u2603 \ud83d\ude00 tab\t nl\n quote\" backslash\\ nul\x00 del\x7f",
    "surrogate": "\udcff",  # a file name read with surrogateescape
    "numbers": [0, -1, 2**70, 0.1, 1e300, -2.5e-8, 700.0, float("inf"), float("-inf")],
    "nested": {"a": [{"b": None}, True, False, []], "": {}},
    "int_key": {1: "one"},
}


@pytest.mark.parametrize("document", [TRICKY, *(json.loads(p.read_text()) for p in sorted(DATA.glob("*/probe.json")))],
                         ids=lambda d: "tricky" if d is TRICKY else "probe.json")
def test_dumps_writes_what_json_writes(document: object) -> None:
    assert jsoncodec.dumps(document) == json.dumps(document, separators=(",", ":"))


def test_the_c_accelerator_is_used_not_the_json_package() -> None:
    assert jsoncodec.dumps.__name__ == "_c_dumps" and jsoncodec.loads.__name__ == "_c_loads"


def test_loads_reads_what_json_reads() -> None:
    text = json.dumps(TRICKY)
    assert jsoncodec.loads(text) == json.loads(text)
    assert jsoncodec.loads(b' {"a": NaN} ')["a"] != jsoncodec.loads(b' {"a": NaN} ')["a"]  # NaN, as json


@pytest.mark.parametrize("text", ["", "{", '{"a": 1', "[1, 2] x", "nope", '{"a": 1}{'])
def test_loads_refuses_what_json_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):  # never StopIteration or IndexError: the collector catches ValueError
        jsoncodec.loads(text)


def test_an_object_json_cannot_write_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        jsoncodec.dumps({"a": {1}})
