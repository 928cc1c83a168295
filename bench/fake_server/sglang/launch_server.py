"""A stand-in for ``python3 -m sglang.launch_server`` on the device machine: SGLang's start-up lines (its
configuration echo, its readiness line), then bench/gpu_workloads.py's eager decode, whose progress lines
read like SGLang's "Decode batch" lines. Run with ``PYTHONPATH=bench/fake_server`` and its stdout sent to
a file: gpudiag must find that log through /proc/PID/fd/1 with no ``logs:`` configured."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bench/, for gpu_workloads

import gpu_workloads  # noqa: E402


def main() -> None:
    print("server_args=ServerArgs(model_path='/models/demo', tp_size=1, ep_size=1, disable_cuda_graph=True, "
          "disable_flashinfer_autotune=False, moe_runner_backend='auto')", flush=True)
    print("The server is fired up and ready to roll!", flush=True)
    gpu_workloads.main("eager_decode")


if __name__ == "__main__":
    main()
