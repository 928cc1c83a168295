"""Who is on the GPU, over a real OpenSSH sshd: the case-study-like stub node (scenario ``case_study_server``)
runs an SGLang server (its ``processes``: nvidia-smi --query-compute-apps lists it, a fake process table gives
its /proc), whose stdout is its log. Swept with no ``logs:`` configured, the node finds that log through
/proc/PID/fd/1 and scans it with the SGLang packs in the same collector run; LOG_EXPECTED_ABSENT fires as in
the case study."""

from __future__ import annotations

import asyncio
import dataclasses
import re

import pytest

from gpudiag.checks import CheckSettings
from gpudiag.model import HostReport, SweepReport
from gpudiag.model.culprit import choose_working
from gpudiag.report import ReportView, render
from gpudiag.sweep.runner import SweepOptions, sweep
from gpudiag.transport.ssh import SshOptions, SshTransport

pytestmark = pytest.mark.integration


def user_named(uid: int) -> str:
    """How the collector names ``uid`` on this machine (the stub node runs here): its account's name, or
    ``uid N`` where it has none. A shared machine may well have an account for 1001."""
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def sweep_one(host, options: SweepOptions) -> HostReport:  # type: ignore[no-untyped-def]
    transport = SshTransport(SshOptions(connect_timeout_s=5.0, ssh_config=[]))
    (report,) = asyncio.run(sweep([host], transport, options)).hosts
    return report


@pytest.mark.parametrize("source", ["auto", "nvidia-smi"])
def test_case_study_node_gets_its_log_found_by_itself(sshd_cluster, source: str) -> None:  # type: ignore[no-untyped-def]
    (case,) = sshd_cluster.hosts("case_study_server")
    assert case.logs == ()
    options = SweepOptions(samples=2, interval_s=0.1, deadline_s=30.0, settings=CheckSettings(), source=source)
    host = sweep_one(case, options)
    readings = host.readings
    assert readings is not None and readings.processes_from == "nvidia-smi"  # the stub node has no NVML
    assert [p.gpu for p in readings.processes] == list(range(8))
    choice = choose_working(readings.processes_on(0))
    main = choice.process if choice is not None else None
    assert main is not None and main.label == "pid 48213 sglang (job 81723)" and main.job_id_from == "cgroup"
    assert main.command[1:3] == ("-m", "sglang.launch_server") and main.cpu_pct == 0.0
    (scan,) = readings.logs
    assert scan.found_server == "SGLang" and scan.path.endswith("/sglang-glm5.log")
    assert scan.found_from is not None and scan.found_from.startswith("stdout and stderr of pid 48213 (SGLang, ")
    codes = [f.code for f in host.findings]
    assert codes.count("BUSY_LOW_POWER") == 8 and "LOG_EXPECTED_ABSENT" in codes
    busy = host.findings[0]
    assert busy.evidence["process"] == "pid 48213 sglang (job 81723)" and busy.evidence["job_id"] == "81723"
    assert busy.evidence["sm_activity"].startswith("SM activity not available")

    table = render(SweepReport(started_at="x", duration_s=1.0, hosts=(host,)), "table", ReportView(width=200))
    owner = re.escape(user_named(1001))  # the node is this machine: its account for uid 1001, if it has one
    assert re.search(rf"\n +gpu 0-7 +pid 48213 sglang \(job 81723\), {owner}, 0% CPU, 89\.6 GiB", table), table
    assert re.search(r"\n +log +\S+sglang-glm5\.log: found as the stdout and stderr of pid 48213", table), table


def test_a_node_without_processes_reads_no_proc(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    (healthy,) = sshd_cluster.hosts("healthy")
    host = sweep_one(healthy, SweepOptions(samples=1, interval_s=0.0, deadline_s=30.0, settings=CheckSettings()))
    assert host.readings is not None and host.readings.processes == () and host.readings.logs == ()


def test_a_configured_server_log_is_not_scanned_twice(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    (case,) = sshd_cluster.hosts("case_study_server")
    log = sshd_cluster.state_dir.parent / "node" / "sglang-glm5.log"  # where the stub's server writes
    configured = dataclasses.replace(case, logs=(str(log),))
    host = sweep_one(configured, SweepOptions(samples=1, interval_s=0.0, deadline_s=30.0, settings=CheckSettings()))
    assert host.readings is not None
    (scan,) = host.readings.logs
    assert scan.found_from is None and scan.resolved == str(log)
    assert [f.code for f in host.findings].count("LOG_EXPECTED_ABSENT") == 1
