"""The SSH transport (asyncssh).

asyncssh's client lives here (its only other user is the demo's server, ``gpudiag.demo.demo``: ruff's banned-api
rule keeps it so), and so does the translation of its and the OS's errors into the small
:class:`TransportError` tree (one status each). Host keys are always verified against known_hosts;
``accept_new`` records keys of hosts never seen before (never changed ones) in gpudiag's own file, like
OpenSSH's ``StrictHostKeyChecking=accept-new``: into gpudiag's own file when it is among those read, else into
the first one read (a ``--known-hosts`` file, a host's ``known_hosts:``), the one that is read again next
time, as OpenSSH writes the first ``UserKnownHostsFile``. Private keys are loaded once per sweep and passed as key
objects: passing paths makes asyncssh re-read and re-validate them for every connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import socket
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

import asyncssh

from gpudiag.model import Host, RemoteResult, UnreachableReason
from gpudiag.model.request import DEFAULT_CONNECT_TIMEOUT_S, DEFAULT_LOGIN_TIMEOUT_S
from gpudiag.model.ssh_target import HostPatternError, SshTarget, split_target
from gpudiag.transport.base import (
    STDERR_LIMIT_BYTES,
    AuthFailed,
    CommandTimeout,
    ConnectFailed,
    ConnectionLost,
    HostKeyRejected,
    KeyLoadError,
    OutOfFiles,
    RemoteCommand,
    TransportError,
)
from gpudiag.transport.cancel import honour_cancel
from gpudiag.transport.known_hosts_file import append_unless
from gpudiag.transport.pacing import Pacer, Pacing

DEFAULT_USER_KNOWN_HOSTS = "~/.ssh/known_hosts"
DEFAULT_GPUDIAG_KNOWN_HOSTS = "~/.config/gpudiag/known_hosts"
# AES-GCM asked for first: per packet, asyncssh's chacha20-poly1305 builds three ChaCha20 cipher contexts and
# a Poly1305 (crypto/chacha.py), its AES-GCM one AESGCM object; every OpenSSH server offers
# aes128-gcm@openssh.com. "^" puts these before asyncssh's defaults, so a server without GCM still gets its
# usual choice. Like any explicit setting, it takes the place of a Ciphers line in ssh_config.
ENCRYPTION_ALGS = "^aes128-gcm@openssh.com,aes256-gcm@openssh.com"
_CHUNK = 64 * 1024
# A kept connection while a command runs on it: an SSH keepalive after this many seconds without a word from the
# server, and the connection closed when this many go unanswered (a frozen node: within 3 x 3 s).
ROUND_KEEPALIVE_S = 3.0
ROUND_KEEPALIVE_COUNT_MAX = 2


_Stream = Union[asyncio.StreamReader, "asyncssh.SSHReader[bytes]"]


async def _read_bounded(stream: _Stream, limit: int) -> tuple[bytes, bool]:
    """Read to EOF, keeping at most ``limit`` bytes; True when more came and was dropped."""
    kept = bytearray()
    while True:
        chunk = await stream.read(_CHUNK)
        if not chunk:
            return bytes(kept), False
        room = limit - len(kept)
        kept += chunk[:room]
        if len(chunk) > room:
            return bytes(kept), True


async def _collect(stdout: _Stream, stderr: _Stream, limit: int,
                   stop: Callable[[], object]) -> tuple[bytes, bytes, bool]:
    """Read stdout (bounded) and stderr together. Past the bound, ``stop`` ends the flood at once: stderr
    may stay open as long as the process lives, so it is not waited for beyond a moment."""
    err_task = asyncio.ensure_future(_read_bounded(stderr, STDERR_LIMIT_BYTES))
    try:
        out, cut = await _read_bounded(stdout, limit)
        if cut:
            stop()
        try:
            err, _ = await asyncio.wait_for(asyncio.shield(err_task), 2.0 if cut else None)
        except asyncio.TimeoutError:
            err = b""
        return out, err, cut
    finally:
        err_task.cancel()


async def _read_line(stream: _Stream, pending: bytearray, limit: int) -> tuple[bytes, bool, bool]:
    """The next line of ``stream`` without its newline, and what follows it kept in ``pending``:
    (line, the stream ended, cut at ``limit``)."""
    while True:
        end = pending.find(b"\n")
        if end >= 0:
            line = bytes(pending[:end])
            del pending[:end + 1]
            return line, False, False
        if len(pending) > limit:
            return bytes(pending[:limit]), False, True
        chunk = await stream.read(_CHUNK)
        if not chunk:
            line = bytes(pending)
            pending.clear()
            return line, True, False
        pending += chunk


async def _keep_tail(stream: _Stream, into: bytearray, limit: int) -> None:
    """Read ``stream`` to its end, keeping its last ``limit`` bytes: a streaming collector's stderr must be
    read as it comes, or the channel's window fills and the collector blocks."""
    while chunk := await stream.read(_CHUNK):
        into += chunk
        del into[:-limit]


class KeyRing:
    """Private keys loaded once per sweep, by path."""

    def __init__(self) -> None:
        self._keys: dict[str, Sequence[asyncssh.SSHKeyPair]] = {}

    def load(self, path: str) -> Sequence[asyncssh.SSHKeyPair]:
        """The key pairs in ``path`` (and its ``-cert.pub``); raises :class:`KeyLoadError` in one line."""
        full = str(Path(path).expanduser())
        if full not in self._keys:
            try:
                self._keys[full] = asyncssh.load_keypairs([full])
            except OSError as exc:  # in words, not "[Errno 2] No such file or directory: 'id'"
                raise KeyLoadError(f"identity file {path}: cannot read it ({(exc.strerror or str(exc)).lower()})") \
                    from exc
            except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError) as exc:
                raise KeyLoadError(f"identity file {path}: {exc}") from exc
        return self._keys[full]


@dataclass(kw_only=True)
class SshOptions:
    """Settings of the SSH transport shared by every host of a sweep."""

    # From the start of the TCP connect to a logged-in session (the SSH banner, key exchange, authentication):
    # a dead host costs this much.
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    # From the TCP connection made to a logged-in session (the banner and key exchange too, not only
    # authentication: asyncssh starts its login timer on connection_made); the shorter one fires first,
    # and either way the host is unreachable (timeout).
    login_timeout_s: float = DEFAULT_LOGIN_TIMEOUT_S
    known_hosts: Sequence[str] = (DEFAULT_USER_KNOWN_HOSTS, DEFAULT_GPUDIAG_KNOWN_HOSTS)
    gpudiag_known_hosts: str = DEFAULT_GPUDIAG_KNOWN_HOSTS  # accept-new records here when it is read
    accept_new_host_keys: bool = False
    ssh_config: Sequence[str] | None = None  # None: asyncssh's default (~/.ssh/config)
    keep_connections: bool = False  # watch mode: one connection per host, reused by every refresh
    # keep_connections: at most this many kept at once (what the open-file limit fits: limits.kept_for); the
    # other hosts connect afresh for each command. None: every host's.
    max_kept: int | None = None
    # Kept connections only: an SSH keepalive after this many seconds without a word from the server;
    # unanswered keepalive_count_max times, the connection is closed (asyncssh's keepalive_interval).
    keepalive_interval_s: float = 15.0
    keepalive_count_max: int = 3
    encryption_algs: str = ENCRYPTION_ALGS  # asyncssh's syntax; "default": asyncssh's own order (the benchmark)
    keyring: KeyRing = field(default_factory=KeyRing)
    pacing: Pacing = field(default_factory=Pacing)  # handshakes at once per bastion and per target, and their rate


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a connection goes once the SSH config is applied: the address, port and user tried."""

    address: str
    port: int
    user: str | None
    proxy_jump: str | None = None  # the config's ProxyJump, when it (not gpudiag's jump) routes the connection

    @property
    def where(self) -> str:
        """``address:port``, an IPv6 address in brackets (``[::1]:22``)."""
        return f"[{self.address}]:{self.port}" if ":" in self.address else f"{self.address}:{self.port}"


def _first_hop(spec: str | None) -> SshTarget | None:
    """The first bastion of a ProxyJump spec (``a,b``: ``a``); None when there is none or it does not read."""
    if not spec or spec.lower() == "none":
        return None
    try:
        return split_target(spec.split(",", 1)[0].removeprefix("ssh://"))
    except HostPatternError:
        return None


def bastion_for(target: Host) -> Host:
    """The bastion of ``target`` (its ``jump``, "[user@]host[:port]"). Like OpenSSH's ProxyJump, the bastion
    is reached with the target's key and known_hosts, and the target's user unless the spec names one."""
    assert target.jump is not None
    jump = split_target(target.jump)  # checked when the inventory or -J was read; [::1]:22 too
    return Host(name=jump.host, user=jump.user or target.user, port=jump.port,
                identity_file=target.identity_file, known_hosts=target.known_hosts)


@dataclass(slots=True)
class _Collector:
    """A streaming collector kept on a kept connection between refreshes (watch)."""

    connection: asyncssh.SSHClientConnection
    process: asyncssh.SSHClientProcess[bytes]
    pending: bytearray = field(default_factory=bytearray)  # output past the last line read
    stderr: bytearray = field(default_factory=bytearray)  # its last STDERR_LIMIT_BYTES
    stderr_tail: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        self.stderr_tail = asyncio.ensure_future(_keep_tail(self.process.stderr, self.stderr, STDERR_LIMIT_BYTES))

    def close(self) -> None:
        self.process.close()
        if self.stderr_tail is not None:
            self.stderr_tail.cancel()


def resolve_local_user() -> None:
    """Name the local user in the environment, once, when nothing there does (``env -u USER``, cron, a
    container): asyncssh asks :func:`getpass.getuser` on every connection, and where no variable is set that
    is a passwd lookup, which fails once the process is out of open files ("Unknown local username").

    The user comes from the uid, as OpenSSH's ``ssh`` takes it; it is set as ``LOGNAME`` (what login(1) sets)
    rather than passed as each host's user, so an ssh_config ``User`` line still wins over it."""
    if any(os.environ.get(name) for name in ("LOGNAME", "USER", "LNAME", "USERNAME")):
        return
    try:
        import pwd

        os.environ["LOGNAME"] = pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError, OSError):  # no passwd entry for this uid: asyncssh says so per host
        pass


class SshTransport:
    """One asyncssh connection per host; bastions are connected once and every target tunnels through."""

    def __init__(self, options: SshOptions) -> None:
        self.options = options
        resolve_local_user()
        self._known: dict[tuple[str, ...], asyncssh.SSHKnownHosts] = {}
        self._write_lock = asyncio.Lock()
        # One connection per bastion for the whole sweep: every target behind it is tunnelled through it
        # (a bastion's sshd allows only ~10 unauthenticated connections at a time: MaxStartups).
        self._bastions: dict[Host, asyncio.Task[asyncssh.SSHClientConnection]] = {}
        self._open: dict[Host, asyncssh.SSHClientConnection] = {}  # keep_connections only
        self._collectors: dict[Host, _Collector] = {}  # keep_connections and a streaming command only
        self._keeping: set[Host] = set()  # the hosts granted a kept connection, under max_kept
        self._pacer = Pacer(options.pacing)
        self._gate_cache: dict[tuple[str, int | None, str | None, str | None], tuple[str, ...]] = {}

    # -- host keys -------------------------------------------------------------------------------
    def _known_files(self, host: Host) -> tuple[str, ...]:
        files = (host.known_hosts,) if host.known_hosts else tuple(self.options.known_hosts)
        return tuple(str(Path(f).expanduser()) for f in files)

    def _known_hosts(self, host: Host) -> asyncssh.SSHKnownHosts | bytes:
        files = tuple(f for f in self._known_files(host) if os.path.exists(f))
        if not files:
            return b""  # nothing trusted: every key is rejected, never silently accepted
        if files not in self._known:
            self._known[files] = asyncssh.read_known_hosts(list(files))
        return self._known[files]

    def _record_file(self, host: Host) -> Path:
        """Where accept-new records ``host``'s key: gpudiag's own file when it is read for this host, else the
        first file read (``--known-hosts``, the host's ``known_hosts:``), so that the key is read next time."""
        files = self._known_files(host)
        own = str(Path(self.options.gpudiag_known_hosts).expanduser())
        return Path(own if own in files or not files else files[0])

    @staticmethod
    def _lists(known: object, host: Host) -> bool:
        """Whether ``known`` (what a connection attempt trusted) lists a key for ``host``: then a rejected key
        is a changed one, not a new one."""
        return isinstance(known, asyncssh.SSHKnownHosts) and bool(known.match(host.target, "", host.port or 22)[0])

    async def _record_new_key(self, host: Host, tunnel: asyncssh.SSHClientConnection | None) -> str:
        """accept-new: record an unknown host's key (the caller checked that none was known when it tried).
        "recorded" (or "known": another connection or another run recorded this very key meanwhile), "other"
        when the file holds another key for it by now, "revoked" when a file read for it revokes this key
        (``@revoked``): never recorded as trusted."""
        port = host.port or 22
        async with self._pacer.handshake(self._gates(host, tunnel is not None)):
            key = await honour_cancel(asyncio.wait_for(
                asyncssh.get_server_host_key(host.target, port, tunnel=tunnel if tunnel is not None else ()),
                self.options.connect_timeout_s), discard=lambda _key: None)
        if key is None:
            return "other"
        name = host.target if port == 22 else f"[{host.target}]:{port}"
        path = self._record_file(host)
        read = [f for f in self._known_files(host) if os.path.exists(f) and f != str(path)]

        def decide(text: str) -> str | None:
            # The record file as it is now, under its lock, and the other files read for this host: a key
            # another run has just recorded is seen, and a revoked one is never trusted.
            files = [asyncssh.import_known_hosts(text)] if text.strip() else []
            files += [asyncssh.read_known_hosts(f) for f in read]
            matches = [known.match(host.target, "", port) for known in files]
            # match() drops the revoked keys of "[host]:port" when no trusted key is listed for it (it looks
            # again without the port): its own lookup for the port, where asyncssh has one.
            revoked = [getattr(known, "_match", known.match)(host.target, "", port)[2] for known in files]
            if any(k.public_data == key.public_data for keys in revoked + [m[2] for m in matches] for k in keys):
                return "revoked"
            recorded = [k for m in matches[:1] if text.strip() for k in m[0]]
            if recorded:
                return "known" if any(k.public_data == key.public_data for k in recorded) else "other"
            return None

        line = name.encode() + b" " + key.export_public_key("openssh").strip()
        async with self._write_lock:  # one thread at a time from this process; flock between processes
            verdict = await asyncio.to_thread(append_unless, path, line, decide)
            self._known.clear()  # read again: this run's copy may lack what others recorded
        return verdict or "recorded"

    # -- connections -----------------------------------------------------------------------------
    def _connect_kwargs(self, host: Host) -> dict[str, object]:
        kwargs: dict[str, object] = {
            "connect_timeout": self.options.connect_timeout_s,
            "login_timeout": self.options.login_timeout_s,
            "known_hosts": self._known_hosts(host),
            "encryption_algs": self.options.encryption_algs,
        }
        if self.options.keep_connections:
            # watch: a kept connection whose peer vanished (a reset, a dead node) is noticed within
            # interval x (count + 1) and closed, rather than when TCP gives up, hours later.
            kwargs.update(keepalive_interval=self.options.keepalive_interval_s,
                          keepalive_count_max=self.options.keepalive_count_max)
        if host.port is not None:
            kwargs["port"] = host.port
        if host.user is not None:
            kwargs["username"] = host.user
        if host.identity_file:
            kwargs["client_keys"] = self.options.keyring.load(host.identity_file)
        if self.options.ssh_config is not None:
            kwargs["config"] = list(self.options.ssh_config)
        return kwargs

    async def _bastion(self, target: Host) -> asyncssh.SSHClientConnection:
        bastion = bastion_for(target)
        task = self._bastions.get(bastion)
        if (self.options.keep_connections and task is not None and task.done()
                and (task.cancelled() or task.exception() is not None or task.result().is_closed())):
            del self._bastions[bastion]  # watch mode: a dropped or failed bastion is tried again
        if bastion not in self._bastions:
            self._bastions[bastion] = asyncio.ensure_future(self._connect(bastion, None))
        try:
            return await asyncio.shield(self._bastions[bastion])
        except TransportError as exc:
            raise type(exc)(f"via bastion {target.jump}: {exc}", reason=exc.reason) from exc

    async def _connect(self, host: Host, tunnel: asyncssh.SSHClientConnection | None,
                       retry_after_accept: bool = True) -> asyncssh.SSHClientConnection:
        kwargs: dict[str, object] = {}
        try:
            kwargs = self._connect_kwargs(host)
            if tunnel is not None:
                kwargs["tunnel"] = tunnel
            async with self._pacer.handshake(self._gates(host, tunnel is not None)):
                # Through honour_cancel: asyncssh's connect is a wait_for, which on Python < 3.12 can swallow
                # a cancellation (a stopped sweep) that lands as the connection completes.
                return await honour_cancel(asyncssh.connect(host.target, **kwargs),
                                           discard=lambda conn: conn.close())
        except asyncssh.HostKeyNotVerifiable as exc:
            rejected = exc
        except Exception as exc:
            error = self._connect_error(host, exc)
            if error is None:
                raise
            # The server closed the handshake (a FIN or a reset, as it comes): was it a key type in common?
            closed = isinstance(exc, (asyncssh.ConnectionLost, ConnectionResetError)) and (
                isinstance(error, ConnectionLost) or error.reason is UnreachableReason.NETWORK)
            if closed and self._lists(kwargs.get("known_hosts"), host):
                error = await self._no_recorded_key_type(host, tunnel, kwargs["known_hosts"]) or error
            raise error from exc
        changed = HostKeyRejected(
            f"host key of {host.target} does not match the one recorded in known_hosts - it CHANGED "
            "(a reinstalled node or a man in the middle); verify it, then remove the old entry")
        if self._lists(kwargs.get("known_hosts"), host):
            raise changed from rejected  # never suggest --accept-new-host-keys: it would not (must not) help
        if not (self.options.accept_new_host_keys and retry_after_accept):
            raise HostKeyRejected(
                f"host key of {host.target} is not trusted ({rejected}); verify it and add it to known_hosts, "
                "or run with --accept-new-host-keys to record keys of new hosts") from rejected
        try:
            recorded = await self._record_new_key(host, tunnel)
        except Exception as exc:
            error = self._connect_error(host, exc)
            if error is None:
                raise
            raise error from exc
        if recorded == "revoked":
            raise HostKeyRejected(
                f"host key of {host.target} is revoked in known_hosts (@revoked): it is never trusted, not even "
                "with --accept-new-host-keys; give the node a new host key") from rejected
        if recorded == "other":
            raise changed from rejected
        return await self._connect(host, tunnel, retry_after_accept=False)

    async def _no_recorded_key_type(self, host: Host, tunnel: asyncssh.SSHClientConnection | None,
                                    known: object) -> HostKeyRejected | None:
        """After a server that known_hosts lists closed the handshake: the rejection when it offers none of the
        key types recorded for it. asyncssh asks only for those types, and OpenSSH's sshd closes a handshake with
        no host key type in common ("Connection lost", where OpenSSH's own client says the key is not the
        recorded one); the key it presents when asked for any type says which. None when that is not why."""
        assert isinstance(known, asyncssh.SSHKnownHosts)
        port = host.port or 22
        recorded = sorted({key.algorithm.decode() for key in known.match(host.target, "", port)[0]})
        try:
            async with self._pacer.handshake(self._gates(host, tunnel is not None)):
                key = await honour_cancel(asyncio.wait_for(
                    asyncssh.get_server_host_key(host.target, port, tunnel=tunnel if tunnel is not None else ()),
                    self.options.connect_timeout_s), discard=lambda _key: None)
        except Exception:  # noqa: BLE001 - it could not be asked: the connection's own error stands
            return None
        if key is None or key.algorithm.decode() in recorded:
            return None
        return HostKeyRejected(
            f"host key of {host.target} is not the one recorded in known_hosts: it lists a {', '.join(recorded)} "
            f"key, the server offers none of that type (it presents {key.algorithm.decode()}): a reinstalled node "
            "or a man in the middle; verify it, then replace the old entry")

    def _gates(self, host: Host, tunnelled: bool) -> tuple[str, ...]:
        """What a handshake with ``host`` goes through, for :class:`~gpudiag.transport.pacing.Pacer`: the sshd it
        reaches (the address and port the SSH config resolves, so that aliases of one machine share its bound), and
        the bastion on the way: gpudiag's jump, else the config's ProxyJump (each target then opens its own
        connection to that bastion, one more startup there). Resolved once per host and user."""
        key = (host.target, host.port, host.user, host.jump if tunnelled else None)
        gates = self._gate_cache.get(key)
        if gates is None:
            endpoint = self.resolve(host)
            bastion = host.jump if tunnelled and host.jump else (
                endpoint.proxy_jump.split(",", 1)[0] if endpoint.proxy_jump else None)
            gates = (f"sshd {endpoint.where}", *((f"bastion {bastion}",) if bastion else ()))
            self._gate_cache[key] = gates
        return gates

    def resolve(self, host: Host) -> Endpoint:
        """Where a connection to ``host`` really goes, as the SSH config resolves it (HostName, Port, User,
        ProxyJump), for messages: an error names the address, port and user that were tried."""
        kwargs: dict[str, object] = {"host": host.target, "client_keys": None, "known_hosts": None}
        if host.port is not None:
            kwargs["port"] = host.port
        if host.user is not None:
            kwargs["username"] = host.user
        if self.options.ssh_config is not None:
            kwargs["config"] = list(self.options.ssh_config)
        try:
            options = asyncssh.SSHClientConnectionOptions(**kwargs)
        except Exception:  # an unreadable config fails the connection itself, which says why
            return Endpoint(address=host.target, port=host.port or 22, user=host.user)
        jump = options.tunnel if isinstance(options.tunnel, str) and host.jump is None else None
        return Endpoint(address=options.host, port=options.port, user=options.username, proxy_jump=jump)

    def _connect_error(self, host: Host, exc: Exception) -> TransportError | None:
        """asyncssh's or the OS's connect failure as this module's; None for anything else. The message names
        the endpoint the SSH config resolved (an alias's HostName and Port, its User); when the config's
        ProxyJump was in the way and the failure is one that the bastion's own connect gives, the bastion."""
        endpoint = self.resolve(host)
        where = endpoint.where
        bastion = _first_hop(endpoint.proxy_jump)
        if bastion is not None and isinstance(exc, OSError) and not isinstance(exc, TimeoutError):
            # With a ProxyJump the target is reached through a channel (a failure there: ChannelOpenError), so a
            # refused, unroutable or unresolvable connect is the bastion's; it is named, resolved in turn.
            error = self._connect_error(Host(name=bastion.host, user=bastion.user or endpoint.user,
                                             port=bastion.port), exc)
            if error is not None:
                return type(error)(f"via bastion {endpoint.proxy_jump} (ProxyJump of {host.target}): {error}",
                                   reason=error.reason)
        if isinstance(exc, asyncssh.ConfigParseError):  # a line of -F or ~/.ssh/config this host's options read
            return TransportError(f"SSH config: {exc}")
        if isinstance(exc, asyncssh.PermissionDenied):
            return AuthFailed(f"login refused for user {endpoint.user} at {where} ({exc.reason})")
        if isinstance(exc, asyncssh.ConnectionLost) and exc.reason == "Login timeout expired":
            # asyncssh's login timer starts once TCP is connected and bounds the banner, the key exchange and
            # authentication: the same silent server as the connect timeout, so the same status.
            return ConnectFailed(f"no SSH login to {where} within {self.options.login_timeout_s:g} s of "
                                 "its TCP connect (--login-timeout: SSH banner, key exchange, authentication)",
                                 reason=UnreachableReason.TIMEOUT)
        if isinstance(exc, asyncssh.DisconnectError):
            return ConnectionLost(f"SSH connection to {where} closed: {exc.reason}")
        if isinstance(exc, asyncssh.ChannelOpenError):  # the bastion could not open a tunnel to the target
            refused = "refused" in exc.reason.lower()  # OpenSSH's sshd passes on connect()'s strerror
            return ConnectFailed(f"the bastion could not reach {where}: {exc.reason}",
                                 reason=UnreachableReason.REFUSED if refused else UnreachableReason.NETWORK)
        if isinstance(exc, socket.gaierror):
            return ConnectFailed(f"cannot resolve {endpoint.address}: {exc.strerror}", reason=UnreachableReason.DNS)
        if isinstance(exc, UnicodeError):  # the IDNA codec: a label over 63 characters, or an empty one
            return ConnectFailed(f"cannot resolve {endpoint.address[:80]}: not a valid host name (each "
                                 "dot-separated part must be 1 to 63 characters)", reason=UnreachableReason.DNS)
        if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
            # asyncssh's connect_timeout bounds TCP, the banner, key exchange and authentication together.
            through = f" through bastion {endpoint.proxy_jump} (ProxyJump)" if bastion is not None else ""
            return ConnectFailed(f"no SSH login to {where}{through} within {self.options.connect_timeout_s:g} s "
                                 "(--connect-timeout: TCP connect, SSH banner, key exchange, authentication)",
                                 reason=UnreachableReason.TIMEOUT)
        if isinstance(exc, ConnectionRefusedError):
            return ConnectFailed(f"connection refused by {where} (host up, nothing listening)",
                                 reason=UnreachableReason.REFUSED)
        if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE):
            return OutOfFiles(f"this machine ran out of open files ({exc.strerror}) before connecting to {where}")
        if isinstance(exc, OSError):
            return ConnectFailed(f"cannot connect to {where}: {exc.strerror or exc}",
                                 reason=UnreachableReason.NETWORK)
        return None

    async def run(self, host: Host, command: RemoteCommand) -> RemoteResult:
        if not (self.options.keep_connections and self._may_keep(host)):
            conn = await self._connect(host, await self._bastion(host) if host.jump else None)
            try:
                return await self._exec(conn, command)
            finally:
                conn.close()
        kept = self._open.get(host)
        if kept is None or kept.is_closed():
            try:
                kept = self._open[host] = await self._connect(host, await self._bastion(host) if host.jump else None)
            except BaseException:
                self._keeping.discard(host)  # its slot goes to a host that answers
                raise
        # While a command runs, a silent server is asked every few seconds whether it is there: a node that froze,
        # or a network that drops every packet, fails this refresh in ROUND_KEEPALIVE_S x (count + 1), not at the
        # command's deadline (--timeout and its grace, 35 s); a live node answers at once, its collector busy or not.
        kept.set_keepalive(ROUND_KEEPALIVE_S, ROUND_KEEPALIVE_COUNT_MAX)
        try:
            if command.stream:
                return await self._round(host, kept, command)
            return await self._exec(kept, command)
        except ConnectionLost:
            del self._open[host]  # reconnect on the next run
            self._keeping.discard(host)
            kept.close()
            raise
        finally:
            if not kept.is_closed():  # between refreshes: the usual pace
                kept.set_keepalive(self.options.keepalive_interval_s, self.options.keepalive_count_max)

    def _may_keep(self, host: Host) -> bool:
        """Whether ``host``'s connection is kept: always without ``max_kept``; else while there is room, and
        then for as long as it stays up (which hosts are kept does not change from one refresh to the next)."""
        limit = self.options.max_kept
        if limit is None or host in self._keeping:
            return True
        if len(self._keeping) >= limit:
            return False
        self._keeping.add(host)
        return True

    async def _round(self, host: Host, conn: asyncssh.SSHClientConnection, command: RemoteCommand,
                     retry: bool = True) -> RemoteResult:
        """One round of the host's streaming collector: started (bundle and first line) when there is
        none on this connection, else asked with one more line; its answer is one line."""
        collector = self._collectors.get(host)
        if collector is not None and (collector.connection is not conn or collector.process.is_closing()):
            self._drop_collector(host)
            collector = None
        fresh = collector is None
        try:
            async with _command_limits(command.deadline_s, "the collector was stopped"):
                if collector is None:
                    process = await conn.create_process(command.command, encoding=None)
                    collector = self._collectors[host] = _Collector(connection=conn, process=process)
                    # The bundle, the first round's line, and the line that has the node end it with its channel.
                    process.stdin.write(command.stdin + command.kept_stdin)
                else:
                    collector.process.stdin.write(b"\n")
                line, ended, cut = await _read_line(collector.process.stdout, collector.pending,
                                                    command.stdout_limit_bytes)
                if cut:
                    self._drop_collector(host)
                    return RemoteResult(exit_status=None, stdout=line, stderr=bytes(collector.stderr),
                                        stdout_truncated=True)
                if not ended:
                    return RemoteResult(exit_status=0, stdout=line, stderr=b"")
                # The process ended: a collector that answers once (the shell one), one that ended its round
                # at the round's deadline (exit 124, as `timeout`), or one that failed.
                self._drop_collector(host)
                done = await collector.process.wait()
                if not line and not fresh and retry and done.exit_status == 0:
                    # It had ended in between, cleanly: its idle timeout, between two distant refreshes.
                    return await self._round(host, conn, command, retry=False)
                return RemoteResult(exit_status=done.exit_status, stdout=line, stderr=bytes(collector.stderr))
        except TransportError:
            self._drop_collector(host)  # a collector that timed out or lost its channel is not asked again
            raise

    def _drop_collector(self, host: Host) -> None:
        collector = self._collectors.pop(host, None)
        if collector is not None:
            collector.close()

    async def _exec(self, conn: asyncssh.SSHClientConnection, command: RemoteCommand) -> RemoteResult:
        async with _command_limits(command.deadline_s, "the remote process is ended by its own `timeout`"):
            proc = await conn.create_process(command.command, encoding=None)
            try:
                proc.stdin.write(command.stdin)
                if not command.ends_with_stdin:
                    proc.stdin.write_eof()  # the node reads the collector, then sees its stdin closed
                # Past the bound the channel is closed: that stops the flood, and ends the remote process group
                # (ends_with_stdin; else the remote `timeout` ends whatever is left of the process).
                out, err, cut = await _collect(proc.stdout, proc.stderr, command.stdout_limit_bytes, proc.close)
                if cut:
                    return RemoteResult(exit_status=None, stdout=out, stderr=err, stdout_truncated=True)
                done = await proc.wait()
                return RemoteResult(exit_status=done.exit_status, stdout=out, stderr=err)
            finally:
                proc.close()  # cancelled (a stopped sweep) or timed out: the channel closes, on a kept connection too

    async def close(self) -> None:
        for host in list(self._collectors):
            self._drop_collector(host)
        for conn in self._open.values():
            conn.close()
        self._open.clear()
        self._keeping.clear()
        for task in self._bastions.values():
            if task.done() and not task.cancelled() and task.exception() is None:
                task.result().close()
            elif not task.done():
                task.cancel()
        self._bastions.clear()


@contextlib.asynccontextmanager
async def _command_limits(deadline_s: float, after_timeout: str) -> AsyncIterator[None]:
    """A command's deadline, and asyncssh's channel errors as this module's, for both kinds of command."""
    try:
        async with asyncio.timeout(deadline_s) if hasattr(asyncio, "timeout") else _Deadline(deadline_s):
            yield
    except (asyncio.TimeoutError, TimeoutError) as exc:
        raise CommandTimeout(f"no answer within {deadline_s:.0f} s; {after_timeout}") from exc
    except asyncssh.ChannelOpenError as exc:
        raise ConnectionLost(f"the node refused a session: {exc.reason}") from exc
    except (asyncssh.DisconnectError, asyncssh.ConnectionLost, ConnectionError) as exc:
        raise ConnectionLost(f"the connection dropped during the command: {exc}") from exc


class _Deadline:
    """``asyncio.timeout`` for Python 3.10."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._handle: asyncio.TimerHandle | None = None
        self._fired = False

    async def __aenter__(self) -> None:
        task = asyncio.current_task()
        assert task is not None

        def fire() -> None:
            self._fired = True
            task.cancel()

        self._handle = asyncio.get_running_loop().call_later(self.seconds, fire)

    async def __aexit__(self, exc_type: object, exc: object, tb: object) -> bool:
        assert self._handle is not None
        self._handle.cancel()
        if self._fired and exc_type is asyncio.CancelledError:
            raise asyncio.TimeoutError
        return False
