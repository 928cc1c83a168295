"""What a host selection comes to (:class:`SelectedHosts`) and what answers it (:class:`HostSource`): the values
and the protocol the sources share, apart from :mod:`gpudiag.sources.selection` (which lists the sources) so
that a source module imports them without importing the list it is in."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from gpudiag.model import Host
    from gpudiag.model.request import HostSelection
    from gpudiag.sources.slurm import SlurmNode


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectedHosts:
    """The hosts a :class:`HostSelection` names, and the check settings their inventory sets."""

    hosts: tuple[Host, ...]
    settings: Mapping[str, object] = field(default_factory=dict)  # the inventory's ``settings:``, unchecked
    read_as: str | None = None  # what the inventory was read as, when not gpudiag's format (an Ansible one)
    slurm_nodes: Mapping[str, SlurmNode] | None = None  # the swept Slurm nodes by name, when Slurm gave the hosts
    started: tuple[Callable[[], None], ...] = ()
    """What the sources started for the run (the demo cluster's servers), each as the call that stops it:
    :func:`stop_started`, once the run is over (:func:`gpudiag.run.request.selected_hosts`)."""


def stop_started(selected: SelectedHosts) -> None:
    """Stop what the sources started for the run, the last started first."""
    for stop in reversed(selected.started):
        stop()


class HostSource(Protocol):
    """One place hosts come from. ``wanted``: whether the selection asks this source at all; ``add``: the hosts
    so far (a :class:`SelectedHosts`) with this source's applied: appended, or (``narrows``: Slurm) replaced
    by its own, after the others' hosts were deduplicated and limited."""

    narrows: bool

    def wanted(self, selection: HostSelection) -> bool: ...

    def add(self, selection: HostSelection, so_far: SelectedHosts) -> SelectedHosts: ...
