"""Compute capability → SM name and family: classified on (major, minor), never on ``major >= N``."""

from __future__ import annotations

import pytest

from gpudiag.model.arch import arch_name, parse_compute_capability, sm_name


@pytest.mark.parametrize("text, sm, arch", [
    ("9.0", "SM90", "Hopper"),
    ("10.0", "SM100", "Blackwell (datacenter)"),
    ("10.3", "SM103", "Blackwell (datacenter)"),
    ("12.0", "SM120", "Blackwell (RTX)"),
    ("12.1", "SM121", "Blackwell (RTX)"),
    ("8.9", "SM89", "Ada Lovelace"),
    ("8.0", "SM80", "Ampere"),
    ("13.0", "SM130", None),  # a future major is unknown, not guessed
    ("[N/A]", None, None),
    ("", None, None),
])
def test_classification(text: str, sm: str | None, arch: str | None) -> None:
    cc = parse_compute_capability(text)
    assert sm_name(cc) == sm
    assert arch_name(cc) == arch


def test_sm100_and_sm120_are_different_families() -> None:
    assert arch_name((10, 0)) != arch_name((12, 0))
