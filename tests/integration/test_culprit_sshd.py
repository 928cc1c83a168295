"""The right culprit over a real OpenSSH sshd (issue 21), on stub nodes of their own (a cluster of five started
for this module): two processes on one starved GPU with no per-process utilization (nvidia-smi's path: the
culprit cannot be told apart), memory no listed process holds, a GPU held idle by a Slurm job, and an NCCL job
whose RAS thread (a fake one on this machine's loopback, where the node's collector runs) says who lags."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_ras import fake_ras
from gpudiag.checks import CheckSettings
from gpudiag.model import HostReport, SweepReport
from gpudiag.report import ReportView, render
from gpudiag.sweep.runner import SweepOptions, sweep
from gpudiag.transport.ssh import SshOptions, SshTransport
from loopback import SshdCluster, SshdUnavailable, running_cluster

pytestmark = pytest.mark.integration

SCENARIOS = {"127.0.0.2": "two_processes", "127.0.0.3": "invisible_memory", "127.0.0.4": "held_idle",
             "127.0.0.5": "nccl_job", "127.0.0.6": "idle"}
HUNG_JSON = (Path(__file__).resolve().parents[1] / "data" / "h200_580.159_nccl1" / "ras_28028.json")


@pytest.fixture(scope="module")
def culprit_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SshdCluster, Path]]:
    work = tmp_path_factory.mktemp("culprit_cluster")
    try:
        with running_cluster(work, extra_healthy=0, scenarios=SCENARIOS) as cluster:
            yield cluster, work / "node" / "proc"
    except SshdUnavailable as exc:
        pytest.skip(str(exc))


def sweep_one(cluster: SshdCluster, scenario: str) -> HostReport:
    (host,) = cluster.hosts(scenario)
    transport = SshTransport(SshOptions(connect_timeout_s=5.0, ssh_config=[]))
    options = SweepOptions(samples=2, interval_s=0.1, deadline_s=30.0, settings=CheckSettings())
    (report,) = asyncio.run(sweep([host], transport, options)).hosts
    return report


def test_two_processes_without_per_process_utilization_are_listed_not_guessed(culprit_cluster) -> None:  # type: ignore[no-untyped-def]
    report = sweep_one(culprit_cluster[0], "two_processes")
    (f,) = report.findings
    assert f.code == "BUSY_LOW_POWER" and f.evidence["process_chosen_by"] == "ambiguous" and "pid" not in f.evidence
    assert "the culprit cannot be told apart: 2 processes are on the GPU and there is no per-process " \
           "utilization" in f.summary
    assert "pid 1092 gpu_workloads.py" in f.evidence["processes"] and "pid 1090 gpu_workloads.py" in \
        f.evidence["processes"]
    table = render(SweepReport(started_at="x", duration_s=1.0, hosts=(report,)), "table", ReportView(width=220))
    assert re.search(r"one of 2: pid 1092 gpu_workloads\.py, pid 1090 gpu_workloads\.py", table), table


def test_memory_no_listed_process_holds_is_named(culprit_cluster) -> None:  # type: ignore[no-untyped-def]
    report = sweep_one(culprit_cluster[0], "invisible_memory")
    held, f = sorted(report.findings, key=lambda x: x.gpu or 0)
    # GPU 0's visible 20 GiB process at 0% is itself a holder (issue 28: any holder above a bare context)
    assert (held.code, held.gpu, held.evidence["pid"]) == ("GPU_HELD_IDLE", 0, 2001)
    assert (f.code, f.gpu, f.evidence["unaccounted_memory_mib"]) == ("GPU_MEMORY_UNACCOUNTED", 1, 81000.0)
    assert f.summary.startswith("79.1 GiB of its 79.1 GiB used memory is held by no listed process")


def test_a_gpu_held_idle_names_its_job_and_the_fleet_line_counts_it(culprit_cluster) -> None:  # type: ignore[no-untyped-def]
    report = sweep_one(culprit_cluster[0], "held_idle")
    (f,) = report.findings
    assert f.code == "GPU_HELD_IDLE" and f.evidence["job_id"] == "81724" and f.evidence["holder"] == "job 81724"
    assert "holds 100.6 GiB of its 140.4 GiB (72%)" in f.summary and "Slurm job 81724" in f.summary
    whole = SweepReport(started_at="2026-12-02T02:00:00Z", duration_s=1.0, hosts=(report,))
    assert json.loads(render(whole, "json", ReportView()))["summary"]["gpus_held_idle"] == 1
    assert re.search(r"\n +held idle +1 GPU held at 0% \(100\.6 GiB\): 1 ", render(whole, "table", ReportView()))


def point_at(proc_root: Path, port: int) -> None:
    """The stub job's environment names the fake RAS server's port, as NCCL_RAS_ADDR would."""
    (proc_root / "127.0.0.5" / "3001" / "environ").write_bytes(f"NCCL_RAS_ADDR=127.0.0.1:{port}\0".encode())


def test_busy_low_power_says_what_ncclS_ras_says_asking_once_per_node(culprit_cluster) -> None:  # type: ignore[no-untyped-def]
    cluster, proc_root = culprit_cluster
    answer = json.loads(HUNG_JSON.read_text())["json_verbose_p2"]["received"][-1].removesuffix("<closed>")
    with fake_ras("answer", json_answer=answer) as server:
        point_at(proc_root, server.port)
        report = sweep_one(cluster, "nccl_job")
    assert server.connections == 1
    assert server.lines == ["CLIENT PROTOCOL 2", "TIMEOUT 1", "SET FORMAT json", "VERBOSE STATUS"]
    (f,) = report.findings
    assert f.code == "BUSY_LOW_POWER"
    assert "; NCCL RAS (2.28.9): 1 rank on 1 node (192.0.2.2); every rank answered and none lags" in f.summary
    assert report.readings is not None and report.readings.nccl_ras is not None
    assert report.readings.nccl_ras.asked_from == "NCCL_RAS_ADDR of pid 3001"


def test_a_ras_port_that_never_answers_is_bounded_over_ssh(culprit_cluster) -> None:  # type: ignore[no-untyped-def]
    cluster, proc_root = culprit_cluster
    with fake_ras("silent") as server:
        point_at(proc_root, server.port)
        report = sweep_one(cluster, "nccl_job")
    assert report.status.value == "ok" and [f.code for f in report.findings] == ["BUSY_LOW_POWER"]
    ras = report.readings.nccl_ras if report.readings is not None else None
    assert ras is not None and not ras.answered and ras.error == "no answer to 'CLIENT PROTOCOL 2'"
    assert "NCCL RAS" not in report.findings[0].summary


def test_a_node_without_gpu_processes_asks_no_ras_and_holds_nothing_idle(culprit_cluster) -> None:  # type: ignore[no-untyped-def]
    report = sweep_one(culprit_cluster[0], "idle")
    assert report.readings is not None and report.readings.processes == () and report.readings.nccl_ras is None
    assert report.findings == ()
