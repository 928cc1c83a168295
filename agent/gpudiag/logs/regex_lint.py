"""A first defence against regexes that backtrack catastrophically: nested quantifiers, ``(a+)+``.

Python's ``re`` backtracks; a repeat whose body can itself match a varying number of times (``(a+)+``,
``(\\w+\\s?)*``, ``(?:x|y+)*``) tries exponentially many ways to split a line that almost matches. A pack's
regex runs on the node, on every log line, so :mod:`gpudiag.logs.packs` refuses such a regex at load time.
This is a lint, not a proof of linearity: the node's scan has its own deadline whatever a regex costs.
Pure, standard library only.
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


def nested_quantifier(regex: str, flags: int = 0) -> str | None:
    """Why ``regex`` may backtrack catastrophically (a repeated group that itself repeats), or None.
    A regex that does not compile is not this function's business (None)."""
    try:
        parsed = _p.parse(regex, flags)
    except (re.error, OverflowError, RecursionError, ValueError):
        return None
    if _nested(parsed):
        return "a nested quantifier (a repeated group that itself repeats, like (a+)+) can take exponential " \
               "time on a line that almost matches"
    return None
