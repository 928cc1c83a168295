"""Thresholds of the checks: :class:`~gpudiag.model.CheckSettings` (a model value, declared in
:mod:`gpudiag.model.settings`, so that a report carries the ones its run used) and how flags and an inventory's
``checks:`` override them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from gpudiag.model.settings import CheckSettings

__all__ = ["CheckSettings", "SettingsError", "with_overrides"]


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
