"""Reading a JSON document that came from a node: every part type-checked as it is read, and a part that is
missing or of the wrong type reads as "not reported" (None, empty). Shared by the parsers of the probe
document (``gpudiag.parse``, ``gpudiag.parse_logs``). Pure, standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def text(value: object) -> str | None:
    """``value`` when it is a string, else None."""
    return value if isinstance(value, str) else None


def integer(value: object) -> int | None:
    """``value`` when it is an int (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def seconds(value: object) -> float | None:
    """``value`` as float seconds when it is a number (not a bool), else None."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def mapping(value: object) -> Mapping[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def items(value: object) -> list[Any]:
    """``value`` when it is a JSON array, else an empty one."""
    return list(value) if isinstance(value, list) else []
