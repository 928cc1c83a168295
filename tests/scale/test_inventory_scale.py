"""Inventory parsing stays linear in the number of hosts (issue 14 #9: 10,000 hosts took 6 s, 100,000 took
458 s, as every host was looked up in every host entry)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gpudiag.sources.inventory import _Reader, load_inventory
from gpudiag.sources.yaml_file import compose

HOSTS = 20_000


def _inventory_text(count: int) -> str:
    names = [f"node{i:06d}" for i in range(count)]
    return "\n".join([
        "defaults: {user: ubuntu}",
        "groups:",
        f"  all_nodes: {{hosts: [{', '.join(names)}]}}",
        f"  thirds: {{hosts: [{', '.join(names[::3])}], vars: {{port: 2222}}}}",
        "hosts:",
        *(f"  {name}: {{address: 10.0.{i // 256 % 256}.{i % 256}}}" for i, name in enumerate(names)),
    ]) + "\n"


@pytest.mark.scale
def test_twenty_thousand_hosts_are_read_in_linear_time(tmp_path: Path) -> None:
    """The walk over the composed YAML (the part gpudiag owns; PyYAML's composing is linear) takes well
    under a CPU second for 20,000 hosts, each in two groups and in its own entry: quadratic, it took minutes."""
    path = tmp_path / "inventory.yaml"
    path.write_text(_inventory_text(HOSTS))
    document = compose(str(path), path.read_text())
    try:
        started = time.process_time()
        inventory = _Reader(document).inventory(document.root)
        elapsed = time.process_time() - started
    finally:
        document.close()
    assert len(inventory.hosts) == HOSTS
    assert elapsed < 5.0, f"{elapsed:.1f} CPU s for {HOSTS} hosts"  # CPU time: other load does not count
    third = inventory.hosts[3]
    assert (third.name, third.address, third.user, third.port, third.groups) == (
        "node000003", "10.0.0.3", "ubuntu", 2222, ("all_nodes", "thirds"))
    assert inventory.hosts[4].port is None and inventory.hosts[4].groups == ("all_nodes",)


def test_later_sources_win_as_before(tmp_path: Path) -> None:
    """Indexing by host keeps the precedence: defaults, then groups in file order, then host entries in
    file order (a pattern entry and a named one for the same host)."""
    path = tmp_path / "inventory.yaml"
    path.write_text("defaults: {user: a, port: 1}\n"
                    "groups:\n  g1: {hosts: [n1, n2], vars: {user: b}}\n  g2: {hosts: [n2], vars: {user: c}}\n"
                    "hosts:\n  n[1-2]: {port: 3}\n  n2: {port: 4}\n")
    hosts = {h.name: h for h in load_inventory(path).hosts}
    assert (hosts["n1"].user, hosts["n1"].port, hosts["n1"].groups) == ("b", 3, ("g1",))
    assert (hosts["n2"].user, hosts["n2"].port, hosts["n2"].groups) == ("c", 4, ("g1", "g2"))
