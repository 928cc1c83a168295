"""What the node's logs said: each log's status, its matching lines and signatures, the inference server's facts.

Standard library only; see :mod:`gpudiag.model`."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class LogStatus(str, enum.Enum):
    """Whether a log could be read on the node."""

    OK = "ok"
    MISSING = "missing"  # no such file
    UNREADABLE = "unreadable"  # permission denied, a directory, no journalctl nor dmesg that answers
    ERROR = "error"  # the scan itself failed (a pattern the node's Python refused)


FactValue = str | int | float | bool | None


@dataclass(frozen=True, slots=True, kw_only=True)
class LogLine:
    """One line of a log as the node kept it: its number among the lines read (oldest first) and its text,
    cut to a few hundred characters."""

    seq: int
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LogMatch:
    """What one signature found in one log: how often, the first and last line, and a few recent ones.

    ``count`` holds the lines inside the time window (``since_hours``), ``older`` those before it; ``last_seq``
    is the number of the last matching line, in the window or not. ``values`` are the named groups of the last
    match (``gen_throughput_tok_s="225.37"``). A signature with ``group_by`` gives one match per distinct
    ``key`` (e.g. ``(("pci", "0000:2b:00"), ("xid", "79"))``).
    """

    signature: str
    count: int
    older: int = 0
    first: LogLine | None = None
    last: LogLine | None = None
    recent: tuple[LogLine, ...] = ()
    last_seq: int | None = None
    values: tuple[tuple[str, str], ...] = ()
    key: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerFacts:
    """A configuration echo (SGLang's ``server_args=ServerArgs(...)``, vLLM's non-default args, an argv dump)
    read as configuration: the values that matter, from the last such line (the latest server start)."""

    echo: str  # the echo's name in its pack, e.g. "sglang_server_args"
    server: str | None = None  # "SGLang", "vLLM"
    count: int = 1  # how many such lines (server starts) the log holds
    seq: int | None = None  # the line number of the last one
    values: tuple[tuple[str, FactValue], ...] = ()

    def get(self, key: str) -> FactValue:
        """The value of ``key``, None when the echo did not carry it."""
        return next((v for k, v in self.values if k == key), None)


@dataclass(frozen=True, slots=True, kw_only=True)
class LogScan:
    """One log source as read on the node: a file (with its rotations) or the kernel log (``@kernel``)."""

    path: str  # as configured ("~/sglang.log", "@kernel")
    status: LogStatus = LogStatus.OK
    error: str | None = None
    resolved: str | None = None  # the path on the node, "~" expanded
    source: str | None = None  # "file", "journalctl" or "dmesg"
    files: tuple[str, ...] = ()  # what was read, oldest first
    bytes_scanned: int = 0
    lines: int = 0
    cut: bool = False  # the log was longer than the tail read (older lines not scanned)
    notes: tuple[str, ...] = ()
    matches: tuple[LogMatch, ...] = ()
    facts: tuple[ServerFacts, ...] = ()
    # Not configured but found through a GPU process: "stdout of pid 4312 (SGLang, /proc/4312/fd/1)"
    found_from: str | None = None
    found_server: str | None = None  # the server whose command line matched ("SGLang")

    def found(self, signature: str) -> tuple[LogMatch, ...]:
        """The matches of ``signature`` (several for a ``group_by`` signature)."""
        return tuple(m for m in self.matches if m.signature == signature)

    def echo(self, name: str) -> ServerFacts | None:
        return next((f for f in self.facts if f.echo == name), None)
