"""Configuration echoes → facts: the values a server printed about its own configuration.

Three formats, as servers print them:

* ``python_kwargs``: ``ServerArgs(model_path='/m', tp_size=8, disable_flashinfer_autotune=False, ...)``
  (SGLang's ``server_args=`` line, vLLM's ``with config: model='/m', tensor_parallel_size=8, ...``);
* ``python_dict``: ``{'model': '/m', 'tensor_parallel_size': 8}`` (vLLM's ``non-default args:``);
* ``argv``: a command line, ``--tp 8 --moe-runner-backend flashinfer_cutlass --disable-cuda-graph``.

Values are read with :func:`ast.literal_eval` (which evaluates literals only, never code); anything else
(``LoRARef(...)``, a value cut at the line bound) is kept as its text. Nothing here raises on odd input.
"""

from __future__ import annotations

import ast
import shlex
from collections.abc import Iterable, Mapping

from gpudiag.model import FactValue

ECHO_CHARS = 32 * 1024  # what the node keeps of an echo line (collectors/gpudiag_node/logscan.py); more is not read
MAX_VALUE_CHARS = 2000  # longer values are kept as text, not evaluated
TEXT_CHARS = 200  # a value kept as text is cut to this
_OPEN = {"(": ")", "[": "]", "{": "}"}


def _items(text: str, start: int) -> tuple[list[str], bool]:
    """Top-level comma-separated items of ``text`` from ``start`` up to the bracket that closes the one before
    ``start`` (or the end of the text): quotes and nested brackets are respected. Also whether it closed."""
    closer = _OPEN.get(text[start - 1]) if start > 0 else None
    items: list[str] = []
    depth: list[str] = []
    quote: str | None = None
    current: list[str] = []
    i = start
    while i < len(text):
        c = text[i]
        if quote:
            current.append(c)
            if c == "\\" and i + 1 < len(text):
                current.append(text[i + 1])
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in ("'", '"'):
            quote = c
            current.append(c)
        elif c in _OPEN:
            depth.append(_OPEN[c])
            current.append(c)
        elif depth and c == depth[-1]:
            depth.pop()
            current.append(c)
        elif not depth and c == closer:
            items.append("".join(current))
            return [s for s in (x.strip() for x in items) if s], True
        elif not depth and c == ",":
            items.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    items.append("".join(current))
    return [s for s in (x.strip() for x in items) if s], False


def value_of(text: str) -> FactValue:
    """A Python literal's value when it is a scalar; else its text (cut)."""
    text = text.strip()
    if len(text) <= MAX_VALUE_CHARS:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            value = text
    else:
        value = text
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if not isinstance(value, str):
        value = repr(value)
    return value if len(value) <= TEXT_CHARS else value[:TEXT_CHARS] + "..."


def parse_kwargs(text: str, start: int = 0) -> dict[str, FactValue]:
    """``key=value, key=value`` from ``start`` (after ``Name(``, or to the end of the line)."""
    facts: dict[str, FactValue] = {}
    for item in _items(text, start)[0]:
        key, eq, value = item.partition("=")
        key = key.strip()
        if eq and key.isidentifier():
            facts[key] = value_of(value)
    return facts


def _top_level_colon(item: str) -> int:
    """Where the first ``:`` outside quotes and brackets is in ``item`` (-1: none)."""
    quote: str | None = None
    depth = 0
    escaped = False
    for i, c in enumerate(item):
        if quote:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == quote:
                quote = None
        elif c in ("'", '"'):
            quote = c
        elif c in _OPEN:
            depth += 1
        elif c in _OPEN.values():
            depth -= 1
        elif c == ":" and depth == 0:
            return i
    return -1


def parse_dict(text: str, start: int = 0) -> dict[str, FactValue]:
    """``{'key': value, ...}`` starting at or after ``start``."""
    brace = text.find("{", start)
    if brace < 0:
        return {}
    facts: dict[str, FactValue] = {}
    for item in _items(text, brace + 1)[0]:
        colon = _top_level_colon(item)
        key = value_of(item[:colon]) if colon > 0 else None
        if isinstance(key, str):
            facts[key] = value_of(item[colon + 1:])
    return facts


def parse_argv(text: str, start: int = 0) -> dict[str, FactValue]:
    """``--flag value``, ``--flag=value`` and bare ``--flag`` (true) into facts named with ``_``."""
    try:
        tokens = shlex.split(text[start:], posix=True)
    except ValueError:  # an unbalanced quote: the line was cut, or is not shell
        tokens = text[start:].split()
    facts: dict[str, FactValue] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("-") or token in ("-", "--"):
            continue
        name, eq, value = token.lstrip("-").partition("=")
        key = name.replace("-", "_")
        if eq:
            facts[key] = _argv_value(value)
        elif i < len(tokens) and not tokens[i].startswith("-"):
            facts[key] = _argv_value(tokens[i])
            i += 1
        else:
            facts[key] = True
    return facts


def _argv_value(text: str) -> FactValue:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    return text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS] + "..."


PARSERS = {"python_kwargs": parse_kwargs, "python_dict": parse_dict, "argv": parse_argv}


def facts_of(fmt: str, text: str, start: int, keys: Iterable[str],
             aliases: Mapping[str, str] | None = None) -> tuple[tuple[str, FactValue], ...]:
    """The facts ``keys`` (in that order) of an echo line, reading from ``start`` (where its regex matched
    to); ``aliases`` name facts by another flag (``tp`` → ``tp_size``). Keys the line lacks are left out."""
    text = text[:ECHO_CHARS]  # bounded whatever a node sent: the parsers are linear, shlex is not
    parsed = PARSERS[fmt](text, min(start, len(text)))
    for alias, fact in (aliases or {}).items():
        if alias in parsed and fact not in parsed:
            parsed[fact] = parsed[alias]
    return tuple((key, parsed[key]) for key in keys if key in parsed)


def same_value(fact: FactValue, wanted: FactValue) -> bool:
    """Whether a fact equals a wanted value, across spellings: ``False`` == ``"false"``, ``8`` == ``"8"``."""
    return _canonical(fact) == _canonical(wanted)


def _canonical(value: FactValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    text = str(value).strip().lower()
    return {"none": "none", "null": "none"}.get(text, text)


def show(value: FactValue) -> str:
    """A fact as the operator reads it: ``False``, ``8``, ``flashinfer_cutlass``."""
    return str(value)
