"""The job view over real SSH: a multi-node stub bed (one real OpenSSH sshd playing 13 two-GPU nodes) whose GPU
processes are real processes of this machine carrying ``SLURM_JOB_ID`` in their environment, so each node's
collector reads the job from ``/proc/PID/environ`` as it does on a real node. Jobs span the nodes:

* job 100 hangs: its 6 GPUs on 3 nodes spin at low power but one computes;
* job 200 has one idle rank, job 300 one throttled GPU;
* job 400 is selected by ``--slurm-job`` (its hosts' group ``job 400``) and one of its hosts does not answer;
* jobs 500 and 600 share three nodes (GPU 0 and GPU 1): 500 waits on one GPU, 600 is healthy and stays quiet.

And the drift of issue 28 over the same bed: a group mixing H200, RTX PRO 6000 and B200 nodes gives no
DRIVER_DRIFT; one H200 on another driver is named (watch); a configured expectation names every host off it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from gpudiag.checks import CheckSettings
from gpudiag.model import Action, Host, SweepReport, VersionExpectation
from gpudiag.sweep.runner import SweepOptions, sweep
from gpudiag.transport.ssh import SshOptions, SshTransport
from loopback import SshdCluster, SshdUnavailable, running_cluster

pytestmark = pytest.mark.integration

SPIN = {"utilization.gpu": 100, "utilization.memory": 2, "power.draw": 140.0, "clocks_event_reasons.active": "0x0"}
WORK = {"utilization.gpu": 99, "utilization.memory": 45, "power.draw": 655.0, "clocks_event_reasons.active": "0x0"}
IDLE = {"utilization.gpu": 0, "utilization.memory": 0, "power.draw": 80.0, "clocks_event_reasons.active": "0x0"}
HOT = {"utilization.gpu": 100, "utilization.memory": 30, "power.draw": 310.0, "clocks.current.sm": 1100,
       "clocks_event_reasons.active": "0x40"}

# address -> (node name, GPU 0's shape and job, GPU 1's shape and job)
BED: dict[str, tuple[str, tuple[dict[str, Any], str], tuple[dict[str, Any], str]]] = {
    "127.0.0.2": ("a1", (SPIN, "100"), (SPIN, "100")),
    "127.0.0.3": ("a2", (SPIN, "100"), (SPIN, "100")),
    "127.0.0.4": ("a3", (SPIN, "100"), (WORK, "100")),
    "127.0.0.5": ("b1", (SPIN, "200"), (SPIN, "200")),
    "127.0.0.6": ("b2", (SPIN, "200"), (IDLE, "200")),
    "127.0.0.7": ("c1", (SPIN, "300"), (SPIN, "300")),
    "127.0.0.8": ("c2", (SPIN, "300"), (HOT, "300")),
    "127.0.0.9": ("d1", (SPIN, "400"), (SPIN, "400")),
    "127.0.0.10": ("d2", (SPIN, "400"), (SPIN, "400")),
    "127.0.0.11": ("s1", (SPIN, "500"), (WORK, "600")),
    "127.0.0.12": ("s2", (SPIN, "500"), (WORK, "600")),
    "127.0.0.13": ("s3", (WORK, "500"), (WORK, "600")),
    "127.0.0.14": ("s4", (SPIN, "500"), (WORK, "600")),
}
MODELS = {"127.0.0.20": ("h1", "NVIDIA H200", None), "127.0.0.21": ("h2", "NVIDIA H200", None),
          "127.0.0.22": ("h3", "NVIDIA H200", None),
          "127.0.0.23": ("rtx", "NVIDIA RTX PRO 6000 Blackwell Server Edition", "580.82.07"),
          "127.0.0.24": ("b200", "NVIDIA B200", "570.172.08"),
          "127.0.0.25": ("h-old", "NVIDIA H200", "570.133.20")}


def _holder(job: str) -> subprocess.Popen[bytes]:
    """A real process of ``job``: a sleeping Python with the job in its environment, as srun starts ranks."""
    env = {**os.environ, "SLURM_JOB_ID": job, "SLURM_PROCID": "0"}
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(900)"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)


def _scenarios(pids: dict[tuple[str, int], int]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for address, (name, *gpus) in BED.items():
        procs = [{"pid": pids[(address, i)], "gpus": [i], "used_memory_mib": 20000,
                  "cmdline": [sys.executable, "train.py"]} for i in range(2)]
        out[f"job_{name}"] = {"extends": "healthy", "gpu_count": 2, "fields": {"memory.used": 20600},
                              "gpus": {str(i): shape for i, (shape, _) in enumerate(gpus)}, "processes": procs}
    for name, model, driver in MODELS.values():
        scenario: dict[str, Any] = {"extends": "healthy", "gpu_count": 2, "fields": {"name": model}}
        if driver:
            scenario["driver"] = {"version": driver, "cuda": "12.8" if driver.startswith("570") else "13.0"}
        out[f"model_{name}"] = scenario
    return out


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdCluster]:
    holders = {(address, i): _holder(gpus[i][1]) for address, (_, *gpus) in BED.items() for i in range(2)}
    try:
        scenarios = {**{a: f"job_{name}" for a, (name, *_) in BED.items()},
                     **{a: f"model_{name}" for a, (name, *_) in MODELS.items()}}
        pids = {key: p.pid for key, p in holders.items()}
        with running_cluster(tmp_path_factory.mktemp("job_bed"), extra_healthy=0, scenarios=scenarios,
                             extra_scenarios=_scenarios(pids)) as cluster:
            yield cluster
    except SshdUnavailable as exc:
        pytest.skip(str(exc))
    finally:
        for p in holders.values():
            p.kill()
            p.wait()


def _closed_port() -> int:
    with socket.socket() as s:  # bound, never listening: a connection is refused
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _sweep(cluster: SshdCluster, hosts: list[Host], **options: Any) -> SweepReport:
    transport = SshTransport(SshOptions(connect_timeout_s=5.0, ssh_config=[]))
    settings = SweepOptions(samples=2, interval_s=0.1, deadline_s=30.0, settings=CheckSettings(), **options)
    return asyncio.run(sweep(hosts, transport, settings))


def test_each_job_names_the_gpu_its_ranks_wait_on_and_the_healthy_job_is_quiet(bed: SshdCluster) -> None:
    hosts = [bed.host(a, name) for a, (name, *_) in BED.items()]
    d_group = ("job 400",)  # --slurm-job 400 selected d1, d2 and d3; d3 does not answer
    hosts = [dataclasses.replace(h, groups=d_group) if h.name in ("d1", "d2") else h for h in hosts]
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        down = Host(name="d3", address="127.0.0.1", port=int(holder.getsockname()[1]), user=bed.user,
                    identity_file=str(bed.client_key), known_hosts=str(bed.known_hosts), groups=d_group)
        report = _sweep(bed, [*hosts, down])
    jobs = {j.job: j for j in report.jobs}
    assert {k: (v.verdict, v.gpu_count) for k, v in jobs.items()} == {
        "job 100": ("waits on a3 GPU 1", 6), "job 200": ("waits on b2 GPU 1", 4),
        "job 300": ("waits on c2 GPU 1", 4), "job 400": ("waits on d3", 4),
        "job 500": ("waits on s3 GPU 0", 4), "job 600": ("ok", 4)}
    waits = {str(f.evidence["job"]): f for f in report.findings if f.code == "JOB_WAITS_ON"}
    assert sorted(waits) == ["job 100", "job 200", "job 300", "job 400", "job 500"]
    assert (waits["job 100"].host, waits["job 100"].gpu) == ("a3", 1)
    (culprit,) = waits["job 100"].evidence["culprits"]  # the healthy scenario's power jitters: 655 W +/- a few
    assert re.fullmatch(r"a3 GPU 1: computing: 99% busy, 9\d% power", str(culprit)), culprit
    assert waits["job 100"].evidence["job_utilization_pct"] == 100.0
    assert re.fullmatch(r"b2 GPU 1: idle: 0% busy, 1?\d% power", str(waits["job 200"].evidence["culprits"][0]))
    assert str(waits["job 300"].evidence["culprits"][0]).startswith("c2 GPU 1: throttled")
    assert waits["job 400"].evidence["culprits"] == ("d3: its host did not answer",)
    assert waits["job 400"].host == "d3" and jobs["job 400"].user is not None  # the environ's owner
    a1 = [f for f in report.findings if f.host == "a1" and f.code == "BUSY_LOW_POWER"]
    assert len(a1) == 2 and all(f.evidence["waits_on"] == "a3 GPU 1" and f.evidence["job"] == "job 100" for f in a1)
    assert not [f for f in report.findings if str(f.evidence.get("job")) == "job 600"]  # the healthy job: quiet
    assert all(p.job_id_from == "environ" for h in report.hosts if h.readings for p in h.readings.processes)


def test_a_mixed_model_group_is_not_drift_and_one_h200_off_its_peers_is(bed: SshdCluster) -> None:
    mixed = [bed.host(a, name) for a, (name, *_) in MODELS.items() if name != "h-old"]
    group = [dataclasses.replace(h, groups=("all",)) for h in mixed]
    report = _sweep(bed, group)
    assert [f for f in report.findings if f.code == "DRIVER_DRIFT"] == [] and report.notes == ()
    with_old = [*group, dataclasses.replace(bed.host("127.0.0.25", "h-old"), groups=("all",))]
    (drift,) = [f for f in _sweep(bed, with_old).findings if f.code == "DRIVER_DRIFT"]
    assert (drift.host, drift.action, drift.evidence["majority_driver_version"]) == ("h-old", Action.WATCH,
                                                                                   "580.159.04")
    expect = (VersionExpectation(model="NVIDIA H200", fact="driver", version="580.200.01"),)
    expected = _sweep(bed, with_old, expectations=expect, expect_action=Action.DRAIN_AND_INSPECT)
    named = sorted(f.host for f in expected.findings if f.code == "DRIVER_DRIFT")
    assert named == ["h-old", "h1", "h2", "h3"]  # every H200 off the expectation; rtx and b200 have none
    assert {f.action for f in expected.findings if f.code == "DRIVER_DRIFT"} == {Action.DRAIN_AND_INSPECT}
