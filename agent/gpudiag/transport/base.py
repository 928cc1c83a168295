"""What every transport shares: the :class:`Transport` protocol (one ``run`` method, and ``close``), the command it
runs (:class:`RemoteCommand`), and the small :class:`TransportError` tree (one host status each) that is all a
transport may raise for a host. Standard library only: a new transport is one module beside this one
(``local.py``, ``ssh.py``) plus its entry in :mod:`gpudiag.transport.build`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from gpudiag.model import Host, HostStatus, RemoteResult, UnreachableReason
from gpudiag.model.request import DEFAULT_DEADLINE_S

STDERR_LIMIT_BYTES = 64 * 1024  # what is kept of a remote command's stderr


class TransportError(Exception):
    """A host could not be asked; ``status`` says how it failed, ``str()`` says why in one sentence;
    ``reason``, for an unreachable host, why in one stable word."""

    status = HostStatus.ERROR

    def __init__(self, message: str, *, reason: UnreachableReason | None = None) -> None:
        super().__init__(message)
        self.reason = reason


class ConnectFailed(TransportError):
    status = HostStatus.UNREACHABLE


class OutOfFiles(TransportError):
    """This machine (the controller), not the host, ran out of open files (EMFILE/ENFILE): the host was not
    tried. The runner tries it again once another host has let its connection go."""


class AuthFailed(TransportError):
    status = HostStatus.AUTH_FAILED


class HostKeyRejected(TransportError):
    status = HostStatus.HOST_KEY_REJECTED


class CommandTimeout(TransportError):
    status = HostStatus.TIMEOUT


class ConnectionLost(TransportError):
    status = HostStatus.ERROR


class KeyLoadError(ValueError):
    """An identity file could not be read (a configuration error: reported before any connection)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteCommand:
    """One command for one node: the shell command line (already quoted), its stdin, its limits."""

    command: str
    stdin: bytes = b""
    deadline_s: float = DEFAULT_DEADLINE_S  # client-side; the command line carries its own remote `timeout`
    stdout_limit_bytes: int = 4 * 1024 * 1024
    # A collector that answers one round per line written to it, one document per line (gpudiag watch):
    # with kept connections, the process is kept too. Run once, it answers once, like any other command.
    stream: bool = False
    # The node ends the command when its stdin ends (gpudiag.collect.remote): stdin stays open until the command ends,
    # so that closing the channel (a cancel, a cut) ends the remote process at once.
    ends_with_stdin: bool = False
    # A stream kept between rounds: written after ``stdin`` when the process is started; the node then ends the
    # process as soon as the channel closes, mid-round too (a run-once transport does not write it).
    kept_stdin: bytes = b""


class Transport(Protocol):
    """Runs a command on a host and returns what it printed; failures raise :class:`TransportError`."""

    async def run(self, host: Host, command: RemoteCommand) -> RemoteResult: ...

    async def close(self) -> None: ...
