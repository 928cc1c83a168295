"""What a node's NCCL job says about itself: one question to NCCL's RAS thread (``gpudiag_node.nccl_ras``).

NCCL 2.24 and later runs a RAS thread in every process, listening for a client on localhost (port 28028, or
``NCCL_RAS_ADDR``; ``src/ras/client_support.cc``, ``rasClientInitSocket``). Every process of a job on a node
binds the same port (``SO_REUSEPORT``) and any one answers for the whole job over NCCL's RAS network, so
one connection per node is enough: this module never opens a second one per process.

The exchange is NCCL's own client's (``src/ras/client.cc``, ``connectToNCCL``, ``setOutputFormat``,
``getNCCLStatus``), one line at a time, each answered before the next is sent:

* ``CLIENT PROTOCOL 2`` -> ``SERVER PROTOCOL m`` (anything else: not NCCL's RAS; nothing more is sent);
* ``TIMEOUT 1`` -> ``OK``: the RAS thread waits at most 1 s on unresponsive peers (its default is 5 s);
* ``SET FORMAT json`` -> ``OK`` (NCCL 2.28 and later) or ``ERROR: Unknown command ...`` (older: text);
* ``VERBOSE STATUS`` -> the status, until the server closes the socket.

Bounded: :data:`DEADLINE_S` for everything (connect included) and :data:`MAX_BYTES` received; what came back
travels raw (the controller parses it, ``gpudiag.collect.parse_nccl_ras``) with whether it was cut. Standard
library only, Python 3.6+; it runs in a thread beside the sampling window, so it costs the sweep no time.
"""

import _socket  # the C module (not socket.py): socket.py imports enum, selectors and more, 5 ms of a node's CPU
import os
import time

DEFAULT_PORT = 28028  # NCCL_RAS_CLIENT_PORT (src/ras/ras_internal.h)
CLIENT_PROTOCOL = 2  # NCCL_RAS_CLIENT_PROTOCOL
RAS_WAIT_S = 1  # sent as TIMEOUT: how long the RAS thread waits on other processes before it answers
DEADLINE_S = 2.0  # the whole exchange, connect included (the RAS wait above, and a second to send it)
MAX_BYTES = 256 * 1024  # received, in all
MAX_ENVIRON_BYTES = 256 * 1024  # read of one process's environment
MAX_ENVIRONS = 8  # processes whose environment is read for NCCL_RAS_ADDR
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "0.0.0.0", "::", "")


def _environ_value(pid, names, root):
    """{name: value} of ``names`` in /proc/PID/environ, or None when it cannot be read."""
    try:
        with open(os.path.join(root, str(pid), "environ"), "rb") as f:
            raw = f.read(MAX_ENVIRON_BYTES)
    except OSError:
        return None
    found = {}
    for entry in raw.split(b"\0"):
        key, _, value = entry.partition(b"=")
        name = key.decode("ascii", "replace")
        if name in names:
            found[name] = value.decode("utf-8", "replace")[:200]
    return found


def split_address(value):
    """("127.0.0.1", 28030) from NCCL_RAS_ADDR's ``host:port`` (``[::1]:port`` for IPv6), or None."""
    host, sep, port = value.strip().rpartition(":")
    if not sep or len(port) > 5 or any(c not in "0123456789" for c in port) or not 0 < int(port) < 65536:
        return None
    return host.strip("[]"), int(port)


def local_addresses(net="/proc/net"):
    """The IP addresses of this node's interfaces, read once from the kernel's own tables: IPv4 from
    ``fib_trie`` (each ``/32 host LOCAL`` entry), IPv6 from ``if_inet6``. Not a ``bind()`` test: with
    ``net.ipv4.ip_nonlocal_bind=1`` a bind succeeds for any address, so a job's NCCL_RAS_ADDR could send the
    collector (often root) to 10.1.2.3 or 8.8.8.8."""
    import ipaddress

    found = set()
    try:
        with open(os.path.join(net, "fib_trie")) as f:
            last = None
            for line in f.read(4 * 1024 * 1024).splitlines():
                text = line.strip()
                if text.startswith(("|--", "+--")):
                    last = text[3:].strip().split("/")[0]
                elif text == "/32 host LOCAL" and last:
                    try:
                        found.add(ipaddress.ip_address(last))
                    except ValueError:
                        pass
    except OSError:
        pass
    try:
        with open(os.path.join(net, "if_inet6")) as f:
            for line in f.read(1024 * 1024).splitlines():
                cells = line.split()
                if cells and len(cells[0]) == 32:
                    try:
                        found.add(ipaddress.IPv6Address(int(cells[0], 16)))
                    except ValueError:
                        pass
    except OSError:
        pass
    return found


def _is_local(host, net="/proc/net"):
    """Whether ``host`` is an IP literal (ASCII digits only: ``２２７.0.1.5`` is none) of this node's
    interfaces. A name is never resolved: nothing to rebind between a check and the connection."""
    import ipaddress

    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip in local_addresses(net)


def address(pids, root, net="/proc/net"):
    """Where to ask: (host, port, where that came from, note or None). The port (and a local host) from the
    first readable NCCL_RAS_ADDR among the GPU processes' environments, else localhost:28028; a process with
    NCCL_RAS_ENABLE=0 says RAS is off there. Never a host that is not this node's."""
    for pid in list(pids)[:MAX_ENVIRONS]:
        env = _environ_value(pid, ("NCCL_RAS_ADDR", "NCCL_RAS_ENABLE"), root)
        if not env:
            continue
        if env.get("NCCL_RAS_ENABLE", "").strip() == "0":
            return None, None, "NCCL_RAS_ENABLE=0 of pid %s" % pid, "RAS is disabled in the job"
        parsed = split_address(env.get("NCCL_RAS_ADDR", ""))
        if parsed is None:
            continue
        host, port = parsed
        where = "NCCL_RAS_ADDR of pid %s" % pid
        if host.lower() in _LOOPBACK_NAMES:
            return ("::1" if host == "::1" else "127.0.0.1"), port, where, None
        if _is_local(host, net):
            return host, port, where, None
        return "127.0.0.1", port, where, "NCCL_RAS_ADDR names %s, not an address of this node: asked localhost" \
            % host[:80]
    return "127.0.0.1", DEFAULT_PORT, "default", None


class _Conversation(object):
    """One connection, one deadline, one byte budget."""

    def __init__(self, sock, deadline):
        self.sock = sock
        self.deadline = deadline
        self.received = bytearray()
        self.closed = False
        self.cut = False
        self.timed_out = False

    def _armed(self):
        """Give the next call what is left of the deadline; False (and timed out) when nothing is."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.timed_out = True
            return False
        self.sock.settimeout(left)
        return True

    def _recv(self):
        if not self._armed():
            return False
        try:
            data = self.sock.recv(min(65536, MAX_BYTES + 1 - len(self.received)))
        except _socket.timeout:
            self.timed_out = True
            return False
        if not data:
            self.closed = True
            return False
        self.received += data
        if len(self.received) > MAX_BYTES:
            del self.received[MAX_BYTES:]
            self.cut = True
            return False
        return True

    def line(self, since):
        """The next line after offset ``since`` (without its newline), or None (closed, cut, out of time)."""
        while True:
            end = self.received.find(b"\n", since)
            if end >= 0:
                return self.received[since:end].decode("utf-8", "replace").rstrip("\r"), end + 1
            if not self._recv():
                return None, since

    def send(self, text):
        if not self._armed():
            return False
        try:
            self.sock.sendall(text.encode("ascii") + b"\n")
        except _socket.timeout:
            self.timed_out = True
            return False
        return True

    def rest(self):
        while self._recv():
            pass


def ask(host, port, deadline_s=DEADLINE_S):
    """The exchange with the RAS thread at host:port: {"sent", "answer", "format", "server_protocol",
    "closed", "truncated", "error", "elapsed_s"}; every failure is a value, never an exception."""
    started = time.monotonic()
    deadline = started + deadline_s
    out = {"host": host, "port": port, "sent": [], "answer": "", "format": None, "server_protocol": None,
           "closed": False, "truncated": False, "error": None}
    family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
    try:
        sock = _socket.socket(family, _socket.SOCK_STREAM)
    except OSError as exc:  # no IPv6 here, no sockets left
        out["error"] = "socket: %s" % (exc.strerror or exc)
        return _done(out, started)
    try:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            sock.connect((host, port))
        except _socket.timeout:
            out["error"] = "connect: no answer in %.1f s" % deadline_s
            return _done(out, started)
        except OSError as exc:
            out["error"] = "connect: %s" % (exc.strerror or exc)
            return _done(out, started)
        talk = _Conversation(sock, deadline)
        offset = _exchange(talk, out)
        if offset is not None:
            talk.rest()
            out["answer"] = talk.received[offset:].decode("utf-8", "replace")
        out["closed"], out["truncated"] = talk.closed, talk.cut
        if out["error"] is None and talk.timed_out:
            out["error"] = "the answer did not end within %.1f s" % deadline_s
        elif out["error"] is None and talk.cut:
            out["error"] = "the answer passed %d bytes and was cut" % MAX_BYTES
    except OSError as exc:
        out["error"] = "%s: %s" % (type(exc).__name__, exc)
    finally:
        sock.close()
    return _done(out, started)


def _exchange(talk, out):
    """Send the lines NCCL's client sends, each after the answer to the one before; the offset where the
    status begins, or None (the error says why)."""
    offset = 0
    steps = (("CLIENT PROTOCOL %d" % CLIENT_PROTOCOL, "SERVER PROTOCOL "), ("TIMEOUT %d" % RAS_WAIT_S, "OK"),
             ("SET FORMAT json", "OK"))
    for line, expected in steps:
        if not talk.send(line):
            out["error"] = "no time left to send %r" % line
            return None
        out["sent"].append(line)
        reply, offset = talk.line(offset)
        if reply is None:
            out["error"] = "no answer to %r%s" % (line, " (closed)" if talk.closed else "")
            return None
        if line.startswith("CLIENT"):
            if not reply.upper().startswith(expected):
                out["error"] = "not NCCL's RAS: %r answered %r" % (line, reply[:80])
                return None
            out["server_protocol"] = reply[len(expected):].strip()[:16]
        elif line.startswith("SET FORMAT"):
            out["format"] = "json" if reply.strip().upper() == "OK" else "text"  # older NCCL: "ERROR: Unknown"
    if not talk.send("VERBOSE STATUS"):
        out["error"] = "no time left to ask for the status"
        return None
    out["sent"].append("VERBOSE STATUS")
    return offset


def _done(out, started):
    out["elapsed_s"] = round(time.monotonic() - started, 3)
    return out


def collect(pids, root, deadline_s=DEADLINE_S):
    """One question per node: where (from the GPU processes' environments), then :func:`ask`."""
    host, port, where, note = address(pids, root)
    if host is None:
        return {"asked": False, "from": where, "note": note}
    found = ask(host, port, deadline_s)
    found.update({"asked": True, "from": where})
    if note:
        found["note"] = note
    return found
