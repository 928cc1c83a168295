"""Enums named by a word: :class:`Labelled`, the one way back from a word (JSON, history, an option) to a member.

Standard library only; see :mod:`gpudiag.model`."""

from __future__ import annotations

from typing import TypeVar

L = TypeVar("L", bound="Labelled")


class Labelled:
    """Mixed into an Enum whose members have a ``label`` (the word the JSON and the options use)."""

    @property
    def label(self) -> str:
        raise NotImplementedError  # each enum says what its word is

    @classmethod
    def from_label(cls: type[L], label: str) -> L:
        """The member whose label is ``label``; ValueError naming the labels for anything else
        ("unknown severity 'dire' (expected one of ok, warning, critical, unknown)")."""
        members: list[L] = list(cls)  # type: ignore[call-overload]
        for member in members:
            if member.label == label:
                return member
        kind = cls.__name__.lower()
        raise ValueError(f"unknown {kind} {label!r} (expected one of {', '.join(m.label for m in members)})")
