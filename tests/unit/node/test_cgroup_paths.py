"""The node reads a process's container and Slurm job from its cgroup path with str methods, not ``re`` (whose
import costs a node 5-10 ms at every sweep that finds a GPU process): the same answers as the patterns they
replace, on paths built from the pieces those patterns look for (issue 32)."""

from __future__ import annotations

import random
import re

import pytest

from gpudiag_node import processes

# The patterns the node used before, in the order it tried them.
CONTAINERS = (
    ("k8s pod", re.compile(r"kubepods[^/]*/(?:[^/]*/)?(?:kubepods-[a-z]+-)?pod([0-9a-f_-]{36})")),
    ("containerd", re.compile(r"cri-containerd-([0-9a-f]{12,64})")),
    ("podman", re.compile(r"libpod-(?:conmon-)?([0-9a-f]{12,64})")),
    ("docker", re.compile(r"docker[-/]([0-9a-f]{12,64})")),
)
SLURM_JOB = re.compile(r"/job_(\d+)(?:/|$)")
PIECES = ("/", "/", "kubepods", "kubepods-", "kubepods-besteffort-", "burstable", ".slice", "pod", "-pod",
          "cri-containerd-", "libpod-", "libpod-conmon-", "conmon-", "docker", "docker-", "docker/", "/job_",
          "job_", "step_0", "12", "x", "_", "-", ".scope", "0c4f1e2d_3b4a_4c5d_8e6f_7a8b9c0d1e2f",
          "0c4f1e2d-3b4a-4c5d-8e6f-7a8b9c0d1e2", "3f2a9c1b0e4d5a6b", "abcdef012345", "abcdef01234", "81723",
          "\u0663\u0664", ":", "0::", "\n", "kubepods.slice/", "kubepods-burstable.slice/", "/kubepods/",
          "pod0c4f1e2d_3b4a_4c5d_8e6f_7a8b9c0d1e2f", "kubepods-burstable-pod0c4f1e2d-3b4a-4c5d-8e6f-7a8b9c0d1e2f")


def by_patterns(text: str) -> tuple[str | None, str | None]:
    for line in text.splitlines():
        path = line.split(":", 2)[-1]
        for kind, pattern in CONTAINERS:
            match = pattern.search(path)
            if match:
                ident = match.group(1).replace("_", "-")
                return kind, ident if kind == "k8s pod" else ident[:12]
    return None, None


def job_by_pattern(text: str) -> str | None:
    for line in text.splitlines():
        match = SLURM_JOB.search(line.split(":", 2)[-1])
        if match:
            return match.group(1)
    return None


@pytest.mark.parametrize("seed", range(8))
def test_the_same_container_and_job_as_the_patterns(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(3000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12)))
        assert processes.container_of(text) == by_patterns(text), text
        assert processes.slurm_job_of(text) == job_by_pattern(text), text


def test_no_re_is_imported_by_the_processes_module() -> None:
    source = processes.__loader__.get_source(processes.__name__)  # type: ignore[union-attr]
    assert "\nimport re\n" not in source
