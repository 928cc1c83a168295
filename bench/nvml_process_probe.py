"""What NVML and /proc tell about the processes on a GPU, read raw while one workload runs (device machine).

Run from the repository root with the python3 that has PyTorch and nvidia-ml-py::

    python3 bench/nvml_process_probe.py WORKLOAD [WORKLOAD ...] > probe.jsonl

For each workload of ``bench/gpu_workloads.py``: start it (stdout to a file, as a server's log), let it
settle, then over a 1 s window read the device's utilization and power, NVML's compute processes, the
per-process utilization (both APIs), the GPM metrics (SM activity, occupancy, tensor, DRAM bandwidth), and
for each process its /proc entries at both ends of the window, as root and as the user ``nobody``. One JSON
line per workload. This is the calibration's raw data; gpudiag's own collector reads the same through
``collectors/gpudiag_node/processes.py`` and ``gpm.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import pynvml as nv

GPM = {"sm_activity_pct": "NVML_GPM_METRIC_SM_UTIL", "sm_occupancy_pct": "NVML_GPM_METRIC_SM_OCCUPANCY",
       "tensor_activity_pct": "NVML_GPM_METRIC_ANY_TENSOR_UTIL", "dram_bw_pct": "NVML_GPM_METRIC_DRAM_BW_UTIL",
       "graphics_activity_pct": "NVML_GPM_METRIC_GRAPHICS_UTIL"}


def attempt(fn, *args):
    try:
        return fn(*args)
    except Exception as exc:  # record what failed, go on
        return {"error": f"{type(exc).__name__}: {exc}"}


def proc_facts(pid: int) -> dict:
    def read(name: str) -> str:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read(4096).decode("utf-8", "replace")
    out = {}
    for name in ("stat", "status", "cgroup", "cmdline"):
        out[name] = attempt(read, name)
    env = attempt(read, "environ")
    out["environ_slurm"] = [e for e in env.split("\0") if e.startswith("SLURM_JOB_ID")] if isinstance(env, str) else env
    for fd in ("1", "2"):
        out["fd" + fd] = attempt(os.readlink, f"/proc/{pid}/fd/{fd}")
    return out


def as_nobody(pid: int) -> dict:
    """The same reads from a child that dropped to uid 65534 (what a non-root SSH user sees)."""
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(r)
        try:
            os.setgid(65534)
            os.setuid(65534)
            data = json.dumps(proc_facts(pid)).encode()
        except Exception as exc:
            data = json.dumps({"error": str(exc)}).encode()
        os.write(w, data)
        os._exit(0)
    os.close(w)
    chunks = []
    while True:
        c = os.read(r, 65536)
        if not c:
            break
        chunks.append(c)
    os.waitpid(child, 0)
    return json.loads(b"".join(chunks))


def gpm_sample(h):
    s = nv.nvmlGpmSampleAlloc()
    nv.nvmlGpmSampleGet(h, s)
    return s


def gpm_metrics(h, s1, s2) -> dict:
    mg = nv.c_nvmlGpmMetricsGet_t()
    mg.version = nv.NVML_GPM_METRICS_GET_VERSION
    mg.numMetrics = len(GPM)
    mg.sample1, mg.sample2 = s1, s2
    for i, const in enumerate(GPM.values()):
        mg.metrics[i].metricId = getattr(nv, const)
    nv.nvmlGpmMetricsGet(mg)
    return {name: (mg.metrics[i].value if mg.metrics[i].nvmlReturn == 0 else f"ret {mg.metrics[i].nvmlReturn}")
            for i, name in enumerate(GPM)}


def window(h) -> dict:
    out = {}
    ts = int(time.time() * 1e6) - 1_000_000
    pids = attempt(lambda: [(p.pid, p.usedGpuMemory) for p in nv.nvmlDeviceGetComputeRunningProcesses(h)])
    out["compute_procs"] = pids
    support = attempt(nv.nvmlGpmQueryDeviceSupport, h)
    out["gpm_supported"] = support if isinstance(support, dict) else support.isSupportedDevice
    e0 = nv.nvmlDeviceGetTotalEnergyConsumption(h)
    t0 = time.monotonic()
    s1 = attempt(gpm_sample, h)
    stat0 = {pid: proc_facts(pid)["stat"] for pid, _ in pids} if isinstance(pids, list) else {}
    utils = []
    while time.monotonic() - t0 < 1.0:
        u = nv.nvmlDeviceGetUtilizationRates(h)
        utils.append((u.gpu, u.memory, nv.nvmlDeviceGetPowerUsage(h) / 1000))
        time.sleep(0.2)
    s2 = attempt(gpm_sample, h)
    t1 = time.monotonic()
    e1 = nv.nvmlDeviceGetTotalEnergyConsumption(h)
    out["window_s"] = t1 - t0
    out["energy_w"] = (e1 - e0) / 1000 / (t1 - t0)
    out["util_mem_power"] = utils
    out["gpm"] = (attempt(gpm_metrics, h, s1, s2) if not isinstance(s1, dict) and not isinstance(s2, dict)
                  else {"s1": s1, "s2": s2})
    out["proc_util_v1"] = attempt(lambda: [{"pid": s.pid, "sm": s.smUtil, "mem": s.memUtil, "ts": s.timeStamp}
                                           for s in nv.nvmlDeviceGetProcessUtilization(h, ts)])
    out["proc_util_info"] = attempt(lambda: [{"pid": s.pid, "sm": s.smUtil, "mem": s.memUtil, "ts": s.timeStamp}
                                             for s in nv.nvmlDeviceGetProcessesUtilizationInfo(h, ts)])
    out["procs"] = {}
    for pid, _ in pids if isinstance(pids, list) else ():
        facts = proc_facts(pid)
        facts["stat0"] = stat0.get(pid)
        facts["nobody"] = as_nobody(pid)
        out["procs"][str(pid)] = facts
    return out


def main(workloads: list[str]) -> None:
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    info = {"uname": list(os.uname()), "self_pid": os.getpid(), "self_cgroup": open("/proc/self/cgroup").read(),
            "pid1": open("/proc/1/cmdline", "rb").read().decode(errors="replace"),
            "driver": nv.nvmlSystemGetDriverVersion(), "clk_tck": os.sysconf("SC_CLK_TCK"),
            "ncpu": os.cpu_count()}
    print(json.dumps({"machine": info}), flush=True)
    logdir = tempfile.mkdtemp()
    for wl in workloads:
        log = open(os.path.join(logdir, wl + ".log"), "w")
        p = subprocess.Popen([sys.executable, "bench/gpu_workloads.py", wl], stdout=log, stderr=subprocess.STDOUT)
        time.sleep(7)
        rec = {"workload": wl, "child_pid": p.pid, "window": attempt(window, h)}
        p.kill()
        p.wait()
        log.close()
        rec["log_tail"] = open(log.name).read()[-400:]
        print(json.dumps(rec, default=str), flush=True)
        time.sleep(1)


if __name__ == "__main__":
    main(sys.argv[1:] or ["idle", "spin", "tiny_graph", "gemv", "copy", "small_gemm", "gemm", "eager_decode"])
