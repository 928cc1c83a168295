"""NaN and infinity in float options (issue 30, fault matrix #6): they parse as floats, so they passed every
check; ``--connect-timeout nan`` made every host unreachable, ``--busy-util-pct nan`` flagged GPUs it should
not, ``--timeout inf`` was a traceback. Now each is a usage error naming the option (``gpudiag`` exits 3;
click's own runner here says 2), before any connection; the config file refuses them too
(tests/unit/cli/test_config_bounds.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_config_file import invoke

from gpudiag.cli.options import TAKES
from gpudiag.cli.params import members

FLOATS = sorted({p.decls[0] for p in members(TAKES["sweep"]) if p.type in (float, float | None)})


def test_the_float_options_are_found() -> None:
    assert {"--timeout", "--connect-timeout", "--busy-util-pct", "--interval", "--keep-days"} <= set(FLOATS)


@pytest.mark.parametrize("flag", FLOATS)
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "Infinity"])
def test_no_float_option_takes_nan_or_infinity(tmp_path: Path, flag: str, value: str) -> None:
    done = invoke(tmp_path, "sweep", "127.0.0.1:9", flag, value)
    assert done.exit_code == 2, done.output  # type: ignore[attr-defined]  # click's usage error (the app: 3)
    said = " ".join(done.output.replace("│", " ").split())  # type: ignore[attr-defined]  # the box unwrapped
    assert f"Invalid value for '{flag}'" in said  # a range check may say it first: "not in the range x>=0.1"
    assert "expected a finite number" in said or ("not in the range" in said and value != "nan"), said


@pytest.mark.parametrize(("command", "flag"), [("watch", "--every"), ("exporter", "--every")])
def test_the_commands_own_float_options_too(tmp_path: Path, command: str, flag: str) -> None:
    done = invoke(tmp_path, command, "--demo", flag, "nan")
    assert done.exit_code == 2 and "expected a finite number" in done.output  # type: ignore[attr-defined]
