"""How an option is declared once and stacked onto every command that takes it (dbt-core's ``params.py`` idea).

A :class:`Param` is one option (or argument): its Python name, type, default and typer declaration, with its
help panel, and the :class:`Setting` it fills: a field of one of the request's values
(:mod:`gpudiag.model.request`), whose default is the option's unless the option says another. A :class:`Group`
is the options of one panel that belong together (the hosts, SSH, sampling...). :func:`takes` builds a
command's signature from the groups it takes plus its own parameters, and calls the command with one
:class:`Given`: the values and the parameters they came from, which :func:`gpudiag.cli.build.request` turns into
the one typed request in one loop over the settings. :class:`Command` is the click command class of every
gpudiag command: it fills the help texts that quote a default from where it is defined (:attr:`Param.late_help`)
only when a command's help is shown, so that ``gpudiag --help`` imports no layer below.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup


def finite(value: float | None) -> float | None:
    """A float option's check: ``nan`` and ``inf`` parse as floats, yet no option means either (``--timeout
    inf`` was a traceback, ``--connect-timeout nan`` made every host unreachable, ``--busy-util-pct nan``
    flagged GPUs it should not)."""
    import math

    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value}: expected a finite number")
    return value


def ascii_port(value: object) -> int:
    """``--port``'s parser: ASCII digits only. Python's ``int()`` reads any Unicode digit, so ``--port ２２``
    would reach port 22 although ssh reads no such port; a value from the config file is an int already."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value)
    if not (text.isascii() and text.isdigit()):
        from gpudiag.model.ssh_target import not_ascii

        raise typer.BadParameter(f"{text!r}: " + (not_ascii(text) or "expected a port number 1-65535"))
    return int(text)


@dataclass(frozen=True, slots=True)
class Setting:
    """The field of a request value that an option fills: ``Setting(SweepOptions, "samples")``, and ``parse``
    when the option's text is not yet the value (``--shard 1/4`` -> ``(1, 4)``; it raises a one-line
    ``ValueError``). A list given becomes a tuple."""

    owner: type
    field: str
    parse: Callable[[Any], Any] | None = None

    @property
    def default(self) -> object:
        """The field's default, where the value is declared: the option's default unless it says another."""
        declared = next(f for f in dataclasses.fields(self.owner) if f.name == self.field)
        if declared.default_factory is not dataclasses.MISSING:
            return declared.default_factory()
        return declared.default


class _FromSetting:
    """The default of a :class:`Param` that takes its setting's (:attr:`Setting.default`)."""

    def __repr__(self) -> str:
        return "FROM_SETTING"


FROM_SETTING: object = _FromSetting()


@dataclass(frozen=True, slots=True, kw_only=True)
class Param:
    """One command-line parameter, declared once. Its default is its setting's (``fills``) unless given."""

    name: str  # the Python name: the config file's keys use it
    type: object
    default: object = FROM_SETTING
    fills: Setting | None = None  # what it sets in the request; None: the command reads it itself
    decls: tuple[str, ...] = ()  # "--inventory", "-i"; none for an argument
    help: str = ""
    panel: str | None = None
    argument: bool = False
    late_help: Callable[[], str] | None = None  # appended to help when a command's help is shown
    extra: Mapping[str, object] = dataclasses.field(default_factory=dict)  # min=, max=, metavar=, envvar=...

    def __post_init__(self) -> None:
        if self.default is FROM_SETTING:
            if self.fills is None:
                raise TypeError(f"{self.name}: a default, or the setting it fills")
            default = self.fills.default
            # click's repeatable options take a list; a flag's default is its own
            object.__setattr__(self, "default", list(default) if isinstance(default, tuple) else default)

    @property
    def members(self) -> tuple[Param, ...]:
        """A parameter taken alone is a group of one (a command's table entry is a Group or a Param)."""
        return (self,)

    def but(self, **changes: Any) -> Param:
        """This parameter with another default (``default=``) or help for one command."""
        return dataclasses.replace(self, **changes)

    def info(self) -> object:
        """The typer declaration (a default-style ``typer.Option``/``typer.Argument``)."""
        kwargs: dict[str, Any] = {"help": self.help, "rich_help_panel": self.panel, **self.extra}
        if self.argument:
            return typer.Argument(self.default, **kwargs)
        if self.type in (float, float | None) and "callback" not in kwargs:
            kwargs["callback"] = finite
        if self.type in (bool, bool | None) and "metavar" not in kwargs:
            kwargs["metavar"] = ""  # a flag takes no value: no <bool> in the help
        return typer.Option(self.default, *self.decls, **kwargs)


@dataclass(frozen=True, slots=True)
class Group:
    """The options of one help panel that go together: a command takes all of them or none."""

    panel: str
    members: tuple[Param, ...]

    def but(self, **defaults: object) -> Group:
        """The group with other defaults for some members (``samples=2``), for one command."""
        return Group(self.panel, tuple(p.but(default=defaults[p.name]) if p.name in defaults else p
                                       for p in self.members))


Takes = Group | Param

# Each command's parameters' Python types by name, as :func:`takes` declared them: what a config file's value
# is checked against (gpudiag.cli.config), whatever click or typer make of the types.
TYPES: dict[str, dict[str, object]] = {}


class Given(Mapping[str, object]):
    """The values of the groups' parameters of one invocation, by :attr:`Param.name`, and the parameters."""

    def __init__(self, values: Mapping[str, object], params: tuple[Param, ...] = ()) -> None:
        self._values = dict(values)
        self.params = params

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def members(takes: tuple[Takes, ...]) -> tuple[Param, ...]:
    """Every parameter of ``takes``, in order."""
    return tuple(p for t in takes for p in t.members)


def takes(name: str, *groups: Takes) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The command ``name`` takes ``groups`` (after its own parameters); it is called with a
    ``given: Given`` holding their values."""
    params = members(groups)

    def wrap(func: Callable[..., None]) -> Callable[..., None]:
        own = [p for p in inspect.signature(func, eval_str=True).parameters.values() if p.name != "given"]
        names = [p.name for p in params]

        @functools.wraps(func)
        def command(**values: Any) -> None:
            given = Given({name: values.pop(name) for name in names}, params)
            func(**values, given=given)

        added = [inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=p.info(), annotation=p.type)
                 for p in params]
        command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own] + added)
        command.__annotations__ = {p.name: p.annotation for p in own} | {p.name: p.type for p in params}
        del command.__wrapped__  # typer must read the signature above
        command.late_help = {p.name: p.late_help for p in params if p.late_help}  # type: ignore[attr-defined]
        command.command_name = name  # type: ignore[attr-defined]
        TYPES[name] = dict(command.__annotations__)
        return command

    return wrap


class _NoFlagMetavar:
    """The help option is a flag: no ``<bool>`` beside it."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            option.metavar = ""
        return option


class RootGroup(_NoFlagMetavar, TyperGroup):
    """The ``gpudiag`` group itself."""


class Command(_NoFlagMetavar, TyperCommand):
    """Every gpudiag command: help texts that quote a default get it when the help is shown."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        late: Mapping[str, Callable[[], str]] = getattr(self.callback, "late_help", {})
        for param in self.params:
            fill = late.get(param.name or "")
            if fill is not None and getattr(param, "help", None) is not None:
                text = fill()
                if not param.help.endswith(text):  # type: ignore[attr-defined]
                    param.help = f"{param.help} {text}"  # type: ignore[attr-defined]
        super().format_help(ctx, formatter)
