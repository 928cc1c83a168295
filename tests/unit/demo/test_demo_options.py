"""``--demo`` honours every option that applies to it (targets, --limit, --exclude, --shard, thresholds, samples),
refuses in one line those that cannot, has a ``watch``, and its nodes show their own hostname, kernel and
hypervisor flag, never this machine's. The demo cluster is real (asyncssh servers on loopback, the real
collector), run through the command line in this process."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from gpudiag.cli.app import app
from gpudiag.demo.demo import DEMO_NODES, DemoSelectionError, select_demo_nodes

ENV = {"PATH": "/usr/bin:/bin"}


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), env=ENV)


def names(nodes: Any) -> list[str]:
    return [n.name for n in nodes]


@pytest.mark.parametrize(("targets", "limit", "exclude", "expected"), [
    ((), (), (), [n.name for n in DEMO_NODES]),
    (("train-h200-0[1,4]", "sglang-glm5"), (), (), ["sglang-glm5", "train-h200-01", "train-h200-04"]),
    ((), ("train-h200-0[1,4-5]",), ("train-h200-05",), ["train-h200-01", "train-h200-04"]),
    ((), (), ("sglang-glm5", "train-h200-05"), ["train-h200-01", "infer-h200-02", "spare-h200-03", "train-h200-04"]),
])
def test_targets_limit_and_exclude_pick_demo_hosts(targets: tuple[str, ...], limit: tuple[str, ...],
                                                   exclude: tuple[str, ...], expected: list[str]) -> None:
    assert names(select_demo_nodes(targets, limit, exclude)) == expected


def test_the_shards_split_the_demo_and_cover_it_once() -> None:
    first, second = (names(select_demo_nodes(shard=(i, 2))) for i in (1, 2))
    assert sorted(first + second) == sorted(n.name for n in DEMO_NODES) and not set(first) & set(second)


@pytest.mark.parametrize(("targets", "limit", "message"), [
    (("gpu01",), (), "gpu01: not a demo host (the demo's hosts: infer-h200-02,sglang-glm5,spare-h200-03,"
                     "train-h200-[01,04-05])"),
    ((), ("rack1",), "--limit 'rack1': no group or host named rack1 (the demo's hosts: infer-h200-02,sglang-glm5,"
                     "spare-h200-03,train-h200-[01,04-05])"),
])
def test_a_name_the_demo_lacks_is_one_line(targets: tuple[str, ...], limit: tuple[str, ...], message: str) -> None:
    with pytest.raises(DemoSelectionError) as excinfo:
        select_demo_nodes(targets, limit)
    assert str(excinfo.value) == message


@pytest.mark.parametrize(("args", "named"), [
    (("-i", "inventory.yaml"), "-i/--inventory cannot apply (leave it out)"),
    (("--user", "ops", "--ssh-config", "/dev/null"), "--user, --ssh-config cannot apply (leave them out)"),
    (("--local",), "--local cannot apply"),
    (("--slurm-partition", "gpu"), "--slurm-* cannot apply"),
])
def test_options_that_cannot_apply_are_refused_in_one_line(args: tuple[str, ...], named: str) -> None:
    done = invoke("sweep", "--demo", *args)
    assert done.exit_code == 3
    assert done.stderr.startswith("gpudiag: --demo has its own hosts: ") and named in done.stderr
    assert done.stderr.count("\n") == 1 and done.stdout == ""
