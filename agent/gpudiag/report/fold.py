"""Folding, as ``clush -b`` folds identical output: hosts that read the same become one host range
("gpu[01-50] (50 hosts)"), GPUs of a host that read the same become one index range ("gpu 0-7").

A rendering concern only: the JSON report keeps every host and finding. Pure, no rich.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

from gpudiag.model import HostReport

K = TypeVar("K", bound=Hashable)

# What a host's own name or address becomes in a text folded with other hosts' (``ssh -o`` spells it %h).
HOST_PLACEHOLDER = "<host>"


def group_identical(items: Iterable[tuple[str, K]]) -> list[tuple[tuple[str, ...], K]]:
    """Group host names whose keys are equal, as ``clush -b`` groups identical output.

    Groups come in the order of their first host; names keep their order inside a group.
    ``[("a", 1), ("b", 2), ("c", 1)]`` → ``[(("a", "c"), 1), (("b",), 2)]``.
    """
    groups: dict[K, list[str]] = {}
    for name, key in items:
        groups.setdefault(key, []).append(name)
    return [(tuple(names), key) for key, names in groups.items()]


def group_hosts(items: Iterable[tuple[str, K]], *, fold: bool = True) -> list[tuple[tuple[str, ...], K]]:
    """:func:`group_identical`, or one group per host when not ``fold`` (``--no-fold``)."""
    if fold:
        return group_identical(items)
    return [((name,), key) for name, key in items]


def host_label(names: Sequence[str]) -> str:
    """A host range for ``names`` ("gpu[01-03]"); the plain list when no range can hold them."""
    from gpudiag.sources.hostlist import fold  # imported here so the report does not need it at import time

    try:
        return fold(names)
    except ValueError:  # a name no host pattern can hold (e.g. with a space): list it rather than fail
        return ",".join(names)


def label_parts(label: str) -> list[str]:
    """A host label split between its ranges, never inside one: ``"a-[01,04],b02"`` → ``["a-[01,04]", "b02"]``.
    A comma splits unless the next bracket after it closes one. One pass from the end (a look-ahead regex for
    each comma scanned the rest of the label: quadratic, 1.3 s for one label of 10,000 hosts)."""
    cuts: list[int] = []
    next_bracket = ""
    for pos in range(len(label) - 1, -1, -1):
        char = label[pos]
        if char in "[]":
            next_bracket = char
        elif char == "," and next_bracket != "]":
            cuts.append(pos)
    bounds = [-1, *reversed(cuts), len(label)]
    return [label[a + 1:b] for a, b in itertools.pairwise(bounds)]


def counted_label(names: Sequence[str]) -> str:
    """ "gpu[01-50] (50 hosts)"; a single host's name alone."""
    label = host_label(names)
    return label if len(names) == 1 else f"{label} ({len(names)} hosts)"


def index_ranges(indexes: Iterable[int]) -> str:
    """[0, 1, 2, 5] → "0-2,5" (sorted, distinct indexes)."""
    runs: list[list[int]] = []
    for i in sorted(set(indexes)):
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


_WORD = re.compile(r"\w")


def generic(text: str, host: HostReport) -> str:
    """``text`` with the host's own name and address replaced by :data:`HOST_PLACEHOLDER`, so that 50 hosts
    that each say "connection refused by 10.0.0.<n>:22" fold into one line. A name inside a longer name
    (10.0.0.1 in 10.0.0.12) is left alone."""
    for own in sorted({host.host, host.address or ""} - {""}, key=len, reverse=True):
        text = _replace_name(text, own)
    return text


def _replace_name(text: str, own: str) -> str:
    """``text`` with each ``own`` that stands alone (not inside a longer name) replaced by the placeholder.
    A plain search, not a regular expression built per host: compiling one for each of 10,000 hosts cost
    most of ``merge``'s 32 s (the ``re`` cache holds 512)."""
    out: list[str] = []
    start = 0
    found = text.find(own)
    while found >= 0:
        end = found + len(own)
        before = text[found - 1:found]
        after = text[end:end + 2]
        # Alone: not after a word character, "." or "-"; not before a word character, "-", or "." and a word one.
        alone = not (before in (".", "-") or (before and _WORD.match(before))) and not (
            after[:1] == "-" or (after and _WORD.match(after)) or (after[:1] == "." and _WORD.match(after[1:])))
        if alone:
            out.append(text[start:found] + HOST_PLACEHOLDER)
            start = end
            found = text.find(own, end)
        else:
            found = text.find(own, found + 1)
    return "".join(out) + text[start:]


def shown(text: str, generic_text: str, names: Sequence[str]) -> str:
    """What a folded group says: a single host's own text, else the text with the placeholder."""
    return text if len(names) == 1 else generic_text
