"""Thresholds of the checks: :class:`~gpudiag.model.CheckSettings` (a model value, declared in
:mod:`gpudiag.model.settings`, so that a report carries the ones its run used) and how flags and an inventory's
``checks:`` override them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from gpudiag.model.actions import Action
from gpudiag.model.settings import FLEET_FACTS, CheckSettings, VersionExpectation

__all__ = ["CheckSettings", "SettingsError", "parse_expect_action", "parse_expectations", "with_overrides"]


class SettingsError(ValueError):
    """A threshold override names no setting or is not a number."""


def with_overrides(base: CheckSettings, overrides: Mapping[str, object]) -> CheckSettings:
    """``base`` with ``overrides`` applied; unknown names and non-numbers raise :class:`SettingsError`."""
    names = {f.name for f in dataclasses.fields(CheckSettings)}
    changes: dict[str, float] = {}
    for key, value in overrides.items():
        if key not in names:
            raise SettingsError(f"unknown check setting {key!r} (known: {', '.join(sorted(names))})")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SettingsError(f"check setting {key!r} must be a number, not {value!r}")
        changes[key] = float(value)
    return dataclasses.replace(base, **changes)


def parse_expectations(texts: Sequence[str]) -> tuple[VersionExpectation, ...]:
    """``--expect "NVIDIA H200:driver=580.159.04"`` (repeatable; ``*`` for every model) as expectations; a text
    of another shape raises :class:`SettingsError` saying the one that is expected."""
    out = []
    for text in texts:
        model, sep, rest = text.rpartition(":")
        fact, eq, version = rest.partition("=")
        fact, model, version = fact.strip().lower(), model.strip(), version.strip()
        if not sep or not eq or not model or not version or fact not in FLEET_FACTS:
            raise SettingsError(f"--expect {text!r}: expected MODEL:FACT=VERSION, FACT one of "
                                f"{', '.join(FLEET_FACTS)} (e.g. \"NVIDIA H200:driver=580.159.04\", or * for every "
                                "model)")
        out.append(VersionExpectation(model=model, fact=fact, version=version))
    return tuple(out)


def parse_expect_action(text: str | None) -> Action:
    """``--expect-action``: the ladder's rung for a host off the operator's expectation (default watch)."""
    if text is None:
        return Action.WATCH
    try:
        return Action.from_label(text)
    except ValueError:
        raise SettingsError(f"--expect-action {text!r}: expected one of {', '.join(a.label for a in Action)}") from None
