"""The words a server's command-line pattern cannot match without (gpudiag.logs.words): the node compiles the
pattern only for a line holding one of them, so they must be in every match (issue 32)."""

from __future__ import annotations

import random
import re

import pytest

from gpudiag.logs.plan import build_plans
from gpudiag.logs.words import required_words
from gpudiag.model import Host


@pytest.mark.parametrize(("regex", "words"), [
    (r"(?:python[0-9.]*\s+-m\s+sglang\.launch_server|\bsglang\s+serve)\s", ("sglang", "sglang.launch_server")),
    (r"\bvllm\s+serve\s", ("serve",)),
    (r"(?:foo|bar)baz", ("bar", "foo")),
    (r"(ab)+c", ("ab",)),
    (r"(?i)vllm", ()),  # case-blind: no literal is sure
    (r"(?i:ab)cd", ("cd",)),
    (r"a|b*", ()),  # an alternative with no word
    (r"x*", ()),
    (r"(", ()),  # does not parse: no prefilter
])
def test_words(regex: str, words: tuple[str, ...]) -> None:
    assert required_words(regex) == words


def test_every_match_holds_a_word() -> None:
    rng = random.Random(32)
    pieces = ["ab", "a", "b", "c", r"\s+", r"\b", "[ab]", "(?:", "|", ")", "*", "+", "?", "{2}", "(?i:a)", "."]
    texts = ["".join(rng.choice("abc ") for _ in range(rng.randint(0, 12))) for _ in range(300)]
    checked = 0
    for _ in range(2000):
        regex = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 8)))
        try:
            pattern = re.compile(regex)
        except re.error:
            continue
        words = required_words(regex)
        for text in texts:
            if words and pattern.search(text):
                assert any(w in text for w in words), (regex, words, text)
                checked += 1
    assert checked > 1000


def test_the_node_is_sent_the_words() -> None:
    servers = build_plans([Host(name="n")])["n"].discover_config()["servers"]  # type: ignore[index]
    assert all(s["words"] == list(required_words(s["regex"])) for s in servers)
    assert any(s["words"] for s in servers)
