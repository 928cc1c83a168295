"""The words a regex cannot match without: literals, one of which is in every text the regex finds.

The node compiles a server's command-line pattern (``re``: with enum, functools and collections, 5-10 ms of a
node's CPU) only for a command line that holds one of these words (``gpudiag_node.processes``); a GPU process
that is no inference server then costs a substring test. Sound, not complete: an empty answer means "no
prefilter", never "cannot match". Pure, standard library only.

``(?:python[0-9.]*\\s+-m\\s+sglang\\.launch_server|\\bsglang\\s+serve)\\s`` → ("sglang", "sglang.launch_server"):
each alternative's longest literal run; a sequence needs every part, so any one part's words do (the one whose
shortest word is longest is kept).
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
_ATOMIC = getattr(_c, "ATOMIC_GROUP", None)


def required_words(regex: str) -> tuple[str, ...]:
    """Literals one of which every match of ``regex`` holds, sorted; () when there is no such set (a case-blind
    pattern, an alternative without a literal, a regex that does not parse)."""
    try:
        parsed: Any = _p.parse(regex)
    except (re.error, RecursionError, OverflowError):
        return ()
    found = _need(list(parsed), bool(parsed.state.flags & re.IGNORECASE))
    return tuple(sorted(found)) if found else ()


def _need(items: list[Any], blind: bool) -> frozenset[str] | None:
    """For a sequence of parsed items: a set of words one of which every match holds, or None."""
    candidates: list[frozenset[str]] = []
    run: list[str] = []
    for op, arg in items:
        if op is _c.LITERAL and not blind:
            run.append(chr(arg))
            continue
        if run:
            candidates.append(frozenset({"".join(run)}))
            run = []
        part = _part(op, arg, blind)
        if part:
            candidates.append(part)
    if run:
        candidates.append(frozenset({"".join(run)}))
    return max(candidates, key=lambda words: min(len(w) for w in words), default=None)


def _part(op: Any, arg: Any, blind: bool) -> frozenset[str] | None:
    if op is _c.SUBPATTERN:
        _, add, remove, inner = arg
        return _need(list(inner), (blind or bool(add & re.IGNORECASE)) and not remove & re.IGNORECASE)
    if op is _c.BRANCH:
        words: set[str] = set()
        for alternative in arg[1]:
            found = _need(list(alternative), blind)
            if not found:
                return None
            words |= found
        return frozenset(words) or None
    if op in _REPEATS:
        least, _, inner = arg
        return _need(list(inner), blind) if least >= 1 else None
    if _ATOMIC is not None and op is _ATOMIC:
        return _need(list(arg), blind)
    return None  # a class, an anchor, a lookaround, a back-reference: no word of its own
