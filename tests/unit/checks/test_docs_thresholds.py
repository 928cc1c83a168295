"""The check thresholds' defaults that README.md and docs/ state are the code's (``CheckSettings()``).

Two spellings are read, wherever they appear in README.md and docs/*.md: a table row that starts with the
setting's name and its default (``| `low_power_pct` | 60 | ...``), and an inline ``` `low_power_pct = 60` ```.
docs/findings.md's table must list every setting, so a new threshold is documented with its default."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from gpudiag.checks.settings import CheckSettings

REPO = Path(__file__).resolve().parents[3]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
NAMES = {f.name for f in dataclasses.fields(CheckSettings)}
ROW = re.compile(r"^\|\s*`(?P<name>[a-z_]+)`\s*\|\s*(?P<value>[0-9]+(?:\.[0-9]+)?)\s*\|", re.M)
INLINE = re.compile(r"`(?P<name>[a-z_]+)\s*=\s*(?P<value>[0-9]+(?:\.[0-9]+)?)`")


def stated(text: str) -> list[tuple[str, float]]:
    """Every (setting, default) the markdown states, in the two spellings."""
    found = [(m["name"], float(m["value"])) for pattern in (ROW, INLINE) for m in pattern.finditer(text)]
    return [(name, value) for name, value in found if name in NAMES]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_stated_defaults_are_the_codes(page: Path) -> None:
    defaults = CheckSettings()
    wrong = [(name, value, getattr(defaults, name)) for name, value in stated(page.read_text())
             if value != getattr(defaults, name)]
    assert wrong == [], f"{page.name} states defaults that are not CheckSettings()'s: (name, stated, code)"


def test_the_readme_and_findings_page_state_them() -> None:
    assert {name for name, _ in stated((REPO / "README.md").read_text())} >= {
        "busy_utilization_pct", "low_power_pct", "bandwidth_memory_utilization_pct", "starved_sm_activity_pct"}
    assert {name for name, _ in stated((REPO / "docs" / "findings.md").read_text())} == NAMES  # every one


def test_the_reader_sees_a_wrong_default() -> None:
    assert stated("| `low_power_pct` | 55 | x |\nsee `busy_utilization_pct = 91`") == [
        ("low_power_pct", 55.0), ("busy_utilization_pct", 91.0)]
