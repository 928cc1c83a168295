"""The finding codes the README and docs/findings.md name are the codes the checks emit (issue 30 item 8: the
README listed 21 codes where docs/findings.md had 35, and the demo printed codes the README did not name).

``gpudiag.checks.actions.ACTIONS`` holds every code a check can emit (``test_actions.py`` checks that against
the checks' own source); docs/findings.md's "Every finding" table must list each, and the README must name
each: its table the main ones, with the severity docs/findings.md gives, its "Also:" line the rest."""

from __future__ import annotations

import re
from pathlib import Path

from gpudiag.checks.actions import ACTIONS

REPO = Path(__file__).resolve().parents[3]
ROW = re.compile(r"^\| `([A-Z_]+)` \| ([^|]+?) \|", re.MULTILINE)
CODE = re.compile(r"`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|XID)`")


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:] if end < 0 else text[start:end]


def _every_finding() -> dict[str, str]:
    return dict(ROW.findall(_section((REPO / "docs" / "findings.md").read_text(), "## Every finding")))


def _readme_section() -> str:
    return _section((REPO / "README.md").read_text(), "## What it finds")


def test_docs_findings_lists_every_code() -> None:
    documented = _every_finding()
    assert sorted(set(ACTIONS) - set(documented)) == [], "add these to docs/findings.md's Every finding table"
    assert sorted(set(documented) - set(ACTIONS)) == [], "docs/findings.md lists codes no check emits"


def test_the_readme_names_every_code() -> None:
    named = set(CODE.findall(_readme_section()))
    assert sorted(set(ACTIONS) - named) == [], "name these in the README's What it finds (table or Also: line)"
    assert sorted(named - set(ACTIONS)) == [], "the README names codes no check emits"


def test_the_readme_table_says_the_severity_docs_findings_says() -> None:
    documented = _every_finding()
    for code, severity in ROW.findall(_readme_section()):
        # docs/findings.md may say more in brackets: "the signature's (warning / critical)"
        assert documented[code].split(" (")[0] == severity, code
