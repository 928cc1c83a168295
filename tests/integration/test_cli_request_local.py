"""Each host's log plan built once per run, through the commands run in this process (typer's runner) on this
machine's ``localhost`` (the local transport runs the real collector in a child process: no SSH, no GPU) or on
the demo cluster (real SSH on loopback); the real planner and sweep run, wrapped only to count their calls.
Split from tests/unit/cli/test_cli_request.py (the request's checks before any connection: there)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from plan_calls import Calls, calls_fixture, invoke  # noqa: F401 (calls_fixture: the calls fixture)

import gpudiag.cli.commands.local
import gpudiag.cli.commands.sweep
import gpudiag.cli.common
import gpudiag.sweep.runner
from gpudiag.model.request import SweepRequest
from gpudiag.report import OutputFormat


def test_a_sweep_builds_each_plan_once(calls: Calls, tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_text("nothing to see\n")
    done = invoke("sweep", "--local", "--samples", "1", "--interval", "0", "--log", str(log), "--format", "json")
    assert done.exit_code in (0, 1, 2), done.output
    assert calls.planners == 1
    assert len(calls.plans) == 1 and [s.path for s in calls.plans[0].sources] == [str(log)]
    assert calls.swept[0] is calls.plans[0]  # the runner got the plan built before it connected


def test_a_watch_builds_its_plans_once_for_every_refresh(calls: Calls) -> None:
    done = invoke("watch", "localhost", "--count", "3", "--every", "0", "--samples", "1", "--interval", "0",
                  "--plain")
    assert done.exit_code in (0, 1, 2), done.output
    refreshes = [line.split(" at ")[0] for line in done.output.splitlines() if line.startswith("refresh ")]
    assert refreshes == ["refresh 1/3", "refresh 2/3", "refresh 3/3"]
    assert (calls.planners, len(calls.plans), len(calls.swept)) == (1, 1, 3)
    assert all(plan is calls.plans[0] for plan in calls.swept)


def test_the_demo_builds_each_plan_once(calls: Calls) -> None:
    done = invoke("grep", "--demo", "-s", "kernel_xid", "--format", "json")
    assert done.exit_code == 2, done.output  # 2: the unreachable node could not be searched
    assert calls.planners == 1  # --signature checked once, before the demo cluster started
    assert len(calls.plans) == len(calls.swept) == 6
    assert [id(p) for p in calls.swept] == [id(p) for p in calls.plans]


def test_samples_detail_is_in_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    requests: list[SweepRequest] = []
    real_report, real_hosts = gpudiag.cli.common.sweep_report, gpudiag.cli.common.sweep_hosts

    def recording(request: SweepRequest, **kwargs: Any) -> Any:
        requests.append(request)
        return real_report(request, **kwargs)

    def recording_hosts(request: SweepRequest, **kwargs: Any) -> Any:
        requests.append(request)
        return real_hosts(request, **kwargs)

    monkeypatch.setattr(gpudiag.cli.commands.local, "sweep_report", recording)
    monkeypatch.setattr(gpudiag.cli.commands.sweep, "sweep_hosts", recording_hosts)
    for args in (("local",), ("local", "--samples-detail"), ("sweep", "--local"), ("sweep", "--local",
                                                                                 "--samples-detail")):
        done = invoke(*args, "--samples", "1", "--interval", "0", "--quiet")
        assert done.exit_code in (0, 1, 2), done.output
    assert [r.output.samples_detail for r in requests] == [False, True, False, True]
    assert all(r.output.format is OutputFormat.TABLE and r.output.quiet for r in requests)
