"""Who is on the GPU: the node's /proc reader (collectors/gpudiag_node/processes.py) on a process table laid out as
Linux lays it out, the parser's bounds, and the checks that use it (HOST_BOUND, BUSY_LOW_POWER decided by
SM activity, ODD_GPU_OUT)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from builders import gpu, node
from test_nvml_reader import fake_pynvml

from gpudiag.checks import CheckSettings, evaluate
from gpudiag.checks.context import NodeFacts
from gpudiag.checks.gpu import busy_low_power, host_bound
from gpudiag.checks.peers import odd_gpu_out
from gpudiag.collect.parse import parse_probe
from gpudiag.collect.parse_processes import parse_processes
from gpudiag.collect.untrusted import Claims
from gpudiag.model import GpuProcess, HostStatus, NodeReadings
from gpudiag_node import processes
from gpudiag_node.gpm import METRICS
from gpudiag_node.nvml import collect

S = CheckSettings()

CGROUPS = {
    "0::/system.slice/docker-3f2a9c1b0e4d5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b.scope":
        ("docker", "3f2a9c1b0e4d"),
    "12:memory:/docker/3f2a9c1b0e4d5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b": ("docker", "3f2a9c1b0e4d"),
    "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0c4f1e2d_3b4a_4c5d_8e6f_7a8b9c0d1e2f.slice/"
    "cri-containerd-aa11bb22cc33dd44ee55ff66aa11bb22cc33dd44ee55ff66aa11bb22cc33dd44.scope":
        ("k8s pod", "0c4f1e2d-3b4a-4c5d-8e6f-7a8b9c0d1e2f"),
    "0::/machine.slice/libpod-1234567890abcdef1234567890abcdef.scope": ("podman", "1234567890ab"),
    "0::/system.slice/containerd.service/cri-containerd-abcdefabcdef0123.scope": ("containerd", "abcdefabcdef"),
    "0::/user.slice/user-1000.slice/session-3.scope": (None, None),
}


@pytest.mark.parametrize("cgroup", sorted(CGROUPS))
def test_container_from_the_cgroup_path(cgroup: str) -> None:
    assert processes.container_of(cgroup) == CGROUPS[cgroup]


def test_slurm_job_from_the_cgroup_path() -> None:
    assert processes.slurm_job_of("0::/system.slice/slurmstepd.scope/job_81723/step_0/user/task_0") == "81723"
    assert processes.slurm_job_of("4:cpuset:/slurm/uid_1000/job_77/step_batch") == "77"
    assert processes.slurm_job_of("0::/user.slice/job_search.scope") is None


def fake_proc(root: Path, pid: int, *, cmdline: list[str], stat_ticks: int = 100, cgroup: str = "0::/",
              environ: dict[str, str] | None = None, stdout: Path | None = None) -> None:
    d = root / str(pid)
    (d / "fd").mkdir(parents=True)
    (d / "status").write_text(f"Name:\t{Path(cmdline[0]).name}\nUid:\t{os.getuid()}\t0\t0\t0\n")
    (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in cmdline) + b"\0")
    fields = ["S"] + ["0"] * 10 + [str(stat_ticks), "7"] + ["0"] * 30
    (d / "stat").write_text(f"{pid} (python3 x) " + " ".join(fields) + "\n")
    (d / "cgroup").write_text(cgroup + "\n")
    (d / "environ").write_bytes(b"\0".join(f"{k}={v}".encode() for k, v in (environ or {}).items()))
    if stdout is not None:
        (d / "fd" / "1").symlink_to(stdout)
        (d / "fd" / "2").symlink_to(stdout)
    else:
        (d / "fd" / "1").symlink_to("pipe:[12345]")


def test_watcher_reads_each_process_at_both_ends_of_the_window(tmp_path: Path) -> None:
    log = tmp_path / "sglang.log"
    log.write_text("The server is fired up and ready to roll!\n")
    fake_proc(tmp_path, 4312, cmdline=["/usr/bin/python3", "-m", "sglang.launch_server", "--tp", "8"],
              cgroup="0::/system.slice/slurmstepd.scope/job_81723/step_0", stdout=log)
    fake_proc(tmp_path, 99, cmdline=["worker", "x" * 400] + ["y"] * 70, environ={"SLURM_JOB_ID": "555"})
    watcher = processes.Watcher(str(tmp_path))
    watcher.start({0: [{"pid": 4312, "used_memory_mib": 1000.0}], 1: [{"pid": 99}, {"pid": 4312}]})
    (tmp_path / "4312" / "stat").write_text((tmp_path / "4312" / "stat").read_text().replace(" 100 7 ", " 300 7 "))
    found = watcher.finish()
    server, worker = found["procs"]["4312"], found["procs"]["99"]
    assert server["cmdline"] == ["/usr/bin/python3", "-m", "sglang.launch_server", "--tp", "8"]
    assert server["job_id"] == "81723" and server["job_id_from"] == "cgroup"
    assert server["stdout"] == {"path": str(log), "file": True, "same_here": True}
    assert server["cpu_pct"] > 0 and worker["cpu_pct"] == 0.0
    assert worker["job_id"] == "555" and worker["job_id_from"] == "environ"
    assert len(worker["cmdline"]) == processes.MAX_ARGS and worker["cmdline_cut"]
    assert len(worker["cmdline"][1]) == processes.MAX_ARG_CHARS
    assert worker["stdout"]["file"] is False
    assert found["gpus"] == {"0": [{"pid": 4312, "used_memory_mib": 1000.0}], "1": [{"pid": 99}, {"pid": 4312}]}
    sglang = {"server": "SGLang", "regex": r"python[0-9.]*\s+-m\s+sglang\.launch_server\s"}
    logs = processes.server_logs(found, [sglang], str(tmp_path))
    assert logs == [(str(log), {"pid": 4312, "server": "SGLang", "fds": [1, 2], "via": str(tmp_path / "4312/fd/1")})]
    assert processes.server_logs(found, [{"server": "vLLM", "regex": r"\bvllm\s+serve\s"}], str(tmp_path)) == []


def test_a_process_that_ended_says_so(tmp_path: Path) -> None:
    watcher = processes.Watcher(str(tmp_path))
    watcher.start({0: [{"pid": 7}]})
    found = watcher.finish()["procs"]["7"]
    assert found["unreadable"]["cmdline"] == "the process ended"
    assert found["unreadable"]["cpu_pct"] == "/proc/7/stat not readable"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file; the H200 capture as alice shows the user's view")
def test_unreadable_fields_name_the_user(tmp_path: Path) -> None:
    fake_proc(tmp_path, 5, cmdline=["python3"])
    (tmp_path / "5" / "environ").chmod(0)
    found = processes.describe(5, "alice", str(tmp_path))
    assert found["unreadable"]["job_id"] == "not readable as user alice"


def test_parser_bounds_what_a_node_claims() -> None:
    doc = {"processes_from": "nvml", "processes": {"user": "bob", "procs": {}},
           "nvml": {"processes": {"0": [{"pid": i} for i in range(1000)], "x": [{"pid": 1}],
                                  "1": [{"pid": -3}, "junk", {"pid": True}]}}}
    claims = Claims()
    fields = parse_processes(doc, doc["nvml"], claims)
    assert len(fields["processes"]) == 256 and fields["processes_user"] == "bob"
    assert claims.problems()


def proc(**overrides: object) -> GpuProcess:
    values: dict[str, object] = {"gpu": 0, "pid": 4312, "command": ("python3", "-m", "sglang.launch_server"),
                                 "cpu_pct": 99.0, "job_id": "81723", "used_memory_mib": 70_000.0}
    values.update(overrides)
    return GpuProcess(**values)


def test_process_label() -> None:
    assert proc().label == "pid 4312 sglang (job 81723)"
    assert proc(command=("/opt/venv/bin/python3", "-u", "train.py"), job_id=None).label == "pid 4312 train.py"
    assert proc(command=("/usr/local/bin/vllm", "serve", "m")).program == "vllm"
    assert proc(command=()).program == "?"


def facts(*procs: GpuProcess) -> NodeFacts:
    return NodeFacts.of(node([gpu()], processes=procs))


def test_host_bound_needs_a_pegged_core_and_a_gpu_far_from_busy() -> None:
    eager = gpu(utilization_pct=16.0, power_w=137.0)
    (f,) = host_bound("h", eager, S, facts(proc()))
    assert f.code == "HOST_BOUND" and f.evidence["process"] == "pid 4312 sglang (job 81723)"
    assert f.summary.startswith("pid 4312 sglang (job 81723) uses 99% of a CPU core while the GPU is only 16% busy")
    assert host_bound("h", eager, S, facts(proc(cpu_pct=3.0))) == ()  # process idle
    assert host_bound("h", gpu(utilization_pct=0.0), S, facts(proc())) == ()  # GPU idle: a polling server
    assert host_bound("h", gpu(utilization_pct=100.0), S, facts(proc())) == ()  # compute-bound, thread spins
    assert host_bound("h", eager, S, facts(proc(cpu_pct=None))) == ()  # not readable: never guessed


def test_measured_sm_activity_decides_busy_low_power() -> None:
    starved_at_high_power = gpu(utilization_pct=100.0, power_w=650.0, sm_active_pct=1.0, sm_activity_from="nvml gpm")
    (f,) = busy_low_power("h", starved_at_high_power, S, facts(proc()))
    assert f.evidence["sm_activity"] == "SM activity 1.0% (NVML GPM)" and f.evidence["pid"] == 4312
    working_at_low_power = gpu(utilization_pct=100.0, power_w=120.0, memory_utilization_pct=0.0,
                               sm_active_pct=60.0, sm_activity_from="nvml gpm")
    assert busy_low_power("h", working_at_low_power, S) == ()
    (unmeasured,) = busy_low_power("h", dataclasses.replace(working_at_low_power, sm_active_pct=None,
                                                             sm_activity_unavailable="MIG is enabled"), S)
    assert unmeasured.evidence["sm_activity"] == "SM activity not available (MIG is enabled)"


def job_node(utils: list[float], *, job: bool = True, **odd: object) -> NodeReadings:
    gpus = [gpu(index=i, utilization_pct=u, **(odd if i == 2 else {})) for i, u in enumerate(utils)]
    procs = tuple(proc(gpu=i, pid=100 + i, job_id="81723" if job or i else "9", cpu_pct=30.0)
                  for i in range(len(utils)))
    return node(gpus, processes=procs)


def test_odd_gpu_out_in_a_one_job_node() -> None:
    readings = job_node([98.0, 99.0, 12.0, 97.0, 98.0, 99.0, 98.0, 97.0], power_w=150.0)
    (f,) = odd_gpu_out("h", readings, S)
    assert f.gpu == 2 and f.evidence["job"] == "job 81723" and f.evidence["peers_utilization_pct"] == 98.0
    assert "12% busy against their median 98%, 150 W against 650 W" in f.summary
    assert [x.code for x in evaluate("h", HostStatus.OK, None, readings, S)] == ["ODD_GPU_OUT"]


def test_no_odd_gpu_when_the_gpus_run_different_jobs_or_agree() -> None:
    assert odd_gpu_out("h", job_node([98.0, 99.0, 12.0, 97.0], job=False), S) == ()
    assert odd_gpu_out("h", job_node([98.0, 99.0, 97.0, 97.0]), S) == ()
    assert odd_gpu_out("h", job_node([98.0, 10.0]), S) == ()  # no peers' median
    one_throttled = job_node([98.0, 99.0, 98.0, 97.0], sm_clock_mhz=1400.0)
    (f,) = odd_gpu_out("h", one_throttled, S)
    assert "SM clock 1400 MHz against 1980 MHz" in f.summary


def test_gpm_reaches_the_readings_through_the_parser() -> None:
    doc = {"schema": "gpudiag.probe/2", "source": "nvml", "processes_from": "nvml",
           "nvml": {"gpus": [{"index": 0, "name": "H200"}, {"index": 1, "name": "H200"}],
                    "samples": [{"t_s": 0.0, "rows": [{"index": 0, "utilization_pct": 100},
                                                      {"index": 1, "utilization_pct": 0}]}],
                    "gpm": {"0": {"sm_active_pct": 0.76, "sm_occupancy_pct": 0.01, "tensor_active_pct": 0.0,
                                  "dram_active_pct": 0.0}, "1": {"why": "MIG is enabled"}}}}
    g0, g1 = parse_probe(doc).gpus
    assert (g0.sm_active_pct, g0.sm_activity_from) == (0.76, "nvml gpm")
    assert (g1.sm_active_pct, g1.sm_activity_unavailable) == (None, "MIG is enabled")


def nvml_with_processes(*, gpm_supported: bool = True) -> tuple[Any, list[tuple[str, int]]]:
    """The reader's fake NVML (test_nvml_reader) with this test's own process on GPU 0 and GPM on every GPU;
    the GPM calls are logged."""
    nv = fake_pynvml(count=2)
    calls: list[tuple[str, int]] = []
    me = os.getpid()
    nv.nvmlDeviceGetComputeRunningProcesses = (  # type: ignore[attr-defined]
        lambda h: [SimpleNamespace(pid=me, usedGpuMemory=2 * 2**30)] if h == 0 else [])
    nv.nvmlDeviceGetProcessUtilization = (  # type: ignore[attr-defined]
        lambda h, ts: [SimpleNamespace(pid=me, smUtil=30), SimpleNamespace(pid=me, smUtil=40)])
    nv.nvmlGpmQueryDeviceSupport = lambda h: SimpleNamespace(isSupportedDevice=int(gpm_supported))  # type: ignore[attr-defined]
    nv.nvmlGpmSampleAlloc = lambda: object()  # type: ignore[attr-defined]
    nv.nvmlGpmSampleFree = lambda s: None  # type: ignore[attr-defined]
    nv.nvmlGpmSampleGet = lambda h, s: calls.append(("sample", h))  # type: ignore[attr-defined]
    nv.NVML_GPM_METRICS_GET_VERSION = 1  # type: ignore[attr-defined]
    for i, (_, constant) in enumerate(METRICS):
        setattr(nv, constant, i + 1)

    class MetricsGet:
        def __init__(self) -> None:
            self.metrics = [SimpleNamespace(metricId=0, nvmlReturn=0, value=0.0) for _ in range(8)]

    def metrics_get(request: Any) -> Any:
        for m in request.metrics:
            m.value = {1: 0.76, 2: 0.01, 3: 0.0, 4: 0.0}.get(m.metricId, 0.0)
        return request

    nv.c_nvmlGpmMetricsGet_t = MetricsGet  # type: ignore[attr-defined]
    nv.nvmlGpmMetricsGet = metrics_get  # type: ignore[attr-defined]
    return nv, calls


def test_nvml_reads_processes_and_gpm_only_for_gpus_with_processes() -> None:
    nv, calls = nvml_with_processes()
    watcher = processes.Watcher()
    out = collect(nv, 2, 0.05, watcher)
    assert calls == [("sample", 0), ("sample", 0)]  # GPU 1 has no process: no GPM there
    assert out["processes"] == {"0": [{"pid": os.getpid(), "used_memory_mib": 2048.0, "sm_util_pct": 30}]}
    assert out["gpm"] == {"0": {"sm_active_pct": 0.76, "sm_occupancy_pct": 0.01, "tensor_active_pct": 0.0,
                                "dram_active_pct": 0.0}}
    procs = watcher.finish()["procs"][str(os.getpid())]
    assert procs["cmdline"] and procs["cpu_pct"] is not None and procs["user"]


def test_gpm_unsupported_says_why() -> None:
    nv, calls = nvml_with_processes(gpm_supported=False)
    out = collect(nv, 2, 0.0, None)
    assert calls == [] and out["gpm"] == {"0": {"why": "the GPU does not support GPM (Hopper and newer do)"}}


@pytest.mark.parametrize("mig", [0, 1])
def test_gpm_takes_the_mig_mode_its_row_read(mig: int) -> None:
    """nvmlDeviceGetMigMode is called once per GPU (its row's mig_mode_enabled), not again by GPM."""
    nv, calls = nvml_with_processes()
    asked: list[int] = []
    nv.nvmlDeviceGetMigMode = lambda h: asked.append(h) or (mig, mig)  # type: ignore[attr-defined]
    out = collect(nv, 1, 0.0, None)
    assert sorted(asked) == [0, 1] and [g["mig_mode_enabled"] for g in out["gpus"]] == [mig, mig]
    if mig:
        assert calls == [] and out["gpm"] == {"0": {"why": "MIG is enabled: GPM is read per GPU instance, not per GPU"}}
    else:
        assert calls == [("sample", 0), ("sample", 0)] and out["gpm"]["0"]["sm_active_pct"] == 0.76
