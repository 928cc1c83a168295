"""The model's frozen dataclasses ↔ plain JSON values, by walking ``dataclasses.fields`` and their types.

No field is listed by hand: a reading added to the model (and the table of readings) is written and read
back with no edit here. The conventions, all decided by the field's declared type:

* a dataclass is an object of its fields, in declaration order (:func:`encode` can leave some out and add
  derived values, which :func:`decode` ignores);
* ``tuple[X, ...]`` is a list, except ``tuple[tuple[str, V], ...]`` (pairs: a server's facts, a match's
  values, failed readings), which is an object;
* an enum is its value, except :class:`~gpudiag.model.Severity`, which is its label ("warning");
* ``Mapping[str, object]`` (a finding's evidence) is an object whose values are written as JSON (tuples
  become lists, enums their value, anything else its ``str``) and read back with lists as tuples;
* a float that is not finite (NaN, infinity) is not JSON: it is written as ``null``, "not reported".
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from gpudiag.model import Severity

_FIELDS: dict[type, tuple[tuple[str, object], ...]] = {}


def _fields(cls: type) -> tuple[tuple[str, object], ...]:
    """(name, declared type) of each field of the dataclass ``cls``, in declaration order (computed once)."""
    if cls not in _FIELDS:
        hints = typing.get_type_hints(cls)
        _FIELDS[cls] = tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))
    return _FIELDS[cls]


def _is_pairs(tp: object) -> object:
    """V when ``tp`` is ``tuple[tuple[str, V], ...]``, else None."""
    if typing.get_origin(tp) is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis and typing.get_origin(args[0]) is tuple:
            inner = typing.get_args(args[0])
            if len(inner) == 2 and inner[0] is str:
                return inner[1]
    return None


# Per class: fields to leave out, and derived values to add (name → value), e.g. a GPU's power figure.
Shape = Mapping[type, tuple[frozenset[str], Callable[[Any], Mapping[str, Any]] | None]]
_AS_SHAPED: tuple[frozenset[str], None] = (frozenset(), None)

# Written as they are: the exact types only (an enum that is also a str or an int is not one of them). Checked
# by type first: a 300-host report is some 200,000 values, and an isinstance chain per value was most of the
# JSON's cost (1.4 ms of CPU per 8-GPU host, against 0.03 for orjson's whole encoding).
_AS_IS = frozenset({str, int, bool, type(None)})
_PLANS: dict[type, tuple[tuple[str, bool], ...]] = {}


def _plan(cls: type) -> tuple[tuple[str, bool], ...]:
    """(name, written as an object of pairs) of each field of the dataclass ``cls``, computed once."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = tuple((name, _is_pairs(tp) is not None) for name, tp in _fields(cls))
    return plan


def plain(value: object, shape: Shape | None = None) -> object:
    """Any value as plain JSON values, without a declared type (evidence values, derived values)."""
    kind = type(value)
    if kind in _AS_IS:
        return value
    if kind is float:
        return value if math.isfinite(value) else None  # type: ignore[arg-type]
    if kind is tuple or kind is list:
        return [plain(v, shape) for v in value]  # type: ignore[attr-defined]
    if kind is dict:  # before the Mapping ABC, whose isinstance is slow
        return {str(k): plain(v, shape) for k, v in value.items()}  # type: ignore[attr-defined]
    if isinstance(value, Severity):
        return value.label
    if isinstance(value, enum.Enum):  # before str/int: HostStatus is a str, and should be its value
        return plain(value.value)
    if isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(kind, "__dataclass_fields__") and not isinstance(value, type):
        return encode(value, shape)
    if isinstance(value, Mapping):
        return {str(k): plain(v, shape) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, shape) for v in value]
    return str(value)


def encode(obj: object, shape: Shape | None = None) -> dict[str, object]:
    """A dataclass as a JSON object of its fields, then its derived values; ``shape`` says, per class,
    which fields to leave out and which derived values to add."""
    skip, derived = shape.get(type(obj), _AS_SHAPED) if shape else _AS_SHAPED
    out: dict[str, object] = {}
    for name, pairs in _plan(type(obj)):
        if name in skip:
            continue
        value = getattr(obj, name)
        kind = type(value)
        if kind in _AS_IS:  # plain()'s first test, inlined: most fields are these
            out[name] = value
        elif pairs and value is not None:
            out[name] = {str(k): plain(v, shape) for k, v in value}
        else:
            out[name] = plain(value, shape)
    if derived is not None:
        out.update({k: plain(v, shape) for k, v in derived(obj).items()})
    return out


def _tuples(value: object) -> object:
    """JSON lists back to tuples, recursively (the model's collection type)."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def decode_value(tp: Any, value: Any) -> Any:
    """A JSON value back to the declared type ``tp``; ValueError or TypeError when it cannot be."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        if all(a in (str, int, float, bool) for a in options):  # a fact value: any JSON scalar
            if isinstance(value, tuple(options)):
                return value
        return decode_value(options[0], value) if len(options) == 1 else value
    if value is None:
        if tp is object:
            return None
        raise ValueError("a required value is null")
    pairs = _is_pairs(tp)
    if pairs is not None:
        return tuple((str(k), decode_value(pairs, v)) for k, v in dict(value).items())
    if origin is tuple:
        (item, _) = typing.get_args(tp)
        return tuple(decode_value(item, v) for v in value)
    if origin is not None and issubclass(origin, Mapping):
        return _tuples(dict(value))
    if isinstance(tp, type):
        if issubclass(tp, Severity):
            return Severity.from_label(value)
        if issubclass(tp, enum.Enum):
            return tp(value)
        if dataclasses.is_dataclass(tp):
            return decode(tp, value)
        if tp is bool:
            return bool(value)
        if tp in (int, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"expected a number, got {value!r}")
            return tp(value)
        if tp is str:
            return str(value)
    return value


T = typing.TypeVar("T")


def decode(cls: type[T], doc: Mapping[str, object], **given: object) -> T:
    """A dataclass from its JSON object: every field present is read back by its declared type, absent ones
    keep their defaults, unknown keys (derived values) are ignored; ``given`` fields are taken as they are."""
    if not isinstance(doc, Mapping):
        raise ValueError(f"expected an object for {cls.__name__}, got {type(doc).__name__}")
    kwargs = dict(given)
    for name, tp in _fields(cls):
        if name not in given and name in doc:
            kwargs[name] = decode_value(tp, doc[name])
    return cls(**kwargs)
