"""``--demo`` is a host source (gpudiag.sources.demo): its hosts go through the ordinary selection (targets that
name demo hosts, ``--limit``, ``--exclude``, ``--shard``), beside any other source's, and what it started for
the run is stopped once the run is over, or when a later step of the selection fails. Here the cluster is a
fake one (hosts, no server: a unit test opens no socket); tests/integration/test_demo_cluster.py runs the real
one through the command line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from gpudiag.demo.demo import DEMO_NODES, DemoNode
from gpudiag.model import Host
from gpudiag.model.request import HostSelection
from gpudiag.run.request import selected_hosts
from gpudiag.sources.demo import DemoCluster
from gpudiag.sources.inventory import InventoryError
from gpudiag.sources.selection import SOURCES, CommandLineTargets, InventoryFile, select_hosts


class _FakeCluster:
    """Hosts on loopback ports (none listening) for the nodes asked, and a record of its stop."""

    def __init__(self, nodes: Sequence[DemoNode], stopped: list[str]) -> None:
        self.hosts = tuple(Host(name=n.name, address="127.0.0.1", port=40000 + i, groups=n.groups)
                           for i, n in enumerate(nodes))
        self._stopped = stopped

    def stop(self) -> None:
        self._stopped.append(",".join(h.name for h in self.hosts))


def _sources(stopped: list[str]) -> tuple[object, ...]:
    fake = DemoCluster(serve=lambda nodes: _FakeCluster(nodes, stopped))
    return tuple(fake if isinstance(s, DemoCluster) else s for s in SOURCES)


def names(selection: HostSelection, stopped: list[str] | None = None) -> list[str]:
    return [h.name for h in select_hosts(selection, _sources([] if stopped is None else stopped)).hosts]  # type: ignore[arg-type]


@pytest.mark.parametrize(("targets", "limit", "exclude", "expected"), [
    ((), (), (), [n.name for n in DEMO_NODES]),
    (("train-h200-0[1,4]", "sglang-glm5"), (), (), ["sglang-glm5", "train-h200-01", "train-h200-04"]),
    ((), ("train-h200-0[1,4-5]",), ("train-h200-05",), ["train-h200-01", "train-h200-04"]),
    ((), (), ("sglang-glm5", "train-h200-05"), ["train-h200-01", "infer-h200-02", "spare-h200-03", "train-h200-04"]),
    ((), ("h200",), ("train-h200-05",), ["train-h200-01", "infer-h200-02", "spare-h200-03", "train-h200-04"]),
])
def test_targets_limit_and_exclude_pick_demo_hosts(targets: tuple[str, ...], limit: tuple[str, ...],
                                                   exclude: tuple[str, ...], expected: list[str]) -> None:
    assert names(HostSelection(demo=True, targets=targets, limit=limit, exclude=exclude)) == expected


def test_a_target_naming_a_demo_host_is_that_host_and_others_are_ordinary_hosts() -> None:
    selected = select_hosts(HostSelection(demo=True, targets=("sglang-glm5", "gpu01")),
                            _sources([]))  # type: ignore[arg-type]
    assert [(h.name, h.address) for h in selected.hosts] == [("sglang-glm5", "127.0.0.1"), ("gpu01", None)]


def test_the_demo_sits_beside_an_inventory(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("hosts:\n  gpu01: {address: 127.0.0.2}\n")
    assert names(HostSelection(demo=True, inventory=inventory, limit=("gpu01", "sglang-glm5"))) == [
        "sglang-glm5", "gpu01"]


def test_the_shards_split_the_demo_and_cover_it_once() -> None:
    stopped: list[str] = []
    parts = []
    for i in (1, 2):
        with selected_hosts(HostSelection(demo=True, shard=(i, 2)), _sources(stopped)) as selected:  # type: ignore[arg-type]
            parts.append([h.name for h in selected.hosts])
    assert sorted(parts[0] + parts[1]) == sorted(n.name for n in DEMO_NODES) and not set(parts[0]) & set(parts[1])
    assert len(stopped) == 2  # each run stopped the cluster it started


def test_a_name_the_run_lacks_is_one_line_and_what_was_started_stops() -> None:
    stopped: list[str] = []
    with pytest.raises(InventoryError) as excinfo:
        names(HostSelection(demo=True, limit=("rack1",)), stopped)
    assert str(excinfo.value) == "--limit 'rack1': no group or host named rack1"
    assert stopped == [",".join(n.name for n in DEMO_NODES)]


def test_no_demo_no_cluster() -> None:
    stopped: list[str] = []
    assert names(HostSelection(targets=("gpu01",)), stopped) == ["gpu01"] and stopped == []
    assert isinstance(SOURCES[1], InventoryFile) and isinstance(SOURCES[2], CommandLineTargets)
