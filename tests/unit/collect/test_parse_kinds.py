"""The reading kinds are typed in one table (gpudiag.collect.kinds.KINDS): every kind the readings table
(gpudiag_node.readings) uses has its entry there, and a value goes the same way from nvidia-smi's words and from
NVML's number."""

from __future__ import annotations

import pytest

from gpudiag.collect.kinds import KINDS, from_number, from_words
from gpudiag_node.readings import READINGS


def test_every_kind_the_readings_use_is_in_the_one_table() -> None:
    assert {r.kind for r in READINGS} <= set(KINDS)


@pytest.mark.parametrize(("kind", "words", "number", "value"), [
    ("number", "301.5 W", 301.5, 301.5), ("int", "7", 7, 7), ("mask", "0x4", 4, 4), ("flag", "Yes", 1, True)])
def test_words_and_numbers_give_the_same_value(kind: str, words: str, number: float, value: object) -> None:
    assert from_words(kind, words, words.lower()) == (value, None) == from_number(kind, number)


@pytest.mark.parametrize(("kind", "words", "why"), [
    ("int", "lots", "not a number: 'lots'"), ("flag", "Maybe", "not a yes/no: 'Maybe'"),
    ("cc", "nine", "not a compute capability: 'nine'"), ("number", "2e16", "out of range: 2e+16")])
def test_a_value_that_is_not_its_kind_is_a_failed_read(kind: str, words: str, why: str) -> None:
    assert from_words(kind, words, words.lower()) == (None, why)
