"""pdsh/Slurm-style host patterns: ``gpu[01-16]`` expands to sixteen names, and back again.

``expand`` turns a pattern into names; ``fold`` turns names into the shortest pattern it finds, as
``clush -b`` does when it folds hosts with identical output. Both follow Slurm's padding rule: a range is
zero-padded to the width of its lower bound, so ``gpu[01-100]`` is ``gpu01 … gpu99, gpu100``.

Pure and standard library only. ClusterShell's ``NodeSet`` is not used at run time: it rejects mixed-width
ranges such as ``gpu[01-100]`` ("padding length mismatch") and sorts names instead of keeping their order,
and working around both costs more than the small expander below.

python-hostlist (PyPI, 2.3.0: ``expand_hostlist``/``collect_hostlist``) was weighed as a replacement against
``tests/unit/sources/test_hostlist.py``: it expands and folds every valid pattern the tests hold exactly as this module
does (``gpu[01-100]`` included), but it takes what the tests require refusing: ``ubuntu@gpu01``,
``gpu01:2222`` and ``gpu 01`` pass as host names, ``a,,b`` drops the empty name silently, ``gpu[1-010]`` is
guessed rather than refused, and spaces around a name are kept. Wrapping it in the checks below would leave
little of it to use, and it is GPL-2.0-or-later where gpudiag is Apache-2.0. So this module stays.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable

from gpudiag.model.ssh_target import HostPatternError, not_ascii

__all__ = ["MAX_NAMES", "HostPatternError", "expand", "fold"]

# A typo such as gpu[1-1000000000] must fail fast, not fill memory; no real sweep comes near this.
MAX_NAMES = 100_000

# Characters a host name may hold. ``@`` (user), ``:`` (port), ``/`` and spaces are refused so that
# "ubuntu@gpu01" or "gpu01:2222" fail here, with a message, rather than later as a DNS error.
_NAME_CHARS = re.compile(r"[A-Za-z0-9._-]*")
_PLAIN_NAME = re.compile(r"[A-Za-z0-9._-]+")  # no brackets, no commas: the name itself, and nothing to check
_NUMBER = re.compile(r"[0-9]+")
_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?")
_DIGITS = re.compile(r"([0-9]+)")
_UNFOLDABLE = re.compile(r"[\[\],\s]")  # what no pattern can give back


def expand(pattern: str) -> tuple[str, ...]:
    """The host names ``pattern`` stands for, in order of appearance, without duplicates.

    ``pattern`` is a comma-separated list of items (commas inside brackets belong to the bracket); each item
    is text with any number of ``[…]`` sets of numbers and ranges, expanded as a cartesian product with the
    first bracket outermost: ``rack[1-2]-gpu[1-2]`` is rack1-gpu1, rack1-gpu2, rack2-gpu1, rack2-gpu2.
    A range is zero-padded to the width of its lower bound (Slurm's rule): ``gpu[01-100]`` gives gpu01 …
    gpu99, gpu100.

    Raises ``HostPatternError`` naming the pattern when it is empty, malformed, or too large.
    """
    if isinstance(pattern, str) and _PLAIN_NAME.fullmatch(pattern):
        return (pattern,)  # most of a large inventory: its names one by one
    if not isinstance(pattern, str) or not pattern.strip():
        raise HostPatternError(f"bad host pattern {pattern!r}: it is empty")
    names: dict[str, None] = {}  # a dict keeps insertion order and drops duplicates
    for item in _split_items(pattern):
        segments = _parse_item(pattern, item)
        count = math.prod(len(choices) for choices in segments)
        if len(names) + count > MAX_NAMES:
            raise HostPatternError(f"bad host pattern {pattern!r}: it expands to more than {MAX_NAMES} names")
        for parts in itertools.product(*segments):
            names.setdefault("".join(parts))
    return tuple(names)


def fold(names: Iterable[str]) -> str:
    """The names as one compact pattern, e.g. ``gpu[01-03,05]``; ``expand`` of the result gives them back.

    Duplicates are dropped and the parts are sorted in natural order (``gpu2`` before ``gpu10``), as
    ``clush -b`` prints them. Names are folded on every number they hold, last number first, so
    ``rack1-gpu1 … rack2-gpu8`` becomes ``rack[1-2]-gpu[1-8]``. Padding is kept exactly: ``gpu01`` …
    ``gpu100`` folds to ``gpu[01-100]``, while ``gpu1`` and ``gpu01`` stay apart. An empty input gives ``""``.

    Raises ``HostPatternError`` for a name that no pattern could give back (empty, or holding ``[``,
    ``]``, ``,`` or whitespace).
    """
    # A shape is a name's text between its numbers; only names of one shape can share a pattern.
    shapes: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for name in dict.fromkeys(names):
        if not name or _UNFOLDABLE.search(name):
            raise HostPatternError(
                f"cannot fold host name {name!r}: it is empty or holds '[', ']', ',' or a space"
            )
        tokens = _DIGITS.split(name)  # text, number, text, …, text: numbers sit at the odd places
        shapes.setdefault(tuple(tokens[0::2]), []).append(tuple(tokens[1::2]))

    rows: list[tuple[tuple[str, ...], tuple[frozenset[str], ...]]] = []
    for texts, numbers in shapes.items():
        rows.extend((texts, dims) for dims in _fold_shape(numbers))
    rows.sort(key=lambda row: _row_key(*row))
    return ",".join(_render_row(texts, dims) for texts, dims in rows)


def _split_items(pattern: str) -> list[str]:
    """Split ``pattern`` at the commas outside brackets, checking the brackets pair up."""
    items: list[str] = []
    depth = 0
    start = 0
    for pos, char in enumerate(pattern):
        if char == "[":
            if depth:
                raise HostPatternError(f"bad host pattern {pattern!r}: brackets cannot nest")
            depth = 1
        elif char == "]":
            if not depth:
                raise HostPatternError(f"bad host pattern {pattern!r}: ']' without '['")
            depth = 0
        elif char == "," and not depth:
            items.append(pattern[start:pos])
            start = pos + 1
    if depth:
        raise HostPatternError(f"bad host pattern {pattern!r}: '[' is never closed")
    items.append(pattern[start:])
    stripped = [item.strip() for item in items]
    if not all(stripped):
        raise HostPatternError(f"bad host pattern {pattern!r}: empty name between commas")
    return stripped


def _parse_item(pattern: str, item: str) -> list[list[str]]:
    """One comma-free item as segments: fixed text is a one-choice segment, a bracket a many-choice one."""
    segments: list[list[str]] = []
    for index, part in enumerate(re.split(r"\[([^\]]*)\]", item)):
        if index % 2 == 0:  # text outside brackets
            if not _NAME_CHARS.fullmatch(part):
                bad = next(c for c in part if not _NAME_CHARS.fullmatch(c))
                said = f"unexpected character {bad!r}"
                if (problem := not_ascii(bad)) is not None:  # a fullwidth digit, a zero-width space: in words
                    said = f"{problem} (a host name in other letters: its xn-- form)"
                raise HostPatternError(f"bad host pattern {pattern!r}: {said}")
            if part:
                segments.append([part])
        else:
            segments.append(_parse_bracket(pattern, part))
    return segments


def _parse_bracket(pattern: str, body: str) -> list[str]:
    """The numbers one ``[…]`` stands for, padded to each range's lower bound."""
    if not body:
        raise HostPatternError(f"bad host pattern {pattern!r}: empty brackets")
    numbers: list[str] = []
    for part in body.split(","):
        match = _RANGE.fullmatch(part)
        if not match:
            raise HostPatternError(
                f"bad host pattern {pattern!r}: {part!r} is not a number or a range like 1-8"
            )
        low, high = match.group(1), match.group(2)
        if high is None:
            numbers.append(low)
            continue
        if int(high) < int(low):
            raise HostPatternError(f"bad host pattern {pattern!r}: range {part!r} runs backwards")
        # With "1-010" it is unclear which width is meant; Slurm and ClusterShell disagree, so refuse it.
        if high.startswith("0") and len(high) > 1 and len(high) != len(low):
            raise HostPatternError(f"bad host pattern {pattern!r}: range {part!r} pads its ends differently")
        if len(numbers) + int(high) - int(low) + 1 > MAX_NAMES:
            raise HostPatternError(f"bad host pattern {pattern!r}: it expands to more than {MAX_NAMES} names")
        width = len(low)
        numbers.extend(str(n).zfill(width) for n in range(int(low), int(high) + 1))
    return numbers


def _fold_shape(numbers: list[tuple[str, ...]]) -> list[tuple[frozenset[str], ...]]:
    """Fold names of one shape (given as their numbers) into cartesian rows, one set of numbers per place.

    Each row stands for the product of its sets, and rows never overlap. Folding the last place first and
    merging rows that agree on every other place keeps that true: A×S ∪ B×S is (A∪B)×S.
    """
    if len(numbers[0]) == 1:  # one number per name (gpu01): every name is one row, without the merging
        return [(frozenset(number for (number,) in numbers),)]
    rows = [tuple(frozenset((n,)) for n in name) for name in numbers]
    for place in reversed(range(len(numbers[0]))):
        merged: dict[tuple[frozenset[str], ...], set[str]] = {}
        for row in rows:
            others = row[:place] + (frozenset(),) + row[place + 1 :]
            merged.setdefault(others, set()).update(row[place])
        rows = [
            others[:place] + (frozenset(values),) + others[place + 1 :] for others, values in merged.items()
        ]
    return rows


def _number_key(number: str) -> tuple[int, int]:
    """Natural order of a number as written: by value, then the shorter spelling (``1`` before ``01``)."""
    return int(number), len(number)


def _row_key(texts: tuple[str, ...], dims: tuple[frozenset[str], ...]) -> tuple[object, ...]:
    """Sort key of a row: the natural key of the first name it stands for."""
    key: list[object] = []
    for index, text in enumerate(texts):
        key.append(text)
        if index < len(dims):
            key.append(min(_number_key(n) for n in dims[index]))
    return tuple(key)


def _render_row(texts: tuple[str, ...], dims: tuple[frozenset[str], ...]) -> str:
    """One row as a pattern: the text with each set of numbers in its place."""
    out = [texts[0]]
    for numbers, text in zip(dims, texts[1:], strict=True):
        out.append(_render_numbers(numbers))
        out.append(text)
    return "".join(out)


def _render_numbers(numbers: frozenset[str]) -> str:
    """A set of numbers as ``05`` or ``[01-03,05]``, with ranges that expand back to exactly these strings."""
    if len(numbers) == 1:
        return next(iter(numbers))
    runs: list[list[str]] = []  # each run: its numbers as written, consecutive and padded alike
    # The runs that end at each value, with their place in ``runs``: a number joins the oldest of those that
    # end one below it and are padded as it is written (``9`` and ``05-09`` both take ``10``; the older wins), so
    # each number is one lookup. A scan of every run was quadratic: 301 s of CPU for 40,000 scattered names.
    ending_at: dict[int, list[tuple[int, list[str]]]] = {}
    for number in sorted(numbers, key=_number_key):
        value = int(number)
        best = None
        for entry in ending_at.get(value - 1, ()):
            # A range pads to the width of its first number; the next one joins only if it is written so.
            if (best is None or entry[0] < best[0]) and str(value).zfill(len(entry[1][0])) == number:
                best = entry
        if best is None:
            best = (len(runs), [number])
            runs.append(best[1])
        else:
            ending_at[value - 1].remove(best)
            best[1].append(number)
        ending_at.setdefault(value, []).append(best)
    parts = [run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs]
    return "[" + ",".join(parts) + "]"
