"""The host sources are one protocol and one explicit tuple: each is asked in order, a narrowing one (Slurm) sees
the others' hosts deduplicated and limited, and a new source is one object more in the tuple."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gpudiag.model import Host
from gpudiag.sources.demo import DemoCluster
from gpudiag.sources.selection import (
    SOURCES,
    CommandLineTargets,
    HostSelection,
    InventoryFile,
    SelectedHosts,
    SlurmNodes,
    ThisMachine,
    select_hosts,
)


def test_the_sources_are_asked_in_their_order() -> None:
    assert [type(s) for s in SOURCES] == [DemoCluster, InventoryFile, CommandLineTargets, ThisMachine, SlurmNodes]
    assert [s.narrows for s in SOURCES] == [False, False, False, False, True]


def test_inventory_then_targets_then_this_machine(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("hosts:\n  gpu01: {address: 10.0.0.11}\n  gpu02: {}\n")
    selected = select_hosts(HostSelection(inventory=inventory, targets=("gpu03", "gpu01"), local=True))
    assert [h.name for h in selected.hosts] == ["gpu01", "gpu02", "gpu03", "localhost"]
    assert selected.hosts[0].address == "10.0.0.11"  # the first of a host given twice wins


class _Rack:
    """A source of the kind a site would add: every host of one rack, from its own records."""

    narrows = False

    def wanted(self, selection: HostSelection) -> bool:
        return True

    def add(self, selection: HostSelection, so_far: SelectedHosts) -> SelectedHosts:
        return dataclasses.replace(so_far, hosts=(*so_far.hosts, Host(name="r7-gpu01"), Host(name="r7-gpu02")))


class _OnlyEven:
    """A narrowing source: keeps what the others found, as Slurm keeps its own nodes."""

    narrows = True

    def wanted(self, selection: HostSelection) -> bool:
        return True

    def add(self, selection: HostSelection, so_far: SelectedHosts) -> SelectedHosts:
        return dataclasses.replace(so_far, hosts=tuple(h for h in so_far.hosts if h.name.endswith(("2", "4"))))


def test_a_new_source_is_one_entry_more() -> None:
    sources = (CommandLineTargets(), _Rack(), _OnlyEven())
    selected = select_hosts(HostSelection(targets=("gpu[01-04]",), exclude=("gpu04",)), sources)
    # --exclude applies before the narrowing source, which sees gpu01-03 and the rack's two hosts.
    assert [h.name for h in selected.hosts] == ["gpu02", "r7-gpu02"]
