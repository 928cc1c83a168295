"""The command line's choices as ``str`` Enums that typer checks (``--source``, ``--event-loop``, ``--drain-on``,
``--format`` of ``history``, ``inventory`` and ``grep``).

A module of its own, standard library only: the CLI declares its options with these on start, which must
stay fast (``gpudiag --help``), and the layer that acts on a choice (``remote.collector_call`` for
:class:`Source`) imports it without pulling in the CLI. ``--format`` is :class:`OutputFormat` (re-exported by
:mod:`gpudiag.report`, whose table maps it to the formatters).
"""

from __future__ import annotations

import enum

from gpudiag.model.actions import Action


class Source(str, enum.Enum):
    """Where the collector reads the GPUs (``--source``)."""

    AUTO = "auto"  # NVML where the node's driver lets the bundled binding load, else nvidia-smi
    NVIDIA_SMI = "nvidia-smi"  # never NVML: the binding is not sent (a smaller bundle)


class EventLoop(str, enum.Enum):
    """The event loop the sweep runs on (``--event-loop``)."""

    ASYNCIO = "asyncio"
    UVLOOP = "uvloop"  # faster, when installed; asyncio (saying so) when not


class DrainLevel(str, enum.Enum):
    """What drains a Slurm node (``--drain-on``); ``gpudiag.audit.drain`` acts on it: a severity (the least
    severe finding that drains: ``critical``, ``warning``), or a rung of the action ladder (the node's action
    at least that: ``reset_gpu`` drains a node that needs a GPU reset or more). The action members are the
    ladder's words above ``none`` (:class:`gpudiag.model.Action`; tests/unit/audit/test_drain.py keeps them
    the same)."""

    CRITICAL = "critical"
    WARNING = "warning"
    WATCH = "watch"
    RESTART_WORKLOAD = "restart_workload"
    RESET_GPU = "reset_gpu"
    REBOOT_NODE = "reboot_node"
    DRAIN_AND_INSPECT = "drain_and_inspect"
    REPLACE_GPU = "replace_gpu"

    @property
    def action(self) -> Action | None:
        """The ladder's action this threshold names; None for a severity level."""
        return None if self in (DrainLevel.CRITICAL, DrainLevel.WARNING) else Action.from_label(self.value)


class TextFormat(str, enum.Enum):
    """``--format`` of the commands that print a table or JSON only (``history``, ``inventory``, ``grep``)."""

    TABLE = "table"
    JSON = "json"


HistoryFormat = TextFormat  # how ``gpudiag history`` prints the recorded runs


class OutputFormat(str, enum.Enum):
    """The ``--format`` choices."""

    TABLE = "table"
    JSON = "json"
    HTML = "html"  # one self-contained page (gpudiag.report.html); written with --output FILE
