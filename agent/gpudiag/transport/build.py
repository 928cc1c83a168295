"""The one place that builds a transport: the SSH options a request asks for (:func:`ssh_options`, from a
:class:`~gpudiag.model.request.SshRequest`), and the transport a sweep uses (:func:`open_transport`: SSH, and
this machine for ``localhost``). The run, the ``--workers`` processes and the exporter all build theirs here; a
test hands the run a fake one through :func:`override_transport`."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpudiag.model.request import SshRequest
from gpudiag.transport.base import RemoteCommand, Transport

if TYPE_CHECKING:
    from gpudiag.model import Host, RemoteResult
    from gpudiag.model.choices import Via
    from gpudiag.transport.pacing import Pacing
    from gpudiag.transport.ssh import SshOptions


class SshConfigError(ValueError):
    """An SSH option that cannot be used as given (a missing config file); the message is one line."""


def shared_by(request: SshRequest, workers: int) -> SshRequest:
    """One of ``workers`` processes' request: the pacing bounds hold for all of them together."""
    shared = pacing(request).shared_by(workers)
    return dataclasses.replace(request, max_startups=shared.max_startups, connect_rate_per_s=shared.rate_per_s,
                               max_handshakes=shared.max_handshakes)


def pacing(request: SshRequest) -> Pacing:
    """The handshake bounds ``request`` asks for; a bad value raises ``PacingError`` (one line)."""
    from gpudiag.transport.pacing import DEFAULT_MAX_HANDSHAKES, DEFAULT_MAX_STARTUPS, Pacing

    return Pacing(max_startups=DEFAULT_MAX_STARTUPS if request.max_startups is None else request.max_startups,
                  rate_per_s=request.connect_rate_per_s,
                  max_handshakes=DEFAULT_MAX_HANDSHAKES if request.max_handshakes is None else request.max_handshakes)


def ssh_options(request: SshRequest, hosts: Sequence[Host], *, keep_connections: bool = False) -> SshOptions:
    """The SSH transport's options for ``request``, with every host's identity file loaded: a file that is
    missing or cannot be read raises here (one line), before any connection."""
    from gpudiag.transport.ssh import SshOptions

    options = SshOptions(connect_timeout_s=request.connect_timeout_s, login_timeout_s=request.login_timeout_s,
                         accept_new_host_keys=request.accept_new_host_keys, keep_connections=keep_connections,
                         pacing=pacing(request))
    if request.known_hosts:
        if Path(request.known_hosts).expanduser().is_dir():  # else each host: "cannot connect: Is a directory"
            raise SshConfigError(f"--known-hosts {request.known_hosts}: a folder, not a known_hosts file")
        options.known_hosts = (request.known_hosts,)
    if request.ssh_config is not None:
        if not request.ssh_config.is_file():
            raise SshConfigError(f"{request.ssh_config}: no such SSH config file")
        options.ssh_config = [str(request.ssh_config)]
    for host in hosts:
        if host.identity_file:
            options.keyring.load(host.identity_file)
    return options



@dataclass(frozen=True, slots=True)
class TransportKind:
    """One way to reach a host: whether it ``serves`` the host, and how to ``open`` it from the SSH options
    (a transport that needs none ignores them). Imported only when a sweep opens it."""

    name: str
    serves: Callable[[Host], bool]
    open: Callable[[SshOptions], Transport]


def _local(ssh: SshOptions) -> Transport:
    from gpudiag.transport.local import LocalTransport

    return LocalTransport()


def _ssh(ssh: SshOptions) -> Transport:
    from gpudiag.transport.ssh import SshTransport

    return SshTransport(ssh)


# The transports, asked in order: the first that serves a host runs its commands. A new transport is one module
# (with the Transport protocol of transport/base.py) and one entry here.
TRANSPORTS: tuple[TransportKind, ...] = (
    TransportKind(name="local", serves=lambda host: host.is_local, open=_local),  # localhost: no SSH
    TransportKind(name="ssh", serves=lambda host: True, open=_ssh),
)


class RoutingTransport:
    """Each host's commands go to the first of ``kinds`` that serves it; a transport is opened when a host first
    needs it, and every opened one is closed at the end."""

    def __init__(self, ssh: SshOptions, kinds: Sequence[TransportKind] = TRANSPORTS) -> None:
        self.ssh, self.kinds = ssh, tuple(kinds)
        self._opened: dict[str, Transport] = {}

    def _for(self, host: Host) -> Transport:
        kind = next(k for k in self.kinds if k.serves(host))
        if kind.name not in self._opened:
            self._opened[kind.name] = kind.open(self.ssh)
        return self._opened[kind.name]

    async def run(self, host: Host, command: RemoteCommand) -> RemoteResult:
        """Run ``command`` on ``host`` through the transport that reaches it."""
        return await self._for(host).run(host, command)

    async def close(self) -> None:
        """Close every transport opened."""
        for transport in self._opened.values():
            await transport.close()


TransportFactory = Callable[["SshOptions"], Transport]

# The test seam: while override_transport() is open, open_transport() builds with the innermost factory here.
_overrides: list[TransportFactory] = []


@contextlib.contextmanager
def override_transport(factory: TransportFactory) -> Iterator[None]:
    """A test seam, for tests only: inside the ``with``, :func:`open_transport` returns ``factory(ssh)`` (the SSH
    options the command built) instead of SSH and the local transport, so a test runs a whole command (typer's
    ``CliRunner``) against a fake transport, with no network and no process. Not seen by the ``--workers``
    processes (each builds its own) nor by ``--demo`` (its cluster is real SSH)."""
    _overrides.append(factory)
    try:
        yield
    finally:
        _overrides.remove(factory)


def open_transport(ssh: SshOptions) -> Transport:
    """The transport a sweep uses: SSH with ``ssh``, and this machine for ``localhost``
    (or, inside :func:`override_transport`, the test's)."""
    if _overrides:
        return _overrides[-1](ssh)
    return RoutingTransport(ssh)


def raise_open_file_limit(concurrency: int) -> None:
    """Each host in flight holds a socket or two: raise the soft limit toward the hard one if needed."""
    try:
        import resource
    except ImportError:  # not on this platform
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = concurrency * 4 + 64
    if soft != resource.RLIM_INFINITY and soft < wanted:
        new = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))


def open_via(via: Via, request: SshRequest, hosts: Sequence[Host], ssh: SshOptions, *,
             clush_topology: Path | None = None, slurm_job: str | None = None,
             slurm_states: Mapping[str, str] | None = None,
             slurm_partitions: Mapping[str, str] | None = None) -> Transport:
    """The transport of ``--via``: ClusterShell's (flat, or its tree with ``clush_topology`` or its own
    topology.conf), or one srun step (``slurm_job``: overlap that job's step; ``slurm_states``: the nodes'
    Slurm states, whose unusable ones go over SSH with ``ssh``), or this module's usual one. A setting that
    cannot work raises ``ValueError`` (one line) before any connection."""
    from gpudiag.model.choices import Via

    if via is Via.CLUSH:
        from gpudiag.transport.clush import ClushOptions, ClushTransport, check_topology, ssh_options_for

        if clush_topology is not None:
            check_topology(clush_topology)
        args, user = ssh_options_for(hosts, known_hosts=request.known_hosts, ssh_config=request.ssh_config,
                                     accept_new=request.accept_new_host_keys)
        return ClushTransport(ClushOptions(ssh_options=args, user=user, topology=clush_topology,
                                           connect_timeout_s=request.connect_timeout_s))
    if via is Via.SLURM:
        from gpudiag.transport.srun import SrunOptions, SrunTransport

        return SrunTransport(SrunOptions(job=slurm_job, states=dict(slurm_states or {}),
                                         partitions=dict(slurm_partitions or {})), fallback=open_transport(ssh))
    return open_transport(ssh)
