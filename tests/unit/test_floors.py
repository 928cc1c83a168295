"""The dependency floors that CI proves (ci/floors.txt: the lowest allowed versions, pinned, on which .ci/run
runs the unit tests) are the floors pyproject.toml declares: raising one without the other fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# name>=floor, then maybe a cap (,<0.29) and a marker (; python_version < '3.11')
_REQUIREMENT = re.compile(r'"([A-Za-z0-9_.-]+)>=([0-9][0-9.]*)(?:,<[0-9.]+)?(?:\s*;[^"]*)?"')


def _declared() -> dict[str, str]:
    """name -> floor of the runtime dependencies and the test extra (read as text: tomllib is 3.11+)."""
    text = (ROOT / "pyproject.toml").read_text()
    runtime = text[text.index("dependencies = ["):text.index("]", text.index("dependencies = ["))]
    test = text[text.index("\ntest = ["):text.index("]", text.index("\ntest = ["))]
    return {name.lower(): floor for name, floor in _REQUIREMENT.findall(runtime + test)}


def _pinned() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "ci" / "floors.txt").read_text().splitlines():
        entry = line.split("#", 1)[0].strip()
        if entry:
            name, _, version = entry.partition("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def _version(text: str | None) -> tuple[int, ...] | None:
    """``14.3`` and ``14.3.0`` are the same version (PEP 440 pads with zeros)."""
    if text is None:
        return None
    parts = [int(p) for p in text.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def test_every_pin_is_a_declared_floor_and_every_runtime_floor_is_pinned() -> None:
    declared, pinned = _declared(), _pinned()
    assert {name: _version(declared.get(name)) for name in pinned} == {n: _version(v) for n, v in pinned.items()}
    runtime = ("asyncssh", "typer", "rich", "pyyaml", "nvidia-ml-py", "orjson")
    assert all(name in pinned for name in runtime), sorted(set(runtime) - set(pinned))
