"""The command modules import in any order, and ``gpudiag --help`` loads no heavy layer: each in a fresh
interpreter. Split from tests/unit/cli/test_cli_imports.py (the import graph read from the source: there)."""

from __future__ import annotations

import subprocess
import sys


def test_the_command_modules_import_in_any_order() -> None:
    # Fresh interpreters: each command module first, then the others.
    orders = (("cli.commands.logs", "cli.app"), ("cli.common", "cli.commands.logs", "cli.app"),
              ("run.request", "cli.app"), ("cli.app",))
    for order in orders:
        code = ";".join(f"import gpudiag.{m}" for m in order)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (order, done.stderr)


def test_help_loads_no_heavy_layer() -> None:
    # `gpudiag --help` stays fast: the layers below the CLI (asyncssh, yaml, the rich table, the collector
    # bundle, the run layer) load only where a command uses them; the request's values (gpudiag.model.request) give
    # the options their defaults.
    heavy = ("asyncssh", "yaml", "cryptography", "gpudiag.sweep.runner", "gpudiag.transport.ssh",
             "gpudiag.report.table", "gpudiag.collect.remote", "gpudiag.collect.bundle", "gpudiag.run.request",
             "gpudiag.cli.build", "gpudiag.checks")
    code = f"import sys, gpudiag.cli.app; print(*[m for m in {heavy!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, ""), done.stderr
