"""One webhook POST under one deadline, reading only the answer's status line.

urllib's ``urlopen(timeout=10)`` bounds each socket operation, not the request, and reads what the receiver
sends in full: a receiver that answered 200 with an endless body took the controller to 19 GB, one that sent a
byte every 2 s never let it finish, one with more than 100 headers raised ``HTTPException`` (issue 23 #1). Here
the request is written by hand (``Connection: close``), every step (connect, TLS, CONNECT through a proxy, send,
the status line) gets what is left of one deadline, and at most :data:`MAX_ANSWER_BYTES` of the answer are read:
the status line is all a notification needs. The standard library only; ``HTTP(S)_PROXY`` and ``NO_PROXY`` are
honoured as urllib honours them (``urllib.request.getproxies``, ``proxy_bypass``).
"""

from __future__ import annotations

import base64
import queue
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

MAX_ANSWER_BYTES = 4096  # the status line (and a proxy's CONNECT answer) must arrive within this many bytes

Resolver = Callable[[str, int, int, int], object]  # socket.getaddrinfo's (host, port, family, type)


class WebhookError(Exception):
    """The POST did not get a status line; the message is one line (no URL: the caller names the target)."""


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def left(self) -> float:
        """Seconds left, or :class:`WebhookError` once none are."""
        left = self._end - time.monotonic()
        if left <= 0:
            raise WebhookError(f"no answer within {self.seconds:g} s")
        return left


def post_status(url: str, body: bytes, timeout_s: float, *,
                headers: tuple[tuple[str, str], ...] = (("Content-Type", "application/json"),
                                                        ("User-Agent", "gpudiag")),
                resolve: Resolver = socket.getaddrinfo) -> tuple[int, str]:
    """POST ``body`` to ``url`` (http or https); the answer's (status, reason), within ``timeout_s`` in all,
    the name's lookup (``resolve``) included. Raises :class:`WebhookError` (one line) for anything else: no
    connection, a reset, a deadline passed, an answer that is not HTTP."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookError(f"not an http(s) URL: {parts.scheme}://")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise WebhookError(str(exc)) from None
    deadline = _Deadline(timeout_s)
    host_header = _host_header(parts.hostname, port, parts.scheme)
    proxy = _proxy_for(parts.scheme, parts.hostname)
    try:
        sock = _connect(proxy or (parts.hostname, port), deadline, resolve)
        try:
            if proxy is not None and parts.scheme == "https":
                _tunnel(sock, f"{_bracketed(parts.hostname)}:{port}", deadline)
            if parts.scheme == "https":
                sock.settimeout(deadline.left())
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=parts.hostname)
            target = url.split("#", 1)[0] if proxy is not None and parts.scheme == "http" else (
                (parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
            lines = [f"POST {target} HTTP/1.1", f"Host: {host_header}", *(f"{k}: {v}" for k, v in headers),
                     f"Content-Length: {len(body)}", "Connection: close"]
            if parts.username is not None:
                userinfo = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
                lines.append(f"Authorization: Basic {base64.b64encode(userinfo.encode()).decode()}")
            sock.settimeout(deadline.left())
            sock.sendall("\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + body)  # the timeout bounds all of it
            return _status_line(_read_line(sock, deadline))
        finally:
            sock.close()
    except TimeoutError:
        raise WebhookError(f"no answer within {timeout_s:g} s") from None
    except ssl.SSLError as exc:
        raise WebhookError(f"TLS: {exc.reason or exc}") from None
    except ConnectionResetError:
        raise WebhookError("the receiver reset the connection") from None
    except OSError as exc:
        raise WebhookError(exc.strerror or str(exc) or type(exc).__name__) from None


def _connect(address: tuple[str, int], deadline: _Deadline, resolve: Resolver) -> socket.socket:
    """A TCP connection to the first of the name's addresses that takes one, all within the deadline
    (``socket.create_connection`` resolves without a timeout and gives each address the whole timeout)."""
    failure: OSError = OSError(f"no address for {address[0]}")
    for family, kind, proto, _, where in _addresses(address, deadline, resolve):
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(deadline.left())
            sock.connect(where)
            return sock
        except TimeoutError:
            sock.close()
            raise
        except OSError as exc:  # refused or unreachable: the next address
            sock.close()
            failure = exc
        except BaseException:
            sock.close()
            raise
    raise failure


def _addresses(address: tuple[str, int], deadline: _Deadline, resolve: Resolver) -> list[Any]:
    """``getaddrinfo`` within what is left of the deadline: the lookup runs in a thread of its own (a resolver
    that does not answer holds it, never the run; it is a daemon, so it never holds the exit either)."""
    answer: queue.Queue[object] = queue.Queue(maxsize=1)

    def lookup() -> None:
        try:
            answer.put(resolve(address[0], address[1], 0, socket.SOCK_STREAM))
        except OSError as exc:
            answer.put(exc)

    threading.Thread(target=lookup, name="gpudiag-webhook-resolve", daemon=True).start()
    try:
        found = answer.get(timeout=deadline.left())
    except queue.Empty:
        raise WebhookError(f"cannot resolve {address[0]} within {deadline.seconds:g} s") from None
    if isinstance(found, socket.gaierror):
        raise WebhookError(f"cannot resolve {address[0]}: {found.strerror}")
    if isinstance(found, OSError):
        raise found
    assert isinstance(found, list), found
    return found


def _tunnel(sock: socket.socket, authority: str, deadline: _Deadline) -> None:
    """Through an HTTP proxy to an https receiver: ``CONNECT``, and its answer's headers read to the blank line."""
    sock.settimeout(deadline.left())
    sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode("latin-1"))
    status, reason = _status_line(_read_line(sock, deadline, until=b"\r\n\r\n"))
    if status != 200:
        raise WebhookError(f"proxy refused CONNECT: HTTP {status} {reason}".rstrip())


def _read_line(sock: socket.socket, deadline: _Deadline, until: bytes = b"\n") -> bytes:
    """Bytes up to ``until``, one receive at a time, each within what is left of the deadline; at most
    :data:`MAX_ANSWER_BYTES` (one byte at a time where ``until`` is a header block's end, so that nothing of a
    tunnelled TLS stream is read)."""
    got = b""
    step = 1 if until == b"\r\n\r\n" else MAX_ANSWER_BYTES
    while until not in got:
        if len(got) >= MAX_ANSWER_BYTES:
            raise WebhookError(f"no HTTP status line in the first {MAX_ANSWER_BYTES} bytes of the answer")
        sock.settimeout(deadline.left())
        chunk = sock.recv(min(step, MAX_ANSWER_BYTES - len(got)))
        if not chunk:
            if not got:
                raise WebhookError("the receiver closed the connection without an answer")
            break
        got += chunk
    return got.split(b"\n", 1)[0]


def _status_line(line: bytes) -> tuple[int, str]:
    """``HTTP/1.1 503 Service Unavailable`` → (503, "Service Unavailable")."""
    version, _, rest = line.decode("latin-1").strip().partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/") or len(code) != 3 or not code.isdigit():
        shown = line[:60].decode("latin-1").encode("unicode_escape").decode()
        raise WebhookError(f"not an HTTP answer: {shown!r}")
    return int(code), reason.strip()


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _host_header(host: str, port: int, scheme: str) -> str:
    default = 443 if scheme == "https" else 80
    return _bracketed(host) if port == default else f"{_bracketed(host)}:{port}"


def _proxy_for(scheme: str, host: str) -> tuple[str, int] | None:
    """The HTTP proxy urllib would use for ``scheme``://``host`` (``HTTPS_PROXY`` …), unless ``NO_PROXY`` says
    not; only ``http://`` proxies."""
    proxy = urllib.request.getproxies().get(scheme)
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    parts = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    if parts.scheme != "http" or not parts.hostname:
        raise WebhookError(f"only http:// proxies are supported, not {parts.scheme}://")
    return parts.hostname, parts.port or 80
