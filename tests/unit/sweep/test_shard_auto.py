"""``--shard auto``: the shard of this Slurm array task, from SLURM_ARRAY_TASK_* (no Slurm needed)."""

from __future__ import annotations

import pytest

from gpudiag.sweep.shard import ShardError, parse_shard


def env(task: int, count: int, low: int, high: int) -> dict[str, str]:
    return {"SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_COUNT": str(count),
            "SLURM_ARRAY_TASK_MIN": str(low), "SLURM_ARRAY_TASK_MAX": str(high)}


@pytest.mark.parametrize(("environ", "shard"), [
    (env(0, 16, 0, 15), (1, 16)),
    (env(15, 16, 0, 15), (16, 16)),
    (env(1, 4, 1, 4), (1, 4)),  # --array=1-4
    (env(7, 2, 6, 7), (2, 2)),
])
def test_auto(environ: dict[str, str], shard: tuple[int, int]) -> None:
    assert parse_shard("auto", environ) == shard


@pytest.mark.parametrize(("environ", "message"), [
    ({}, "--shard auto: not in a Slurm job array (SLURM_ARRAY_TASK_ID is not set); submit with sbatch "
         "--array=0-N, or give --shard I/N"),
    (env(2, 8, 0, 14), "--shard auto: the array tasks must be numbered without gaps (e.g. --array=0-15); got 8 tasks "
                       "from 0 to 14"),
    ({"SLURM_ARRAY_TASK_ID": "3"}, "--shard auto: cannot read the Slurm array variables (SLURM_ARRAY_TASK_ID='3', "
                                   "SLURM_ARRAY_TASK_COUNT='', SLURM_ARRAY_TASK_MIN='', SLURM_ARRAY_TASK_MAX='')"),
])
def test_auto_refuses(environ: dict[str, str], message: str) -> None:
    with pytest.raises(ShardError) as excinfo:
        parse_shard("auto", environ)
    assert str(excinfo.value) == message


def test_explicit_shard_ignores_the_environment() -> None:
    assert parse_shard("2/4", env(0, 16, 0, 15)) == (2, 4)
