"""Reading a JSON document that came from a node: every part type-checked as it is read, and a part that is
missing or of the wrong type reads as "not reported" (None, empty). Shared by the parsers of the probe
document (``gpudiag.collect.parse``, ``gpudiag.collect.parse_logs``). Pure, standard library only.

What one host may claim is bounded here too (issue 14): a node's document is inside the output bound, yet
300,000 GPU rows or a million-character host name would cost the controller gigabytes downstream. A
:class:`Claims` collects, once per kind, what was past a bound; the parser turns that into the host's
problems (so PROBE_INCOMPLETE says it), and the rest of the sweep is unaffected.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

NAME_CHARS = 256  # a name, a version, a kernel release
MAX_INT = 2**64  # no reading, count or offset a node sends is larger; bigger is junk


def text(value: object) -> str | None:
    """``value`` when it is a string, else None."""
    return value if isinstance(value, str) else None


def short(value: object, limit: int = NAME_CHARS) -> str | None:
    """``value`` when it is a string, cut to ``limit`` characters ("..." marks the cut), else None."""
    if not isinstance(value, str):
        return None
    return value if len(value) <= limit else value[:limit] + "..."


def integer(value: object) -> int | None:
    """``value`` when it is an int (not a bool) of a sane size, else None."""
    if isinstance(value, int) and not isinstance(value, bool) and -MAX_INT <= value <= MAX_INT:
        return value
    return None


def seconds(value: object) -> float | None:
    """``value`` as finite float seconds when it is a number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int) and not -MAX_INT <= value <= MAX_INT:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def mapping(value: object) -> Mapping[str, object]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def items(value: object) -> list[object]:
    """``value`` when it is a JSON array, else an empty one."""
    return list(value) if isinstance(value, list) else []


def texts(value: object, limit: int, chars: int = NAME_CHARS) -> tuple[str, ...]:
    """The strings of a JSON array (others skipped), at most ``limit`` of them, each cut to ``chars``."""
    found: list[str] = []
    for entry in value if isinstance(value, list) else ():
        cut = short(entry, chars)
        if cut is not None:
            found.append(cut)
            if len(found) >= limit:
                break
    return tuple(found)


class Claims:
    """What one host's document claimed past the bounds: each kind once, as one sentence for its problems."""

    def __init__(self) -> None:
        self._excess: dict[str, str] = {}
        self._left: dict[str, int] = {}

    def over(self, what: str, sentence: str) -> None:
        """Record that ``what`` was past its bound (the first sentence for each kind is kept)."""
        self._excess.setdefault(what, sentence)

    def cap(self, values: list[Any], limit: int, what: str) -> list[Any]:
        """``values`` cut to ``limit``, recording the excess."""
        if len(values) > limit:
            self.over(what, f"the node sent {len(values)} {what}; only the first {limit} are read")
            return values[:limit]
        return values

    def allow(self, what: str, wanted: int, total: int) -> int:
        """How many of ``wanted`` more ``what`` this host may still send, out of ``total`` for the whole
        document (the excess is recorded)."""
        left = self._left.setdefault(what, total)
        granted = max(0, min(wanted, left))
        self._left[what] = left - granted
        if granted < wanted:
            self.over(what, f"the node sent more than {total} {what}; only the first {total} are read")
        return granted

    def problems(self) -> tuple[str, ...]:
        return tuple(self._excess.values())
