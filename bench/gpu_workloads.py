"""GPU workloads whose nvidia-smi signatures differ, for calibrating gpudiag's checks on real hardware.

Run one until killed:  python3 bench/gpu_workloads.py WORKLOAD
Needs PyTorch with CUDA (the device machine's python3 has it). Each workload keeps the GPU in one steady
state so a sweep taken while it runs reads that state:

  idle         nothing (the process just sleeps)
  spin         one thread spinning: torch.cuda._sleep keeps a kernel resident on one SM - "100% busy",
               almost no work (the starved GPU BUSY_LOW_POWER must flag)
  tiny_graph   a CUDA graph of thousands of tiny kernels replayed back to back (launch-bound)
  gemv         batch-1 matrix-vector product over a large bf16 matrix (bandwidth-bound)
  copy         large device-to-device copies (bandwidth-bound)
  small_gemm   many 256x256 bf16 GEMMs (latency-bound-ish)
  gemm         large 8192^3 bf16 GEMMs (compute-bound, at the power cap)
"""

from __future__ import annotations

import sys
import time


def main(workload: str) -> None:
    if workload == "idle":
        while True:
            time.sleep(1)
    import torch

    dev = torch.device("cuda")
    if workload == "spin":
        while True:
            torch.cuda._sleep(1_000_000_000)  # ~0.5 s of cycles on one SM; queue them back to back
            torch.cuda.synchronize()
    if workload == "tiny_graph":
        x = torch.zeros(1024, device=dev)
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            for _ in range(3):
                x.add_(1)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(5000):
                x.add_(1)
        while True:
            graph.replay()
            torch.cuda.synchronize()
    if workload == "gemv":
        a = torch.randn(32768, 32768, device=dev, dtype=torch.bfloat16)  # 2 GiB: far beyond L2
        v = torch.randn(32768, 1, device=dev, dtype=torch.bfloat16)
        while True:
            for _ in range(100):
                a @ v
            torch.cuda.synchronize()
    if workload == "copy":
        src = torch.empty(4 * 1024**3, dtype=torch.uint8, device=dev)
        dst = torch.empty_like(src)
        while True:
            for _ in range(10):
                dst.copy_(src)
            torch.cuda.synchronize()
    if workload == "small_gemm":
        a = torch.randn(256, 256, device=dev, dtype=torch.bfloat16)
        b = torch.randn(256, 256, device=dev, dtype=torch.bfloat16)
        while True:
            for _ in range(1000):
                a @ b
            torch.cuda.synchronize()
    if workload == "gemm":
        a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        while True:
            for _ in range(20):
                a @ b
            torch.cuda.synchronize()
    raise SystemExit(f"unknown workload {workload!r}; see the module docstring")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "idle")
