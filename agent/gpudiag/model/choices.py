"""The command line's choices as ``str`` Enums that typer checks (``--source``, ``--event-loop``, ``--drain-on``,
``--format`` of ``history``, ``inventory`` and ``grep``).

A module of its own, standard library only: the CLI declares its options with these on start, which must
stay fast (``gpudiag --help``), and the layer that acts on a choice (``remote.collector_call`` for
:class:`Source`) imports it without pulling in the CLI. ``--format`` is :class:`gpudiag.report.OutputFormat`,
beside the formatters it picks.
"""

from __future__ import annotations

import enum


class Source(str, enum.Enum):
    """Where the collector reads the GPUs (``--source``)."""

    AUTO = "auto"  # NVML where the node's driver lets the bundled binding load, else nvidia-smi
    NVIDIA_SMI = "nvidia-smi"  # never NVML: the binding is not sent (a smaller bundle)


class EventLoop(str, enum.Enum):
    """The event loop the sweep runs on (``--event-loop``)."""

    ASYNCIO = "asyncio"
    UVLOOP = "uvloop"  # faster, when installed; asyncio (saying so) when not


class DrainLevel(str, enum.Enum):
    """The least severe finding that drains a Slurm node (``--drain-on``); ``gpudiag.audit.drain`` acts on it."""

    CRITICAL = "critical"
    WARNING = "warning"


class TextFormat(str, enum.Enum):
    """``--format`` of the commands that print a table or JSON only (``history``, ``inventory``, ``grep``)."""

    TABLE = "table"
    JSON = "json"


HistoryFormat = TextFormat  # how ``gpudiag history`` prints the recorded runs
