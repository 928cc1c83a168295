"""The options of one invocation (a :class:`~gpudiag.cli.params.Given`) as the one typed request, in one loop:
each option names the setting it fills (:class:`~gpudiag.cli.params.Setting`), so :func:`request` gathers the
values by the dataclass they belong to and builds :class:`~gpudiag.model.request.SweepRequest` from them, the
values nested in it (the sweep's options, its logs, the hosts and their Slurm filters, SSH, the audit...)
included. A new option is one :class:`~gpudiag.cli.params.Param` in :mod:`gpudiag.cli.options`; nothing here
names it.

Imported by the commands where they run. Bad values raise one-line ``ValueError`` subclasses (``ShardError``,
``WorkersError``, ``AuditConfigError``, :class:`~gpudiag.run.request.RequestError`...): the commands turn them
into exit 3.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from gpudiag.cli.params import Given
from gpudiag.model.request import OutputRequest, SweepRequest
from gpudiag.model.settings import CheckSettings

T = TypeVar("T")

# What a command sets itself, by the value it belongs to: {SweepOptions: {"stream": True}}.
Fixed = Mapping[type, Mapping[str, object]]


def _given(given: Given, fixed: Fixed) -> tuple[dict[type, dict[str, Any]], set[type]]:
    """The values given, by the dataclass they fill, with ``fixed`` over them; and every dataclass the command
    takes an option of (given or not: its value is then built, with its defaults). An option left at None is not
    given: the field keeps its own default."""
    values: dict[type, dict[str, object]] = {}
    taken: set[type] = set()
    for param in given.params:
        setting = param.fills
        if setting is None:
            continue
        taken.add(setting.owner)
        raw = given[param.name]
        if raw is None:
            continue
        value = setting.parse(raw) if setting.parse is not None else raw
        values.setdefault(setting.owner, {})[setting.field] = tuple(value) if isinstance(value, list) else value
    for owner, changes in fixed.items():
        taken.add(owner)
        values.setdefault(owner, {}).update(changes)
    return values, taken


def _nested(hint: object) -> tuple[type | None, bool]:
    """The dataclass a field holds (``X`` or ``X | None``), and whether it is optional."""
    optional = isinstance(hint, types.UnionType) and type(None) in typing.get_args(hint)
    inner = next((a for a in typing.get_args(hint) if a is not type(None)), None) if optional else hint
    return (inner if dataclasses.is_dataclass(inner) and isinstance(inner, type) else None), optional


def _build(cls: type[T], values: Mapping[type, Mapping[str, object]], taken: set[type]) -> T:
    """``cls`` with the values given for it, each nested dataclass built the same way where the command takes
    an option of it (an optional one that comes out ``empty`` is None; one not taken keeps its default)."""
    fields: dict[str, object] = dict(values.get(cls, {}))
    for name, hint in typing.get_type_hints(cls).items():
        inner, optional = _nested(hint)
        if inner is None or name in fields or not _takes(inner, taken):
            continue
        nested: object = _build(inner, values, taken)
        fields[name] = None if optional and getattr(nested, "empty", False) else nested
    return cls(**fields)


def _takes(cls: type, taken: set[type]) -> bool:
    """Whether the command takes an option of ``cls`` or of a dataclass nested in it."""
    if cls in taken:
        return True
    return any(inner is not None and _takes(inner, taken)
               for inner, _ in map(_nested, typing.get_type_hints(cls).values()))


def value(given: Given, cls: type[T], fixed: Fixed | None = None) -> T:
    """One value of the request alone (``inventory`` lists a :class:`~gpudiag.model.request.HostSelection`)."""
    values, taken = _given(given, fixed or {})
    return _build(cls, values, taken)


def request(given: Given, fixed: Fixed | None = None) -> SweepRequest:
    """The one :class:`SweepRequest` from the options the command took, with what it sets itself (``fixed``),
    checked (:func:`gpudiag.run.request.check`). Three values are not one option's: the check settings given
    (:attr:`SweepRequest.checks`, laid over the inventory's when the run is prepared), the output's width and
    live progress (this terminal's), and the audit's record of the options that chose the hosts."""
    from gpudiag.cli.common import output_request
    from gpudiag.run.request import check

    values, taken = _given(given, fixed or {})
    checks = values.pop(CheckSettings, {})
    taken.discard(CheckSettings)
    built = _build(SweepRequest, values, taken)
    out = built.output
    built = dataclasses.replace(built, checks=checks, output=output_request(
        out.format, quiet=out.quiet, samples_detail=out.samples_detail, fold=out.fold,
        progress=values.get(OutputRequest, {}).get("progress", given.get("progress"))))
    if built.audit is not None:
        built = dataclasses.replace(built, audit=dataclasses.replace(built.audit, selection=selection(given)))
    return check(built)


# The options that narrow a run to some hosts (the history keeps them with the run, beside the hosts swept).
_SELECTING = (("limit", "--limit"), ("exclude", "--exclude"), ("shard", "--shard"),
              ("slurm_partition", "--slurm-partition"), ("slurm_nodelist", "--slurm-nodelist"),
              ("slurm_job", "--slurm-job"), ("slurm_state", "--slurm-state"))


def selection(given: Mapping[str, object]) -> tuple[str, ...]:
    """The host-selecting options given, as words: ``("--exclude", "gpu07", "--shard", "1/4")``."""
    words: list[str] = []
    for name, flag in _SELECTING:
        chosen = given.get(name)
        for item in chosen if isinstance(chosen, (list, tuple)) else ([] if chosen is None else [chosen]):
            words += [flag, str(item)]
    return tuple(words)

