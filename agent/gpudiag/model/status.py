"""Severities and statuses: the Nagios-ordered :class:`Severity` and :func:`worst`, a host's status, why a host was
unreachable, what nvidia-smi answered.

Standard library only; see :mod:`gpudiag.model`."""

from __future__ import annotations

import enum
from collections.abc import Iterable

from gpudiag.model.labelled import Labelled


class Severity(Labelled, enum.Enum):
    """Nagios-style severity; its value is the Nagios exit value (OK 0, WARNING 1, CRITICAL 2, UNKNOWN 3).

    A plain Enum, not an IntEnum: severities do not compare as numbers, so ``max()`` cannot rank UNKNOWN (3)
    above CRITICAL (2). How serious one is, is :attr:`rank` (OK < WARNING < UNKNOWN < CRITICAL: a missing
    reading is never hidden behind an OK); combine with :func:`worst`."""

    OK = 0
    WARNING = 1
    CRITICAL = 2
    UNKNOWN = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @property
    def nagios_exit(self) -> int:
        """The Nagios plugin exit value: 0, 1, 2 or 3."""
        return int(self.value)

    @property
    def rank(self) -> int:
        """How serious: a missing reading (UNKNOWN) outranks a warning, a critical outranks all. Every
        ordering of severities (worst(), most serious first in reports) uses this."""
        return _RANK[self]



_RANK = {Severity.OK: 0, Severity.WARNING: 1, Severity.UNKNOWN: 2, Severity.CRITICAL: 3}


def worst(severities: Iterable[Severity]) -> Severity:
    """The most serious of ``severities`` (OK when there are none): the one way to combine severities."""
    return max(severities, key=lambda s: s.rank, default=Severity.OK)


class HostStatus(str, enum.Enum):
    """How talking to one host went. ``ok``/``partial`` hosts answered; the rest did not."""

    OK = "ok"
    PARTIAL = "partial"
    UNREACHABLE = "unreachable"
    TIMEOUT = "timeout"
    AUTH_FAILED = "auth_failed"
    HOST_KEY_REJECTED = "host_key_rejected"
    ERROR = "error"
    # The sweep was stopped (SIGINT, SIGTERM) before this host answered: nothing is known about it, good or bad.
    CANCELLED = "cancelled"

    @property
    def answered(self) -> bool:
        return self in (HostStatus.OK, HostStatus.PARTIAL)


class UnreachableReason(str, enum.Enum):
    """Why an ``unreachable`` host was not reached: a stable word for scripts (the error says it in a sentence)."""

    REFUSED = "refused"  # the host is up, nothing listens on the port (or a firewall rejects)
    TIMEOUT = "timeout"  # no TCP connection, or no SSH login, within the connect/login timeout
    DNS = "dns"  # the name does not resolve, or is not a valid host name
    NETWORK = "network"  # no route, network unreachable, reset: the network said no


class SmiStatus(str, enum.Enum):
    """What nvidia-smi on the node said about itself, as data."""

    OK = "ok"
    MISSING = "missing"  # not installed / not on PATH
    DRIVER_ERROR = "driver_error"  # exit 9: could not talk to the driver
    NO_DEVICES = "no_devices"  # exit 6: "No devices were found"
    FAILED = "failed"  # any other non-zero exit with no usable rows
    HUNG = "hung"  # the call did not answer within its bound and was killed (a wedged driver): no rows
    SKIPPED = "skipped"  # not asked: a log search reads no GPU
