"""The collector's ``processes`` and ``nvml.gpm`` parts → :class:`GpuProcess` rows and the GPUs' SM activity.

Pure; every part is type-checked as it is read (the document comes from a remote machine) and bounded: a
node claiming thousands of processes gets the first :data:`MAX_PROCESSES` read, the rest named as a problem.
Written by ``collectors/gpudiag_node/processes.py`` (who is on the GPU) and ``collectors/gpudiag_node/gpm.py`` (what its
SMs did).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from gpudiag.collect.untrusted import Claims, integer, items, mapping, seconds, short
from gpudiag.model import GpuProcess, GpuReading
from gpudiag_node.gpm import METRICS
from gpudiag_node.wire import BY_SECTION

MAX_PROCESSES = BY_SECTION["processes"].bound[0]  # (GPU, process) rows read per host
ARG_CHARS = 256
MAX_ARGS = 64
PATH_CHARS = 1024
GPM_FROM = "nvml gpm"
SMI_APPS_FAILED = "nvidia-smi --query-compute-apps"  # the collector's problem line when that listing failed


def _pct(value: object) -> float | None:
    number = seconds(value)
    return number if number is not None and 0.0 <= number <= 100000.0 else None


def _process(gpu: int, listed: Mapping[str, object], info: Mapping[str, object]) -> GpuProcess | None:
    pid = integer(listed.get("pid"))
    if pid is None or pid < 0:
        return None
    container = mapping(info.get("container"))
    runtime, ident = short(container.get("runtime"), 40), short(container.get("id"), 64)
    unreadable = tuple((str(k)[:40], short(v, 200) or "")
                       for k, v in list(mapping(info.get("unreadable")).items())[:16])
    cmdline = [short(a, ARG_CHARS) or "" for a in items(info.get("cmdline"))[:MAX_ARGS]]
    uid = integer(info.get("uid"))
    used = seconds(listed.get("used_memory_mib"))
    return GpuProcess(
        gpu=gpu, pid=pid, used_memory_mib=used if used is not None and used >= 0 else None,
        sm_utilization_pct=_pct(listed.get("sm_util_pct")),
        user=short(info.get("user"), 64) or (str(uid) if uid is not None else None),
        command=tuple(cmdline), command_cut=bool(info.get("cmdline_cut")) or len(items(info.get("cmdline"))) > MAX_ARGS,
        cpu_pct=_pct(info.get("cpu_pct")),
        container=f"{runtime} {ident}" if runtime and ident else None,
        job_id=short(info.get("job_id"), 32), job_id_from=short(info.get("job_id_from"), 16),
        stdout=short(mapping(info.get("stdout")).get("path"), PATH_CHARS),
        stderr=short(mapping(info.get("stderr")).get("path"), PATH_CHARS),
        unreadable=unreadable)


def parse_processes(doc: Mapping[str, object], nvml: Mapping[str, object],
                    claims: Claims) -> dict[str, object]:
    """The NodeReadings fields ``processes``, ``processes_from``, ``processes_user`` from the document: the
    GPUs' process lists (NVML's, in ``nvml.processes``, else the /proc watcher's own ``gpus``) joined with
    what /proc said of each pid."""
    found = mapping(doc.get("processes"))
    per_gpu = mapping(nvml.get("processes")) or mapping(found.get("gpus"))
    procs = mapping(found.get("procs"))
    rows: list[GpuProcess] = []
    for key, listed in per_gpu.items():
        gpu = integer(int(key)) if isinstance(key, str) and key.isdigit() and len(key) < 5 else None
        if gpu is None:
            continue
        for entry in items(listed):
            if not isinstance(entry, dict):
                continue
            if not claims.allow("GPU processes", 1, MAX_PROCESSES):
                break
            row = _process(gpu, entry, mapping(procs.get(str(entry.get("pid")))))
            if row is not None:
                rows.append(row)
    rows.sort(key=lambda p: (p.gpu, p.pid))
    unlisted = sorted({int(k) for k in list(mapping(nvml.get("processes_errors")))[:64]
                       if isinstance(k, str) and k.isdigit() and len(k) < 5})
    source = short(doc.get("processes_from"), 20)
    if source == "nvidia-smi" and any(isinstance(p, str) and p.startswith(SMI_APPS_FAILED)
                                      for p in items(doc.get("problems"))):
        source = None  # the listing failed: no process was read, which is not "no process"
    return {"processes": tuple(rows), "processes_from": source, "processes_user": short(found.get("user"), 64),
            "processes_unlisted": tuple(unlisted)}


def with_gpm(gpus: tuple[GpuReading, ...], gpm: Mapping[str, object]) -> tuple[GpuReading, ...]:
    """The GPUs with GPM's SM activity (or why there is none) where the collector read it."""
    out = []
    for gpu in gpus:
        entry = mapping(gpm.get(str(gpu.index)))
        if not entry:
            out.append(gpu)
        elif "why" in entry:
            out.append(dataclasses.replace(gpu, sm_activity_unavailable=short(entry.get("why"), 200)))
        else:
            values: dict[str, Any] = {name: _pct(entry.get(name)) for name, _ in METRICS}
            out.append(dataclasses.replace(gpu, **values, sm_activity_from=GPM_FROM
                                           if values["sm_active_pct"] is not None else None))
    return tuple(out)
