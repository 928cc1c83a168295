"""Every command that reaches hosts takes the whole of each option group it should (read from the click
commands themselves), an option spelled on two commands is one declaration (the same help), and the help is
grouped in panels, names no ``<bool>``, and at 80 columns cuts no option name."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

import gpudiag.model.settings
from gpudiag.cli import options
from gpudiag.cli.app import app
from gpudiag.cli.params import Group, members

PANELS = {"Hosts", "SSH", "Sampling", "Checks", "Logs", "Output", "Audit", "Slurm", "Fleet"}
# The commands that reach hosts, and the groups each must take (over what options.TAKES says).
MUST = {
    "sweep": (options.HOSTS, options.SSH, options.FLEET, options.SAMPLING, options.CHECKS, options.LOGS,
              options.AUDIT, options.SLURM, options.DRAIN),
    "watch": (options.HOSTS, options.SSH, options.FLEET, options.SAMPLING, options.CHECKS),
    "grep": (options.HOSTS, options.SSH, options.FLEET, options.LOGS),
    "exporter": (options.HOSTS, options.SSH, options.FLEET, options.SAMPLING, options.CHECKS),
    "undrain": (options.HOSTS, options.SSH, options.FLEET, options.SAMPLING, options.CHECKS),
}
DEMO = ("sweep", "watch", "grep", "exporter")
# Options whose help or default differs on purpose from one command to another (each is still one Param).
VARIANTS = {"--format", "--pack", "--every", "--drain-on", "--samples", "--inventory", "--limit", "--exclude"}
ENV = {"PATH": "/usr/bin:/bin", "COLUMNS": "80", "TERM": "dumb"}


def _commands() -> dict[str, typer.core.TyperCommand]:
    return typer.main.get_command(app).commands  # type: ignore[attr-defined,no-any-return]


def _options(command: object) -> set[str]:
    return {o for p in command.params for o in (*p.opts, *p.secondary_opts)}  # type: ignore[attr-defined]


def _names(group: Group) -> set[str]:
    return {d.split("/")[0] for p in group.members for d in p.decls if d.startswith("--")}


@pytest.mark.parametrize("name", sorted(MUST))
def test_a_host_reaching_command_takes_every_option_of_its_groups(name: str) -> None:
    have = _options(_commands()[name])
    for group in MUST[name]:
        assert _names(group) <= have, (name, group.panel, sorted(_names(group) - have))
    assert ("--demo" in have) is (name in DEMO)
    assert "--config" in have


@pytest.mark.parametrize("name", sorted(options.TAKES))
def test_every_command_has_what_the_table_says(name: str) -> None:
    have = _options(_commands()[name])
    declared = {d.split("/")[0] for p in members(options.TAKES[name]) for d in p.decls}
    assert declared <= have, sorted(declared - have)


def test_the_table_fails_a_command_that_drops_an_option() -> None:
    # What the test above catches: watch as it was, without --login-timeout and --accept-new-host-keys.
    old_watch = _options(_commands()["watch"]) - {"--login-timeout", "--accept-new-host-keys"}
    assert not _names(options.SSH) <= old_watch


def test_an_option_on_two_commands_is_one_declaration() -> None:
    helps: dict[str, set[str]] = {}
    for command in _commands().values():
        for param in command.params:
            for opt in param.opts:
                if opt.startswith("--") and opt not in VARIANTS and param.name != "help":
                    helps.setdefault(opt, set()).add(getattr(param, "help", "") or "")
    assert {opt: texts for opt, texts in helps.items() if len(texts) > 1} == {}


def test_the_group_options_sit_in_their_panels() -> None:
    sweep = _commands()["sweep"]
    panels = {getattr(p, "rich_help_panel", None) for p in sweep.params} - {None}
    assert panels == PANELS
    grouped = {o: p.rich_help_panel for p in sweep.params for o in p.opts}  # type: ignore[attr-defined]
    assert (grouped["--login-timeout"], grouped["--busy-util-pct"], grouped["--history"]) == ("SSH", "Checks", "Audit")


def _help(*args: str) -> str:
    done = CliRunner().invoke(app, [*args, "-h"], env=ENV, prog_name="gpudiag", terminal_width=80)
    assert done.exit_code == 0, done.output
    return done.stdout


@pytest.mark.parametrize("name", sorted(options.TAKES))
def test_help_at_80_columns_cuts_no_option_name(name: str) -> None:
    text = _help(name)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "<bool>" not in text
    for param in _commands()[name].params:
        if getattr(param, "hidden", False) or param.param_type_name == "argument":
            continue
        for opt in (*param.opts, *param.secondary_opts):
            assert re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", text), (name, opt)


def _words(text: str) -> str:
    """The help's words in order, without the panels' borders (a help column's lines run on)."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def test_a_threshold_help_quotes_the_default_where_it_is_defined(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = gpudiag.model.settings.CheckSettings()
    text = _words(_help("sweep"))
    assert f"as busy (default {settings.busy_utilization_pct:g})" in text
    assert f"counts as low (default {settings.low_power_pct:g})" in text

    class Other(gpudiag.model.settings.CheckSettings):
        def __init__(self) -> None:
            super().__init__(busy_utilization_pct=77.0)

    monkeypatch.setattr(gpudiag.model.settings, "CheckSettings", Other)
    assert "as busy (default 77)" in _words(_help("watch"))


def test_the_root_help_names_no_bool_either() -> None:
    done = CliRunner().invoke(app, ["-h"], env=ENV, prog_name="gpudiag", terminal_width=80)
    assert done.exit_code == 0 and "--version" in done.stdout and "<bool>" not in done.stdout


def test_no_help_text_loses_a_bracket_to_rich_markup() -> None:
    """rich reads ``[word...]`` as a style tag and drops it: ``--expect``'s help said "the config's )." for "the
    config's [fleet."MODEL"]". A bracket that opens with a letter, ``#``, ``/`` or ``@`` (rich's tag start) must
    be escaped, ``\\[``."""
    tag = re.compile(r"(?<!\\)\[[a-z#/@][^\[]*?\]")
    eaten = {opt: help_text for command in _commands().values() for param in command.params
             for opt in param.opts if (help_text := getattr(param, "help", "") or "") and tag.search(help_text)}
    assert eaten == {}
