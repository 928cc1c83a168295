"""The pack lint refuses overlapping alternatives under a quantifier and adjacent quantifiers over the same
characters (issue 23 #9), as it refuses nested quantifiers: one line naming the pack file, the signature and
the pattern. Before, ``(a|a)*$`` and four similar forms passed, and one of them used the node's whole 7 s scan
budget on one log (every other signature on it came back blank). Every shipped pack still loads."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from gpudiag.logs.packs import PackError, builtin_packs, load_pack
from gpudiag.logs.regex_lint import backtracking_risk

# The issue's forms, and a line that almost matches each (the cost grows with its length).
HOSTILE = {r"(a|a)*$": "a" * 22 + "!", r"(a|ab)*c": "ab" * 3000, r"\d+\d+$": "1" * 600 + "x",
           r"(\w|\d)+$": "1" * 3000 + "!", r".*.*=.*": "x" * 1500}


@pytest.mark.parametrize("regex", sorted(HOSTILE))
def test_the_issues_forms_are_refused_at_load_in_one_line(tmp_path: Path, regex: str) -> None:
    pack = tmp_path / "site.yaml"
    pack.write_text(f"pack: site\nsignatures:\n  - name: evil\n    regex: '{regex}'\n")
    with pytest.raises(PackError) as info:
        load_pack(pack)
    message = str(info.value)
    assert message.startswith(f"{pack}: signatures[0] (evil): regex '{regex}' is refused: "), message
    assert "\n" not in message and ("overlapping" in message or "adjacent" in message)


@pytest.mark.scale
@pytest.mark.parametrize("regex", sorted(HOSTILE))
def test_each_refused_form_is_slow_on_a_short_line(regex: str) -> None:
    """Why they are refused: each costs a measurable share of a second on a line of at most 6,000 characters
    (a log line may be 64 KiB); a linear regex does the same search in microseconds."""
    began = time.process_time()
    re.search(regex, HOSTILE[regex])
    assert time.process_time() - began > 0.02


@pytest.mark.parametrize("regex", [r"\s*\S+x", r"\d+\.\d+s", r"(\d+\.)?\d+ms", r"(?:ab|cd)+x", r"[\w.-]+:",
                                   r"\w+\s+\w+$", r"(?:PCI:)?[0-9A-Fa-f:.]+\)", r"(?:x|y)*z", r".*=(\d+)",
                                   r"\s*(?P<detail>.*)"])
def test_ordinary_patterns_pass(regex: str) -> None:
    assert backtracking_risk(regex) is None


def test_every_shipped_regex_passes() -> None:
    regexes = {f"{p.name}/{e.name}/{key}": value for p in builtin_packs() for e in (*p.signatures, *p.echoes)
               for key, value in (("regex", e.regex), ("exclude", getattr(e, "exclude", None))) if value}
    assert len(regexes) >= 30
    assert {name: r for name, r in regexes.items() if backtracking_risk(r)} == {}
