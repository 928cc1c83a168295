"""The active test's PTX kernel and driver-API calls on a real GPU (gpudiag_node.active): the FMA kernel loads
and runs, each part gives a figure in a sane range, a GPU in use is skipped at the re-check, and the test's
process is ended at its budget with nothing of it left."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpudiag_node import active, active_test

REPO = Path(__file__).resolve().parents[2]


def _idle_rows() -> list[dict[str, object]]:
    """The GPUs as a window that found them all idle would list them (the real bus ids, 0% busy)."""
    out = subprocess.run(["nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader"],
                         capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        index, bus = (c.strip() for c in line.split(","))
        rows.append({"index": index, "pci_bus_id": bus, "utilization_pct": "0"})
    return rows


def _busy() -> bool:
    """Whether a process is on a GPU; when none is, waits (up to 10 s) for the utilization to read 0: it
    averages over the last second, so a test just ended still reads a few percent."""
    out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout
    if out.strip():
        return True
    zeros = 0  # three readings of 0% in a row: a context just torn down can still read busy once
    for _ in range(40):
        util = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True).stdout.split()
        zeros = zeros + 1 if all(u.strip() == "0" for u in util) else 0
        if zeros >= 3:
            break
        time.sleep(0.5)
    return False


def test_the_ptx_loads_through_the_driver() -> None:
    lib = ctypes.CDLL("libcuda.so.1")
    cuda = active_test.Cuda(ctypes, lib)
    cuda("cuInit", 0)
    device, ctx, module, fn = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    cuda("cuDeviceGet", ctypes.byref(device), 0)
    cuda("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), device)
    cuda("cuCtxSetCurrent", ctx)
    cuda("cuModuleLoadData", ctypes.byref(module), ctypes.c_char_p(active_test.ptx().encode()))
    cuda("cuModuleGetFunction", ctypes.byref(fn), module, b"fma_loop")
    with pytest.raises(active_test.CudaError, match="cuModuleGetFunction: CUDA_ERROR_NOT_FOUND"):
        cuda("cuModuleGetFunction", ctypes.byref(fn), module, b"no_such_kernel")
    cuda("cuModuleUnload", module)
    cuda("cuDevicePrimaryCtxRelease_v2", device)


def test_an_idle_gpu_gives_all_three_figures() -> None:
    if _busy():
        pytest.skip("a process is on the GPU")
    doc = active.run({"budget_s": 20}, {}, _idle_rows(), time.monotonic())
    assert "error" not in doc, doc
    for gpu in doc["gpus"]:
        assert gpu["state"] == "tested", gpu
        assert 1.0 < gpu["compute"]["tflops"] < 1000.0 and gpu["compute"]["nvml_samples"] > 3
        assert gpu["compute"]["sm_clock_mhz_max"] > 300 and gpu["compute"]["power_w_max"] > 20
        assert 50.0 < gpu["memory"]["gb_s"] < 20000.0
        for part in ("h2d", "d2h"):
            assert 1.0 < gpu[part]["gb_s"] < 300.0 and gpu[part]["pcie_width_min"] >= 1
        assert gpu["after"]["ecc_uncorrected_rise"] in (0, None)


# A process that holds GPU 0 (a context and 1 MiB) and launches nothing: 0% busy, one process.
HOLDER = ("import ctypes, time; l = ctypes.CDLL('libcuda.so.1'); b = ctypes.byref; l.cuInit(0); d = ctypes.c_int(); "
          "c = ctypes.c_void_p(); p = ctypes.c_uint64(); l.cuDeviceGet(b(d), 0); l.cuDevicePrimaryCtxRetain(b(c), d); "
          "l.cuCtxSetCurrent(c); l.cuMemAlloc_v2(b(p), 1 << 20); print('up', flush=True); time.sleep(60)")


def test_a_gpu_in_use_is_skipped_at_the_recheck() -> None:
    """The window said idle; a process took the GPU since: the test's own re-check leaves it alone."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "up"
        rows = _idle_rows()[:1]
        doc = active.run({"budget_s": 20}, {}, rows, time.monotonic())
        (gpu,) = doc["gpus"]
        assert gpu["state"] == "skipped" and "at the re-check" in gpu["why"], gpu
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


def test_the_budget_ends_the_test_and_leaves_nothing() -> None:
    if _busy():
        pytest.skip("a process is on the GPU")
    doc = active.run({"budget_s": 4, "scale": 30}, {}, _idle_rows(), time.monotonic())
    assert all(g["state"] == "timed_out" for g in doc["gpus"]), doc
    assert doc["elapsed_s"] < 8
    time.sleep(0.5)
    assert not _busy()
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _is_active(p)]


def _is_active(pid: str) -> bool:
    try:
        return b"<gpudiag:active>" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
