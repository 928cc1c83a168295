"""``gpudiag ARGS`` run in the test's own process, answered as ``subprocess.run`` would answer it.

The console entry point itself (:func:`gpudiag.cli.entry.main`, what ``python -m gpudiag`` runs) with ``sys.argv``
set, stdin, stdout and stderr swapped for the run's own (click's test isolation), the environment and the working
folder as asked, and the exit status taken from its ``SystemExit``. A test whose point is not the process (its
start-up, a signal to it, a terminal) spares the interpreter's start-up and gpudiag's imports this way: about a
second of CPU per run on a 2-core machine.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from click.testing import CliRunner


@contextlib.contextmanager
def _folder(cwd: str | os.PathLike[str] | None) -> Iterator[None]:
    before = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)


def run_cli(*args: str, env: Mapping[str, str] | None = None, input: str | None = None,
            cwd: str | Path | None = None) -> subprocess.CompletedProcess[str]:
    """``gpudiag *args`` in this process. ``env``: the whole environment of the run, as ``subprocess.run``'s
    (variables not in it are unset for the run); ``input``: its stdin; ``cwd``: its working folder."""
    from gpudiag.cli.entry import main

    overrides: dict[str, str | None] | None = None
    if env is not None:
        overrides = dict.fromkeys(os.environ)
        overrides.update(env)
    runner = CliRunner()
    saved = sys.argv
    code = 0
    with runner.isolation(input=input, env=overrides) as (stdout, stderr, *_), _folder(cwd):
        sys.argv = ["gpudiag", *args]
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if isinstance(exc.code, str):
                sys.stderr.write(exc.code + "\n")
        finally:
            sys.argv = saved
            sys.stdout.flush()
            sys.stderr.flush()
        out, err = stdout.getvalue(), stderr.getvalue()
    return subprocess.CompletedProcess(["gpudiag", *args], code, out.decode("utf-8", "replace"),
                                       err.decode("utf-8", "replace"))
