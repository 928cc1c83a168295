"""How a reading of each kind (``gpudiag_node.readings``: number, int, mask, text, cc, pstate, flag, enum) is
typed from what the node sent: nvidia-smi's words or NVML's number. One table, :data:`KINDS`, that
:func:`gpudiag.collect.parse.read_value` dispatches through (and nothing else does); a test pins its keys to
the kinds the readings table uses. Untrusted input: every value is bounded before it is typed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gpudiag.collect.untrusted import MAX_INT, short
from gpudiag.model.arch import parse_compute_capability
from gpudiag_node.readings import enum_from_words

Typed = tuple[object, str | None]  # the typed value or None, and why the read failed or None

MAX_READING = 1e15  # no reading (W, MHz, MiB, %, count) is larger; the clock-reason mask is a 64-bit field

# nvidia-smi's words for a flag reading (remapped_rows.pending "Yes", ecc.mode.current "Enabled").
_FLAG_WORDS = {"yes": True, "enabled": True, "active": True, "true": True, "on": True,
               "no": False, "disabled": False, "not active": False, "false": False, "off": False}


@dataclass(frozen=True, slots=True)
class Kind:
    """One kind: its value from NVML's number (after the range check), and from nvidia-smi's words: ``words``
    types them itself, or ``parse`` turns them into a number that goes the number's way."""

    number: Callable[[float], Typed]
    words: Callable[[str, str], Typed] | None = None  # (the value, its lowercase)
    parse: Callable[[str], float] = lambda value: float(value.split()[0])
    max: float = MAX_READING


def _integer(number: float) -> Typed:
    try:
        return int(number), None
    except (ValueError, OverflowError):
        return None, f"not an integer: {number!r}"


def _not_a(kind: str) -> Callable[[float], Typed]:
    return lambda number: (None, f"not a {kind}: {number!r}")


def _flag(value: str, low: str) -> Typed:
    flag = _FLAG_WORDS.get(low)
    return (flag, None) if flag is not None else (None, f"not a yes/no: {value[:40]!r}")


def _compute_capability(value: str, _low: str) -> Typed:
    cc = parse_compute_capability(value)
    return (f"{cc[0]}.{cc[1]}", None) if cc else (None, f"not a compute capability: {value[:40]!r}")


KINDS: Mapping[str, Kind] = {
    "number": Kind(number=lambda number: (float(number), None)),
    "int": Kind(number=_integer),
    "mask": Kind(number=_integer, parse=lambda value: int(value, 0), max=MAX_INT),
    "text": Kind(number=lambda number: (str(number), None), words=lambda value, _low: (short(value), None)),
    "pstate": Kind(number=_not_a("pstate"), words=lambda value, _low: (short(value), None)),
    "flag": Kind(number=lambda number: (bool(number), None), words=_flag),
    "enum": Kind(number=_not_a("enum"), words=lambda value, _low: (short(enum_from_words(value), 40), None)),
    "cc": Kind(number=_not_a("cc"), words=_compute_capability),
}


def from_number(kind: str, number: float) -> Typed:
    """NVML's number (or the number nvidia-smi printed) as a value of ``kind``, once it is finite and in range."""
    if isinstance(number, float) and not math.isfinite(number):
        return None, f"not a finite number: {number!r}"
    rule = KINDS[kind]
    if not -MAX_READING <= number <= rule.max:
        return None, "out of range" + (f": {number:.3g}" if abs(number) < 1e300 else "")
    return rule.number(number)


def from_words(kind: str, value: str, low: str) -> Typed:
    """nvidia-smi's words (stripped; ``low``: lowercased) as a value of ``kind``."""
    rule = KINDS[kind]
    if rule.words is not None:
        return rule.words(value, low)
    try:
        number = rule.parse(value)
    except (ValueError, IndexError, OverflowError):
        return None, f"not a number: {value[:40]!r}"
    return from_number(kind, number)
