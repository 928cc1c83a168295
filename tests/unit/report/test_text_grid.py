"""The GPU table drawn without rich (gpudiag.report.text_grid, the plain-text path: a pipe, a file, a wide
terminal, no colour) is the text rich draws for it. rich still draws the coloured table, whose text with its
colour codes taken out must read the same: so each case is rendered both ways, by the real renderers."""

from __future__ import annotations

import re

import pytest
from builders import finding, gpu, host_report, sweep

from gpudiag.model import HostStatus, Severity
from gpudiag.report.table import render_table

_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def _both_ways(report, width: int, fold: bool) -> tuple[str, str]:
    plain = render_table(report, width=width, fold=fold)
    coloured = render_table(report, width=width, fold=fold, color=True)
    return plain, "".join(line.rstrip() + "\n" for line in _COLOUR.sub("", coloured).splitlines())


def _varied(count: int, **gpu_overrides: object):
    """``count`` 8-GPU hosts, each GPU drawing its own power (no two rows fold)."""
    return sweep(*(host_report(f"gpu{h:03d}", gpus=[gpu(index=i, power_w=300.0 + 7 * h + i, **gpu_overrides)
                                                    for i in range(8)]) for h in range(count)))


CASES = {
    "every row": (_varied(5), 160, False),
    "folded: a range over '(N hosts)', GPUs of a host in one row": (
        sweep(*(host_report(f"gpu{h:02d}", gpus=[gpu(index=i) for i in range(8)]) for h in range(1, 13))), 160, True),
    "a finding, a host without GPUs, a wide-character name": (
        sweep(host_report("gpu01", gpus=[gpu(index=0, name="NVIDIA \u663e\u5361 H100"), gpu(index=1, power_w=90.0)],
                          findings=[finding(gpu=1, severity=Severity.WARNING)]),
              host_report("gpu02", status=HostStatus.UNREACHABLE)), 160, True),
    "a control character in the name (escaped, so wider)": (
        _varied(2, name="NVIDIA H100\x1b]0;owned\x07"), 160, False),
    "just wide enough at 100 columns": (_varied(3), 100, False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_plain_table_is_the_text_rich_draws(case: str) -> None:
    report, width, fold = CASES[case]
    plain, rich_drawn = _both_ways(report, width, fold)
    assert plain == rich_drawn
    assert "\u2500" * 10 in plain  # the header's rule: a GPU table was drawn


def test_a_table_too_wide_for_its_columns_is_left_to_rich() -> None:
    # At 70 columns the columns fold or are left out: rich lays that out, and says what was left out.
    plain, rich_drawn = _both_ways(_varied(2), 70, False)
    assert plain == rich_drawn and "(not shown at 70 columns" in plain
