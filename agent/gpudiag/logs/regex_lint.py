"""A first defence against regexes that backtrack catastrophically: nested quantifiers, ``(a+)+``, overlapping
alternatives under a repeat, ``(a|a)*``, and adjacent repeats of the same characters, ``\\d+\\d+``.

Python's ``re`` backtracks; a repeat whose body can itself match a varying number of times (``(a+)+``,
``(\\w+\\s?)*``, ``(?:x|y+)*``) tries exponentially many ways to split a line that almost matches. So does a
repeat of alternatives that can match the same text (``(a|a)*$``: 4 s on 25 characters; ``(a|ab)*c``,
``(\\w|\\d)+$``), and two repeats side by side that take the same characters (``\\d+\\d+$``, ``.*.*=.*``: 9 s on
3,000 characters) try every place to split the run between them (a power of the line's length). A pack's
regex runs on the node, on every log line, so :mod:`gpudiag.logs.packs` refuses such a regex at load time.
This is a lint, not a proof of linearity: the node's scan has its own deadline whatever a regex costs.
Pure, standard library only.

Which characters an item can start with is worked out on a sample of characters (:data:`_SAMPLE`: Latin-1 and
a few others), enough to see that ``\\w`` and ``\\d`` overlap and ``\\s`` and ``\\S`` do not.
"""

from __future__ import annotations

import re
import sys
from typing import Any

if sys.version_info >= (3, 11):
    from re import _constants as _c
    from re import _parser as _p
else:  # pragma: no cover - Python 3.10
    import sre_constants as _c
    import sre_parse as _p

_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", _c.MAX_REPEAT)}
_POSSESSIVE = getattr(_c, "POSSESSIVE_REPEAT", None)
_SAMPLE = frozenset(chr(c) for c in (*range(256), 0x100, 0x3B1, 0x660, 0x2028, 0x202E, 0x3000, 0x4E00))
_CATEGORIES = {_c.CATEGORY_DIGIT: r"\d", _c.CATEGORY_NOT_DIGIT: r"\D", _c.CATEGORY_SPACE: r"\s",
               _c.CATEGORY_NOT_SPACE: r"\S", _c.CATEGORY_WORD: r"\w", _c.CATEGORY_NOT_WORD: r"\W"}
_CATEGORY_CHARS = {cat: frozenset(c for c in _SAMPLE if re.fullmatch(rx, c)) for cat, rx in _CATEGORIES.items()}
_ZERO_WIDTH = {_c.AT, _c.ASSERT, _c.ASSERT_NOT}


def _inside(op: Any, arg: Any) -> list[Any]:
    """The sub-patterns a group, an alternation or a lookaround holds (none for other items; repeats are
    handled by the callers, an atomic group never gives back what it matched)."""
    if op is _c.SUBPATTERN:
        return [arg[-1]]
    if op is _c.BRANCH:
        return list(arg[1])
    if op in (_c.ASSERT, _c.ASSERT_NOT):
        return [arg[1]]
    return []


def _varies(items: Any) -> bool:
    """Whether the parsed pattern ``items`` holds a repeat of a varying count (``+``, ``*``, ``{1,9}``)."""
    for op, arg in items:
        if op in _REPEATS:
            low, high, body = arg
            if low != high or _varies(body):
                return True
        elif any(_varies(inner) for inner in _inside(op, arg)):
            return True
    return False


def _nested(items: Any) -> bool:
    """Whether ``items`` repeats something whose own count varies (``(a+)+``): catastrophic backtracking."""
    for op, arg in items:
        if op in _REPEATS:
            low, high, body = arg
            if high > 1 and op is not getattr(_c, "POSSESSIVE_REPEAT", None) and _varies(body):
                return True
            if _nested(body):
                return True
        elif any(_nested(inner) for inner in _inside(op, arg)):
            return True
    return False


def _set_items(items: Any) -> list[frozenset[str]]:
    """The characters of each member of a ``[...]`` set (its ``IN`` items), on the sample."""
    out = []
    for op, arg in items:
        if op is _c.LITERAL:
            out.append(frozenset({chr(arg)}))
        elif op is _c.RANGE:
            out.append(frozenset(c for c in _SAMPLE | {chr(arg[0]), chr(arg[1])} if arg[0] <= ord(c) <= arg[1]))
        elif op is _c.CATEGORY:
            out.append(_CATEGORY_CHARS.get(arg, _SAMPLE))
        elif op is not _c.NEGATE:
            out.append(_SAMPLE)  # anything else: assume it may be any character
    return out


def _one_char(op: Any, arg: Any) -> frozenset[str] | None:
    """The characters a one-character item matches (on the sample), or None for other items."""
    if op is _c.LITERAL:
        return frozenset({chr(arg)})
    if op is _c.NOT_LITERAL:
        return _SAMPLE - {chr(arg)}
    if op is _c.ANY:
        return _SAMPLE - {"\n"}
    if op is _c.IN:
        chars = frozenset().union(*_set_items(arg))
        return _SAMPLE - chars if arg and arg[0][0] is _c.NEGATE else chars
    return None


def _first(items: Any, from_end: bool = False) -> tuple[frozenset[str], bool]:
    """(the characters ``items`` can start with, or end with when ``from_end``; whether it can match the
    empty string)."""
    first: frozenset[str] = frozenset()
    for op, arg in (reversed(list(items)) if from_end else items):
        chars = _one_char(op, arg)
        if chars is not None:
            return first | chars, False
        if op in _REPEATS:
            body, empty = _first(arg[2], from_end)
            first |= body
            if arg[0] > 0 and not empty:
                return first, False
        elif op is _c.SUBPATTERN:
            body, empty = _first(arg[-1], from_end)
            first |= body
            if not empty:
                return first, False
        elif op is _c.BRANCH:
            alternatives = [_first(alt, from_end) for alt in arg[1]]
            first = first.union(*(f for f, _ in alternatives))
            if not any(empty for _, empty in alternatives):
                return first, False
        elif op not in _ZERO_WIDTH:
            return first | _SAMPLE, True  # a back-reference, a conditional: anything
    return first, True


def _overlapping_alternatives(items: Any) -> bool:
    """Whether ``items`` (a repeat's body) holds alternatives that can match the same text: two that start
    with a common character, or one that is a prefix of another (the parser takes a common prefix out:
    ``a|ab`` is ``a(?:|b)``, an empty alternative), or members of a character set that overlap (``\\w|\\d``
    is parsed as the set ``[\\w\\d]``)."""
    for op, arg in items:
        if op is _c.BRANCH:
            alternatives = [_first(alt) for alt in arg[1]]
            if any(empty for _, empty in alternatives):
                return True
            if any(a & b for i, (a, _) in enumerate(alternatives) for b, _ in alternatives[i + 1:]):
                return True
        elif op is _c.IN and not (arg and arg[0][0] is _c.NEGATE):
            members = _set_items(arg)
            if any(a & b for i, a in enumerate(members) for b in members[i + 1:]):
                return True
        if op in _REPEATS:
            continue  # a repeat inside is checked as a repeat of its own
        if any(_overlapping_alternatives(inner) for inner in _inside(op, arg)):
            return True
    return False


def _edge(item: tuple[Any, Any], last: bool) -> frozenset[str] | None:
    """The characters of the varying repeat at the start (or the end, ``last``) of ``item``, or None. Only a
    repeat that repeats (``+``, ``*``, ``{2,9}``): an optional (``?``) has only two ways to split."""
    op, arg = item
    if op in _REPEATS and op is not _POSSESSIVE and arg[0] != arg[1] and arg[1] > 1:
        return _first(arg[2], from_end=last)[0]
    if op is _c.SUBPATTERN and arg[-1]:
        return _edge(arg[-1][-1] if last else arg[-1][0], last)
    return None


def _chars(item: tuple[Any, Any]) -> frozenset[str] | None:
    """The characters one fixed item matches (a literal, a set, ``.``), or None for anything else."""
    op, arg = item
    return _one_char(op, arg)


def _chain(items: list[Any], whole: bool) -> str | None:
    """Two repeats of one sequence over shared characters with only what the first can also take between
    them (``X.*Y.*Z``): when the end fails, every place of ``Y`` in the run is tried by each, a power of the
    line's length (a 3,000-character line used the node's whole 7 s scan budget). A chain that ends the
    ``whole`` pattern (``X.*Y.*``) is let be: nothing after it can fail."""
    for i, first in enumerate(items):
        taken = _edge(first, last=True)
        if not taken:
            continue
        for j in range(i + 1, len(items)):
            later = _edge(items[j], last=False)
            if later and later & taken:
                if whole and j == len(items) - 1:
                    break
                return "two quantifiers over the same characters with only what the first also takes between " \
                       "them (like X.*Y.*Z) try every place of Y in the run: polynomial time on a line that " \
                       "almost matches; bound one ([^Y]*) or anchor it"
            between = _chars(items[j])
            if between is None or not between <= taken:
                break
    return None


def _why(items: Any, whole: bool = False) -> str | None:
    """The first reason ``items`` may backtrack badly, walking every sequence in it. In the ``whole`` pattern,
    a pair that ends it (``\\s*(.*)``) is let be: nothing after it can fail, so the split is never undone."""
    items = list(items)
    for index, (before, after) in enumerate(zip(items, items[1:], strict=False)):
        if whole and index + 2 == len(items):
            break
        end, start = _edge(before, last=True), _edge(after, last=False)
        if end and start and end & start:
            return "adjacent quantifiers over the same characters (like \\d+\\d+ or .*.*) try every split of a " \
                   "run between them: polynomial time on a line that almost matches"
    chain = _chain(items, whole)
    if chain:
        return chain
    for op, arg in items:
        if op in _REPEATS:
            low, high, body = arg
            if high > 1 and op is not _POSSESSIVE:
                if _varies(body):
                    return "a nested quantifier (a repeated group that itself repeats, like (a+)+) can take " \
                           "exponential time on a line that almost matches"
                if _overlapping_alternatives(body):
                    return "overlapping alternatives under a quantifier (like (a|a)* or (a|ab)*, or a set like " \
                           "[\\w\\d]+ whose members overlap) can take exponential time on a line that almost matches"
            why = _why(body)
        else:
            why = next((w for w in (_why(inner) for inner in _inside(op, arg)) if w), None)
        if why:
            return why
    return None


def backtracking_risk(regex: str, flags: int = 0) -> str | None:
    """Why ``regex`` may backtrack catastrophically (a nested quantifier, overlapping alternatives under a
    quantifier, adjacent quantifiers over the same characters), or None. A regex that does not compile is not
    this function's business (None)."""
    try:
        parsed = _p.parse(regex, flags)
    except (re.error, OverflowError, RecursionError, ValueError):
        return None
    return _why(parsed, whole=True)


def nested_quantifier(regex: str, flags: int = 0) -> str | None:
    """Why ``regex`` may backtrack catastrophically (a repeated group that itself repeats), or None."""
    try:
        parsed = _p.parse(regex, flags)
    except (re.error, OverflowError, RecursionError, ValueError):
        return None
    if _nested(parsed):
        return "a nested quantifier (a repeated group that itself repeats, like (a+)+) can take exponential " \
               "time on a line that almost matches"
    return None
