"""Counting what a command builds: the real log planner and sweep run, wrapped only to count their calls
(the :func:`calls` fixture), and typer's runner on a PATH with no nvidia-smi (:func:`invoke`). Shared by the CLI
request's unit tests and the ones that run a command on this machine or the demo (tests/integration)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from typer.testing import CliRunner

import gpudiag.sweep.runner
from gpudiag.cli.app import app
from gpudiag.logs import LogOptions, LogPlan
from gpudiag.logs.plan import Planner
from gpudiag.model import Host

ENV = {"PATH": "/usr/bin:/bin"}  # no nvidia-smi here, whatever the machine has


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), env=ENV)


@dataclass
class Calls:
    planners: int = 0  # Planner() made: the registry and --pack files loaded, --signature checked
    plans: list[LogPlan] = field(default_factory=list)  # every plan built, in order
    swept: list[LogPlan] = field(default_factory=list)  # the plan each sweep_host was given


@pytest.fixture(name="calls")
def calls_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[Calls]:
    """Counts the real planner's work and records the plans the runner gets (the real functions run)."""
    seen = Calls()
    real_init, real_plan, real_sweep_host = Planner.__init__, Planner.plan, gpudiag.sweep.runner.sweep_host

    def init(self: Planner, options: LogOptions) -> None:
        seen.planners += 1
        real_init(self, options)

    def plan(self: Planner, host: Host) -> LogPlan:
        built = real_plan(self, host)
        seen.plans.append(built)
        return built

    async def sweep_host(*args: Any, **kwargs: Any) -> Any:
        seen.swept.append(kwargs["plan"])
        return await real_sweep_host(*args, **kwargs)

    monkeypatch.setattr(Planner, "__init__", init)
    monkeypatch.setattr(Planner, "plan", plan)
    monkeypatch.setattr(gpudiag.sweep.runner, "sweep_host", sweep_host)
    yield seen
