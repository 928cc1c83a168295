"""``--config FILE``: a TOML file that sets any option of any command, through click's ``default_map``.

Where the file is: ``--config FILE``, else ``$GPUDIAG_CONFIG``, else ``$XDG_CONFIG_HOME/gpudiag/config.toml``
(``~/.config/gpudiag/config.toml``) when it exists. Precedence: the command line, then the environment
(``GPUDIAG_CONFIG``, ``GPUDIAG_EVENT_LOOP``), then the file, then the built-in default - click's own order for a
``default_map``. The global ``--event-loop`` (before the command's name) is not read from the file: give it on
the command line or as ``GPUDIAG_EVENT_LOOP``.

Layout: the ``[defaults]`` table's keys apply to every command that has the option (``inventory = "..."``
serves sweep, watch, grep, ...); a ``[sweep]``, ``[watch]``, ... table sets one command's options and wins over
``[defaults]``. A key is the long option name without its dashes (``prom-file``, or ``prom_file``), its value
the TOML type of the option: a string, a number, a boolean (a flag), or an array of strings (a repeatable
option). An unknown key or table, or a value of the wrong type, is refused in one line that names the file,
its line and the key; a TOML syntax error names the file and the line. contrib/audit.toml is an example.

``[fleet]`` says what each GPU model's hosts must run (DRIVER_DRIFT's expectation, beating the group's vote): one
table per model, ``[fleet."NVIDIA H200"]`` with ``driver``, ``cuda`` and ``vbios`` keys, and ``action = "..."``
for a host off it; they fill ``--expect`` and ``--expect-action`` of every command that has them.
"""

from __future__ import annotations

import enum
import math
import os
import re
import sys
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from gpudiag.cli.params import TYPES

ENV = "GPUDIAG_CONFIG"
SHARED = "defaults"  # the table whose keys apply to every command that has the option
# [fleet]: what each GPU model's hosts must run, one table per model ([fleet."NVIDIA H200"] driver = "580.159.04"),
# and action = "..." for a host off it: the --expect and --expect-action of every command that has them
FLEET = "fleet"
FLEET_FACTS = ("driver", "cuda", "vbios")


class ConfigError(ValueError):
    """The config file cannot be used; the message is one line naming the file (and the line, the key)."""


def default_path() -> Path:
    """``$XDG_CONFIG_HOME/gpudiag/config.toml``, ``~/.config/gpudiag/config.toml`` without it."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "gpudiag" / "config.toml"


def _toml() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: the same parser, from PyPI (a dependency there)
        import tomli as tomllib
    return tomllib


MAX_CONFIG_BYTES = 1024 * 1024  # a config file is a few KB; more is not one (a device, a log given by mistake)


def _bytes(path: Path) -> bytes:
    """The file's bytes (:func:`gpudiag.audit.inputs.read_bytes`: a FIFO would hang the read, /dev/zero never
    end); :class:`ConfigError` otherwise."""
    from gpudiag.audit.inputs import InputError, read_bytes

    try:
        return read_bytes(path, MAX_CONFIG_BYTES, what="a config file")
    except InputError as exc:
        raise ConfigError(str(exc)) from None


def read(path: Path) -> tuple[dict[str, object], str]:
    """The file's tables and its text; :class:`ConfigError` for a file that is missing, not a regular file,
    too large, not UTF-8, or not TOML (a leading byte-order mark is allowed, as editors write one)."""
    tomllib = _toml()
    data = _bytes(path)
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:  # its message says "(at line N, column M)"
        import re

        said = str(exc)
        said = said[:1].lower() + said[1:]
        at = re.search(r" \(at line (\d+), column (\d+)\)$", said)  # file:line first, as every other error
        if at is None:
            raise ConfigError(f"{path}: not TOML: {said}") from None
        raise ConfigError(f"{path}:{at[1]}: not TOML: {said[:at.start()]} at column {at[2]}") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to be a config file") from None


def _keys(command: Any) -> dict[str, Any]:
    """A click command's parameters by every key the file may use for them: the Python name and the long
    option names without dashes (``prom-file`` and ``prom_file`` both name ``prom_file``)."""
    keys: dict[str, object] = {}
    for param in command.params:
        if param.name in (None, "config", "help"):
            continue
        keys[param.name] = param
        for opt in param.opts:
            if opt.startswith("--"):
                keys[opt[2:]] = keys[opt[2:].replace("-", "_")] = param
    return keys


def _line(text: str, table: str | None, key: str) -> int | None:
    """The line of ``key`` in ``table`` (None: the top level), for the error message."""
    current = None
    for number, line in enumerate(text.splitlines(), 1):
        header = re.match(r"\s*\[\s*([^\]]+?)\s*\]\s*(?:#.*)?$", line)
        name = header.group(1) if header else ""
        if name[:1] in "\"'" and name[-1:] == name[:1]:  # a quoted table name: ["defaults"]
            name = name[1:-1]
        if header and table is None and name == key:  # the table itself
            return number
        if header:
            current = name
        elif current == table and re.match(rf"\s*[\"']?{re.escape(key)}[\"']?\s*=", line):
            return number
    return None


def _kind(tp: Any) -> tuple[str, tuple[str, ...] | None, bool]:
    """What TOML value a parameter of Python type ``tp`` takes: (kind, the choices, an array?)."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) is list:
        return (*_kind(args[0])[:2], True)
    if args and typing.get_origin(tp) is not list and len(args) == 1:  # X | None
        return _kind(args[0])
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "string", tuple(str(m.value) for m in tp), False
    kind = {bool: "boolean", int: "integer", float: "number"}.get(tp, "string")
    return kind, None, False


def _fits(kind: str, value: object, choices: tuple[str, ...] | None) -> bool:
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":  # TOML has inf and nan; no option of gpudiag means either
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return isinstance(value, str) and (choices is None or value in choices)


def _checked(tp: object, value: object) -> str | None:
    """Why ``value`` cannot be a parameter of type ``tp``'s (None: it can)."""
    kind, choices, array = _kind(tp)
    what = f"one of {', '.join(choices)}" if choices else {"integer": "an integer", "number": "a finite number"}.get(
        kind, f"a {kind}")
    if array:
        if not isinstance(value, list) or not all(_fits(kind, v, choices) for v in value):
            return f"expected an array of {kind}s" + (f" ({what})" if choices else "")
        return None
    return None if _fits(kind, value, choices) else f"expected {what}, not {value!r}"


def _known(key: str, keys: set[str]) -> str:
    """ "; did you mean only-changes? known: a, b, ..." for an unknown ``key``."""
    import difflib

    close = difflib.get_close_matches(key.replace("_", "-"), sorted(keys), n=1)
    return (f"; did you mean {close[0]}?" if close else "") + (f"; known: {', '.join(sorted(keys))}" if keys else "")


def defaults(path: Path, data: Mapping[str, Any], text: str, commands: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every command's ``default_map`` from the file's ``data``: checked whole, whichever command runs."""
    keyed = {name: _keys(command) for name, command in commands.items()}
    found: dict[str, dict[str, object]] = {name: {} for name in commands}

    def refuse(table: str | None, key: str, why: str) -> ConfigError:
        line = _line(text, table, key)
        where = f"{path}:{line}" if line else str(path)
        return ConfigError(f"{where}: {f'[{table}] ' if table else ''}{key}: {why}")

    def put(table: str | None, key: str, value: object, names: list[str]) -> None:
        hits = [n for n in names if key in keyed[n]]
        if not hits:
            raise refuse(table, key, "unknown key" + (" (no command has such an option)" if table == SHARED else "")
                         + _known(key, {k for n in names for k in keyed[n] if "_" not in k}))
        for name in hits:
            param = keyed[name][key]
            why = _checked(TYPES.get(name, {}).get(param.name, str), value)
            if why:
                raise refuse(table, key, why)
            found[name][param.name] = value

    for key, value in data.items():
        if not isinstance(value, dict):
            raise refuse(None, key, f"a key outside any table (put it in [{SHARED}] or a command's table)")
        if key not in (SHARED, FLEET) and key not in commands:
            raise refuse(None, key, f"unknown table [{key}] (known: {SHARED}, {FLEET}, {', '.join(commands)})")
    expect: list[str] = []
    for key, value in data.get(FLEET, {}).items():
        if key == "action":
            from gpudiag.model.actions import Action

            if value not in [a.label for a in Action]:
                raise refuse(FLEET, key, f"expected one of {', '.join(a.label for a in Action)}, not {value!r}")
            put(FLEET, "expect-action", value, [n for n in commands if "expect_action" in keyed[n]])
        elif isinstance(value, dict):
            table = f'{FLEET}."{key}"'
            for fact, version in value.items():
                if fact not in FLEET_FACTS:
                    raise refuse(table, fact, f"unknown key (known: {', '.join(FLEET_FACTS)})")
                if not isinstance(version, str):
                    raise refuse(table, fact, f"expected a string, not {version!r}")
                expect.append(f"{key}:{fact}={version}")
        else:
            raise refuse(FLEET, key, 'unknown key (known: action, and a table per GPU model: [fleet."NVIDIA H200"])')
    if expect:
        put(FLEET, "expect", expect, [n for n in commands if "expect" in keyed[n]])
    for key, value in data.get(SHARED, {}).items():
        put(SHARED, key, value, list(commands))
    for table, values in data.items():
        if table not in (SHARED, FLEET):
            for key, value in values.items():
                put(table, key, value, [table])
    return found


def _default_if_there() -> Path | None:
    """:func:`default_path` when it is a file; a folder this user may not look into (``sudo -u`` keeping
    ``HOME``) is the same as no file, not a traceback."""
    try:
        return default_path() if default_path().is_file() else None
    except OSError:
        return None


def load(ctx: typer.Context, value: Path | None) -> Path | None:
    """``--config``'s callback (eager: before the other options are read): the file's values become this
    command's ``default_map``. A bad file: one line on stderr, exit 3."""
    if ctx.resilient_parsing:
        return value
    path = value if value is not None else _default_if_there()
    if path is None:
        return value
    root = ctx.find_root()
    commands = getattr(root.command, "commands", {ctx.info_name: ctx.command})
    try:
        data, text = read(path)
        found = defaults(path, data, text, commands)
    except ConfigError as exc:
        from gpudiag.cli.common import fail

        raise fail(str(exc)) from None
    ctx.default_map = {**found.get(ctx.info_name or "", {}), **(ctx.default_map or {})}
    return path

