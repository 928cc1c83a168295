"""Compute capability → SM name and architecture family.

Classified on the exact (major, minor) pair: 10.x (datacenter Blackwell: B200, GB200, B300) and 12.x
(RTX Blackwell: RTX PRO 6000, RTX 50xx, GB10) are different families with different kernels, so code
written as ``major >= 10`` gets it wrong. Table from NVIDIA's CUDA GPU list
(https://developer.nvidia.com/cuda-gpus) and the CUDA 13 renaming of Thor from 10.1 to 11.0.
"""

from __future__ import annotations

_ARCH_BY_CC: dict[tuple[int, int], str] = {
    (3, 0): "Kepler", (3, 5): "Kepler", (3, 7): "Kepler",
    (5, 0): "Maxwell", (5, 2): "Maxwell", (5, 3): "Maxwell",
    (6, 0): "Pascal", (6, 1): "Pascal", (6, 2): "Pascal",
    (7, 0): "Volta", (7, 2): "Volta",
    (7, 5): "Turing",
    (8, 0): "Ampere", (8, 6): "Ampere", (8, 7): "Ampere",
    (8, 9): "Ada Lovelace",
    (9, 0): "Hopper",
    (10, 0): "Blackwell (datacenter)", (10, 1): "Blackwell (Thor)", (10, 3): "Blackwell (datacenter)",
    (11, 0): "Blackwell (Thor)",
    (12, 0): "Blackwell (RTX)", (12, 1): "Blackwell (RTX)",
}

# A major version seen with an unlisted minor keeps its family name when the family is unambiguous.
_ARCH_BY_MAJOR: dict[int, str] = {9: "Hopper", 12: "Blackwell (RTX)"}


def parse_compute_capability(text: str | None) -> tuple[int, int] | None:
    """``"12.0"`` → ``(12, 0)``; anything else → None."""
    if not text:
        return None
    major, dot, minor = text.strip().partition(".")
    # ASCII digits only: "²" passes isdigit() and fails int(); a long run is no capability either
    if not dot or not all(part.isascii() and part.isdigit() and len(part) <= 3 for part in (major, minor)):
        return None
    return int(major), int(minor)


def sm_name(cc: tuple[int, int] | None) -> str | None:
    """``(12, 0)`` → ``"SM120"``, ``(9, 0)`` → ``"SM90"``, ``(10, 3)`` → ``"SM103"``."""
    if cc is None:
        return None
    return f"SM{cc[0]}{cc[1]}"


def arch_name(cc: tuple[int, int] | None) -> str | None:
    """The architecture family, or None when unknown (never guessed from ``major >= N``)."""
    if cc is None:
        return None
    return _ARCH_BY_CC.get(cc) or _ARCH_BY_MAJOR.get(cc[0])
