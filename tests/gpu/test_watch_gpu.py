"""The streaming collector (what `gpudiag watch` keeps on each node) on a real GPU: one process, NVML, sane
readings every round, and it ends when its input does."""

from __future__ import annotations

import json
import subprocess

from gpudiag.collect.parse import parse_probe
from gpudiag.sweep.runner import SweepOptions, collector_command


def test_one_collector_reads_the_gpu_through_nvml_every_round() -> None:
    command = collector_command(SweepOptions(samples=2, interval_s=0.2, stream=True))
    docs = []
    with subprocess.Popen(["sh", "-c", command.command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, start_new_session=True) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        for n in range(3):
            proc.stdin.write(command.stdin if n == 0 else b"\n")
            proc.stdin.flush()
            docs.append(json.loads(proc.stdout.readline()))
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0  # its input ended: it left on its own
    assert [d["stream"]["round"] for d in docs] == [1, 2, 3] and len({d["stream"]["pid"] for d in docs}) == 1
    for doc in docs:
        node = parse_probe(doc)
        assert node.source == "nvml" and node.cuda_version_from == "nvml" and node.gpus
        for gpu in node.gpus:
            assert not gpu.lost and gpu.enforced_power_limit_w and gpu.power_w is not None and len(gpu.samples) == 2
            assert gpu.energy_power_w is not None  # two samples: a window for the energy counter
