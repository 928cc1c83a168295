"""``--config FILE``: a TOML file that sets any option of any command, through click's ``default_map``.

Where the file is: ``--config FILE``, else ``$GPUDIAG_CONFIG``, else ``$XDG_CONFIG_HOME/gpudiag/config.toml``
(``~/.config/gpudiag/config.toml``) when it exists. Precedence: the command line, then the environment
(``GPUDIAG_CONFIG``, ``GPUDIAG_EVENT_LOOP``), then the file, then the built-in default - click's own order for a
``default_map``.

Layout: top-level keys apply to every command that has the option (``inventory = "..."`` serves sweep, watch,
grep, ...); a ``[sweep]``, ``[watch]``, ... table sets one command's options and wins over the top level. A key
is the long option name without its dashes (``prom-file``, or ``prom_file``), its value the TOML type of the
option: a string, a number, a boolean (a flag), or an array of strings (a repeatable option). An unknown key or
table, or a value of the wrong type, is refused in one line that names the file, its line and the key; a TOML
syntax error names the file and the line. contrib/audit.toml is an example.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

ENV = "GPUDIAG_CONFIG"


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


def read(path: Path) -> tuple[dict[str, Any], str]:
    """The file's tables and its text; :class:`ConfigError` for a missing file or a syntax error."""
    tomllib = _toml()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror or exc}") from None
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:  # its message says "(at line N, column M)"
        raise ConfigError(f"{path}: {exc}") from None


def _keys(command: Any) -> dict[str, Any]:
    """A click command's parameters by every key the file may use for them: the Python name and the long
    option names without dashes (``prom-file`` and ``prom_file`` both name ``prom_file``)."""
    keys: dict[str, Any] = {}
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
        header = re.match(r"\s*\[\s*([^\]\s]+)\s*\]", line)
        if header:
            current = header.group(1).strip("\"'")
        elif current == table and re.match(rf"\s*[\"']?{re.escape(key)}[\"']?\s*=", line):
            return number
    return None


def _kind(param: Any) -> str:
    name = getattr(param.type, "name", "")
    if getattr(param, "is_flag", False) or name == "boolean":
        return "boolean"
    return {"integer": "integer", "integer range": "integer", "float": "number", "float range": "number"}.get(
        name, "string")


def _fits(kind: str, value: object, choices: tuple[str, ...] | None) -> bool:
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, str) and (choices is None or value in choices)


def _checked(param: Any, value: object) -> str | None:
    """Why ``value`` cannot be ``param``'s (None: it can)."""
    kind = _kind(param)
    raw = getattr(param.type, "choices", None)
    choices = tuple(str(getattr(c, "value", c)) for c in raw) if raw is not None else None
    what = f"one of {', '.join(choices)}" if choices else f"a {kind}"
    if getattr(param, "multiple", False) or param.nargs == -1:
        if not isinstance(value, list) or not all(_fits(kind, v, choices) for v in value):
            return f"expected an array of {what.removeprefix('a ')}s" if not choices else f"expected an array, {what}"
        return None
    return None if _fits(kind, value, choices) else f"expected {what}, not {value!r}"


def defaults(path: Path, data: Mapping[str, Any], text: str, commands: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every command's ``default_map`` from the file's ``data``: checked whole, whichever command runs."""
    keyed = {name: _keys(command) for name, command in commands.items()}
    found: dict[str, dict[str, Any]] = {name: {} for name in commands}

    def refuse(table: str | None, key: str, why: str) -> ConfigError:
        line = _line(text, table, key)
        where = f"{path}:{line}" if line else str(path)
        return ConfigError(f"{where}: {f'[{table}] ' if table else ''}{key}: {why}")

    def put(table: str | None, key: str, value: object, names: list[str]) -> None:
        hits = [n for n in names if key in keyed[n]]
        if not hits:
            raise refuse(table, key, "unknown key" + ("" if table else " (no command has such an option)"))
        for name in hits:
            param = keyed[name][key]
            why = _checked(param, value)
            if why:
                raise refuse(table, key, why)
            found[name][param.name] = value

    tables = {key: value for key, value in data.items() if isinstance(value, dict)}
    for key, value in data.items():
        if key not in tables:
            put(None, key, value, list(commands))
    for table, values in tables.items():
        if table not in commands:
            raise refuse(None, table, f"unknown table [{table}] (the commands: {', '.join(commands)})")
        for key, value in values.items():
            put(table, key, value, [table])
    return found


def load(ctx: typer.Context, value: Path | None) -> Path | None:
    """``--config``'s callback (eager: before the other options are read): the file's values become this
    command's ``default_map``. A bad file: one line on stderr, exit 3."""
    if ctx.resilient_parsing:
        return value
    path = value if value is not None else (default_path() if default_path().is_file() else None)
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

