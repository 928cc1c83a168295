"""The regex lint sees ``X.*Y.*Z`` chains (issue 30, fault matrix #8): two repeats over the same characters with
only what the first also takes between them. Before, only adjacent repeats were seen (``.*.*``): one 3,000-
character line used the node's 7 s scan budget and a critical CUDA signature on the log was lost."""

from __future__ import annotations

import pytest

from gpudiag.logs.regex_lint import backtracking_risk


@pytest.mark.parametrize("regex", [r"X.*Y.*Z", r"X.*Y.*Y.*Z", r"error: .* in .*\(\)$",
                                   r"a.*b[^c]*c", r"CUDA.*failed.*code (\d+)"])
def test_a_chain_over_the_same_characters_is_refused(regex: str) -> None:
    assert backtracking_risk(regex) is not None and "like X.*Y.*Z" in (backtracking_risk(regex) or "")


@pytest.mark.parametrize("regex", [r"X.*Y.*", r"a\s+b\s+c\s*d", r"X[^Y]*Y.*Z", r"NCCL WARN .*failed", r"(\d+):(\d+)",
                                   r"foo (\S+) bar (\S+) baz", r"Xid \(PCI:([0-9a-f:.]+)\): (\d+), .*",
                                   r"^\[(\d+)\] .*$"])
def test_what_cannot_chain_is_let_be(regex: str) -> None:
    assert backtracking_risk(regex) is None
