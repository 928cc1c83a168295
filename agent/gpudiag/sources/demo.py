"""``--demo``: the built-in simulated cluster's hosts, one more host source (:data:`gpudiag.sources.selection.SOURCES`).

The run starts the demo cluster once (:class:`gpudiag.demo.demo.BackgroundCluster`: real SSH servers on
loopback, the real collector, a fake ``nvidia-smi``) and stops it when it is over
(:attr:`~gpudiag.sources.selection.SelectedHosts.started`); its hosts carry their own address, port, key,
known_hosts and logs, so ``--limit``, ``--exclude``, ``--shard``, ``--workers``, watch, the exporter and every
other option treat them as any hosts. Targets given with ``--demo`` that name demo hosts (``sglang-glm5``,
``train-h200-0[1,4]``) pick those; any other target is an ordinary host, swept beside them.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from gpudiag.model.request import HostSelection

if TYPE_CHECKING:
    from gpudiag.demo.demo import DemoNode
    from gpudiag.model import Host
    from gpudiag.sources.selected import SelectedHosts


class Served(Protocol):
    """A running cluster: its hosts, and the call that stops it."""

    hosts: tuple[Host, ...]

    def stop(self) -> None: ...


def _background(nodes: Sequence[DemoNode]) -> Served:
    from gpudiag.demo.demo import BackgroundCluster

    return BackgroundCluster(nodes)


class DemoCluster:
    """``--demo``: the simulated cluster's hosts (those the targets name, when some do), served for the run.
    ``serve`` starts the servers of the nodes given (a test hands a fake one: no server)."""

    narrows = False

    def __init__(self, serve: Callable[[Sequence[DemoNode]], Served] = _background) -> None:
        self.serve = serve

    def wanted(self, selection: HostSelection) -> bool:
        return selection.demo

    def add(self, selection: HostSelection, so_far: SelectedHosts) -> SelectedHosts:
        from gpudiag.demo.demo import DEMO_NODES
        from gpudiag.sources.targets import expand_target

        named: set[str] = set()
        for word in selection.targets:  # host patterns only: stdin, a file or a group are the targets' to read
            if word != "-" and not word.startswith(("^", "@")):
                with contextlib.suppress(ValueError):  # a bad pattern: the targets' source says so
                    named.update(expand_target(word))
        served = self.serve([n for n in DEMO_NODES if n.name in named] or DEMO_NODES)
        # The first source asked: a target naming a demo host is that host (the first of a name wins).
        return dataclasses.replace(so_far, hosts=(*so_far.hosts, *served.hosts),
                                   started=(*so_far.started, served.stop))
