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
  hold20       20 GiB (14% of an H200) allocated and nothing launched (a smaller idle holder: issue 28)
  hold60       60 GiB allocated and nothing launched (the idle holder beside a spinner: issue 21)
  hold100      100 GiB allocated and nothing launched (a job that holds a GPU and does not use it)
  context      a bare CUDA context and one tiny tensor, nothing launched after (what any CUDA process holds
               before it allocates: the floor below which a holder is not "holding" the GPU)
  moe_dispatch the case study's MoE dispatch, eager: 8 layers x 64 experts of 16 tokens each, per expert a
               gather, a bf16 [16 x 2048] x [2048 x 1408] GEMM, SiLU, the [16 x 1408] x [1408 x 2048] GEMM back
               and a scatter-add, one launch at a time from Python: the GPU half busy, its SMs nearly idle, the
               launching thread pegged (the launch-bound GPU in the middle: issue 28)
  partly_busy  real work half the time: bursts of 8192^3 bf16 GEMMs, each followed by a sleep as long as the
               burst, the host thread blocked (not spinning) while the GPU computes: ~50% busy, no pegged thread
  nccl1        a world-size-1 torch.distributed NCCL job all-reducing in a loop (NCCL's RAS thread runs)
  eager_decode a small GPT-like transformer decoding token by token at batch 1 in eager PyTorch, with a KV
               cache and a greedy ``.item()`` per token: its Python thread is pegged while the GPU is mostly
               idle between tiny kernels (the host-bound GPU HOST_BOUND must flag). Prints a line per
               1000 tokens on stdout, like a server's log.
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
    if workload in ("hold20", "hold60", "hold100", "context"):
        size = int(workload[4:]) * 1024**3 if workload != "context" else 1
        held = torch.empty(size, dtype=torch.uint8, device=dev)
        held.fill_(1)
        torch.cuda.synchronize()
        while True:
            time.sleep(1)
    if workload == "nccl1":
        import os

        import torch.distributed as dist
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29511")
        dist.init_process_group("nccl", rank=0, world_size=1)
        x = torch.ones(1 << 20, device=dev)
        print("nccl", torch.cuda.nccl.version(), flush=True)
        while True:
            for _ in range(100):
                dist.all_reduce(x)
            torch.cuda.synchronize()
            time.sleep(0.01)
    if workload == "eager_decode":
        eager_decode(torch, dev)
    if workload == "moe_dispatch":
        moe_dispatch(torch, dev)
    if workload == "partly_busy":
        partly_busy(torch, dev)
    raise SystemExit(f"unknown workload {workload!r}; see the module docstring")


def eager_decode(torch, dev, layers: int = 6, width: int = 768, heads: int = 12, vocab: int = 50257,
                 context: int = 1024) -> None:
    """Greedy decode forever: GPT-2-small shapes, bf16, one token at a time, nothing fused or captured."""
    import math

    f = torch.nn.functional
    dt = torch.bfloat16

    def w(*shape):
        return torch.randn(*shape, device=dev, dtype=dt) * 0.02

    emb, head = w(vocab, width), w(vocab, width)
    blocks = [{"qkv": w(3 * width, width), "proj": w(width, width), "up": w(4 * width, width),
                   "down": w(width, 4 * width)} for _ in range(layers)]
    hd = width // heads
    cache_k = torch.zeros(layers, heads, context, hd, device=dev, dtype=dt)
    cache_v = torch.zeros_like(cache_k)
    token, pos, done, start = 0, 0, 0, time.monotonic()
    with torch.no_grad():
        while True:
            x = emb[token].view(1, width)
            for i, b in enumerate(blocks):
                h = f.layer_norm(x, (width,))
                q, k, v = (h @ b["qkv"].t()).view(3, heads, hd).unbind(0)
                cache_k[i, :, pos] = k
                cache_v[i, :, pos] = v
                att = torch.softmax((cache_k[i, :, :pos + 1] @ q.unsqueeze(-1)).squeeze(-1) / math.sqrt(hd), -1)
                o = (att.unsqueeze(1) @ cache_v[i, :, :pos + 1]).reshape(1, width)
                x = x + o @ b["proj"].t()
                x = x + f.gelu(f.layer_norm(x, (width,)) @ b["up"].t()) @ b["down"].t()
            token = int((f.layer_norm(x, (width,)) @ head.t()).argmax())  # the per-token sync of greedy decode
            pos = (pos + 1) % context
            done += 1
            if done % 1000 == 0:
                print(f"Decode batch. #running-req: 1, #token: {pos}, token usage: 0.00, cuda graph: False, "
                      f"gen throughput (token/s): {done / (time.monotonic() - start):.2f}, #queue-req: 0",
                      flush=True)


def moe_dispatch(torch, dev, layers: int = 8, experts: int = 64, tokens: int = 16, hidden: int = 2048,
                 ffn: int = 1408) -> None:
    """Forward passes forever through MoE layers dispatched expert by expert, eagerly: ~2,600 tiny kernels a
    pass, each launched by the one Python thread, one synchronize a pass (the step's end)."""
    f = torch.nn.functional
    dt = torch.bfloat16
    up = [torch.randn(experts, hidden, ffn, device=dev, dtype=dt) * 0.02 for _ in range(layers)]
    down = [torch.randn(experts, ffn, hidden, device=dev, dtype=dt) * 0.02 for _ in range(layers)]
    router = [torch.randn(hidden, experts, device=dev, dtype=dt) for _ in range(layers)]
    x0 = torch.randn(experts * tokens, hidden, device=dev, dtype=dt)
    with torch.no_grad():
        while True:
            x = x0
            for i in range(layers):
                order = torch.argsort((x @ router[i]).argmax(-1))  # tokens grouped by their expert
                out = torch.zeros_like(x)
                for e in range(experts):
                    idx = order[e * tokens:(e + 1) * tokens]
                    h = f.silu(x[idx] @ up[i][e])
                    out.index_add_(0, idx, h @ down[i][e])
                x = f.layer_norm(out, (hidden,))
            torch.cuda.synchronize()


def partly_busy(torch, dev, size: int = 8192, burst: int = 50) -> None:
    """Bursts of large GEMMs (compute-bound, at the power cap while they run), each followed by an equal sleep;
    the host waits on a blocking event, so no thread spins."""
    a = torch.randn(size, size, device=dev, dtype=torch.bfloat16)
    b = torch.randn(size, size, device=dev, dtype=torch.bfloat16)
    done = torch.cuda.Event(blocking=True)
    while True:
        start = time.monotonic()
        for _ in range(burst):
            a @ b
        done.record()
        done.synchronize()
        time.sleep(time.monotonic() - start)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "idle")
