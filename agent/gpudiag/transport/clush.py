"""``--via clush``: the collector runs on every host through ClusterShell's ``Task``, flat (its fan-out of
``ssh``) or through its gateway tree (``topology.conf``: root -> gateways -> nodes; the gateways are started by
ClusterShell itself, ``python -m ClusterShell.Gateway`` over ssh, as for ``clush``). ClusterShell is imported here
and in :mod:`gpudiag.sources.targets` only (ruff's banned-api).

It is a :class:`~gpudiag.transport.base.Transport` like the others: the runner asks it one host at a time and
judges each document exactly as a direct sweep's. Underneath, the calls that arrive together with the same
command are gathered into one batch, and a batch is ONE ``task.shell`` over all its nodes, so that the tree
carries one command and one copy of the bundle to each gateway, not one per node (``--via clush`` sweeps all
the hosts in one window: :func:`gpudiag.transport.build.open_via`).

How the bundle reaches the node through the tree: the collector travels on stdin (:mod:`gpudiag.collect.remote`).
In ClusterShell (1.9+, read in cea-hpc/clustershell lib/ClusterShell/Worker/Tree.py and Propagation.py),
``TreeWorker.write(buf)`` sends ``buf`` to each gateway in a ``ControlMessage`` of action ``write``
(``PropagationChannel.write``, targets = that gateway's nodes); the gateway (``Gateway.py``,
``GatewayChannel.recv_ctl``, action ``write``) hands it to its own ``TreeWorker.write``, which writes it to the
stdin of its ``ssh`` to each node; ``set_write_eof`` travels the same way as action ``eof``. A write made before
the worker started is queued on its port and replayed (``TreeWorker._IOPortHandler``). So stdin reaches the
node unchanged, and the node side needs nothing new. The one-shot collector ends when its stdin ends, so this
transport never sends EOF: the node's collector reads exactly the bundle's bytes and runs; an abort closes the
ssh, which closes the node's stdin and ends its collector.

Statuses stay per host: a node's ``ssh`` that exits 255 is read from its stderr
(:func:`gpudiag.transport.ssh_client_errors.ssh_failure`: host key rejected at the last hop, refused, timed
out...); a gateway that cannot be reached (ClusterShell marks it unreachable and reroutes its nodes to another
gateway of their group, when there is one) leaves each node behind it a row that names the gateway and what its
``ssh`` said. Host keys: ``StrictHostKeyChecking=yes`` (``accept-new`` with ``--accept-new-host-keys``) and
``BatchMode=yes`` at every hop: ClusterShell hands the root's ``ssh_options`` to the gateways (the ``taskinfo``
of the ``shell`` control message), so the gateways' ssh checks the nodes' keys the same way, against the
gateways' own known_hosts (or the ``--known-hosts`` file, which must then be at that path on each gateway).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shlex
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ClusterShell.Event import EventHandler
from ClusterShell.NodeSet import NodeSet
from ClusterShell.Propagation import RouteResolvingError
from ClusterShell.Task import Task, task_self
from ClusterShell.Topology import TopologyError

from gpudiag.model import Host, RemoteResult
from gpudiag.transport.base import (
    STDERR_LIMIT_BYTES,
    CommandTimeout,
    ConnectFailed,
    ConnectionLost,
    RemoteCommand,
    TransportError,
)
from gpudiag.transport.gather import Batch, Gatherer
from gpudiag.transport.ssh_client_errors import SSH_FAILED_EXIT, ssh_failure

# A name ClusterShell can route and ssh takes as a host: a NodeSet would split "a,b" or expand "n[1-2]", and
# ssh would read "-oProxyCommand=..." as an option. Anything else is that host's error, never a command.
GATEWAY_LINES = 20  # what is kept of a gateway's own stderr (its ssh's, ClusterShell's): the first say why
_ROUTABLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")


class ClushConfigError(ValueError):
    """A ``--via clush`` setting that cannot be used (a topology that does not parse); one line."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClushOptions:
    """How ClusterShell reaches the hosts: its ssh options (the same at every hop), its fan-out, its topology."""

    ssh_options: tuple[str, ...]  # ssh arguments, before ClusterShell's own -oBatchMode=yes
    connect_timeout_s: float = 10.0
    fanout: int = 64  # ClusterShell's default: ssh processes at once, at the root and at each gateway
    topology: Path | None = None  # None: ClusterShell's own topology.conf where there is one, else flat
    user: str | None = None


def ssh_options_for(hosts: Sequence[Host], *, known_hosts: str | None, ssh_config: Path | None,
                    accept_new: bool) -> tuple[tuple[str, ...], str | None]:
    """The ssh arguments every hop uses, and the user: what the hosts share (a port, a key, a known_hosts file),
    host keys checked. ClusterShell runs one ssh command line for all its nodes, so settings that differ from
    host to host belong in an ssh config (``--ssh-config``), which names them per host: :class:`ClushConfigError`."""
    def shared(attribute: str) -> Any:
        values = {getattr(h, attribute) for h in hosts}
        if len(values) > 1:
            raise ClushConfigError(f"--via clush: the hosts' {attribute.replace('_', ' ')} differ; ClusterShell "
                                   "runs one ssh command for all: set them per host in an ssh config (--ssh-config)")
        return next(iter(values), None)

    if any(h.jump for h in hosts):
        raise ClushConfigError("--via clush: a jump host is ClusterShell's gateway; name it in topology.conf")
    # Keepalives bound a hop that stops answering (a gateway cut off mid-run): its ssh ends after 45 s of
    # silence, and ClusterShell then settles the nodes behind it, instead of the run waiting on a dead channel.
    args = ["-oStrictHostKeyChecking=" + ("accept-new" if accept_new else "yes"), "-oServerAliveInterval=15",
            "-oServerAliveCountMax=3"]
    if ssh_config is not None:
        args[:0] = ["-F", str(ssh_config)]
    if (port := shared("port")) is not None:
        args += ["-p", str(port)]
    if (key := shared("identity_file")) is not None:
        args += ["-i", str(key), "-oIdentitiesOnly=yes"]
    if (file := known_hosts or shared("known_hosts")) is not None:
        args += [f"-oUserKnownHostsFile={file}", "-oGlobalKnownHostsFile=/dev/null"]
    return tuple(args), shared("user")


@dataclass(slots=True)
class _Node:
    """What one node sent back so far (filled on ClusterShell's thread, settled on the event loop's)."""

    stdout: list[bytes] = field(default_factory=list)
    stdout_bytes: int = 0
    truncated: bool = False
    stderr: list[bytes] = field(default_factory=list)
    stderr_bytes: int = 0


class _Run(EventHandler):  # type: ignore[misc]  # ClusterShell has no type hints
    """One ``task.shell`` over a batch's nodes, on a thread of its own (a ClusterShell Task is bound to its
    thread and runs its own event loop); each node's outcome settles its host's future on the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, batch: Batch, options: ClushOptions) -> None:
        super().__init__()
        self.loop, self.batch, self.options, self.command = loop, batch, options, batch.command
        self.nodes = {name: _Node() for name in batch.pending()}
        self.gateway_said: dict[str, list[str]] = {}  # a gateway's own stderr (its ssh failing, ClusterShell's)
        self.task: Task | None = None
        self._first_hop: dict[str, str] | None = None  # node -> its first gateway, read once from the router
        # Outcomes go to the event loop in bunches: one wake-up of the loop for all that came meanwhile, not one
        # per node (call_soon_threadsafe writes to the loop's self-pipe each time: 2 syscalls and a loop turn).
        self._outbox: list[tuple[str, RemoteResult | TransportError]] = []
        self._outbox_lock = threading.Lock()
        self._settled: set[str] = set()  # nodes given an outcome (the first stays): ClusterShell's thread only
        self.thread = threading.Thread(target=self.run, name="gpudiag-clush", daemon=True)

    # ClusterShell's thread ------------------------------------------------------------------------------------
    def ev_read(self, worker: Any, node: str, sname: str, msg: bytes) -> None:
        """One line from a node (or a gateway's own stderr, under the gateway's name)."""
        entry = self.nodes.get(node)
        if entry is None:
            said = self.gateway_said.setdefault(node, [])
            if len(said) < GATEWAY_LINES:
                said.append(msg.decode("utf-8", "replace")[:300])
            return
        if sname == "stdout":
            if entry.stdout_bytes + len(msg) + 1 > self.command.stdout_limit_bytes:
                entry.truncated = True
            elif not entry.truncated:
                entry.stdout.append(msg)
                entry.stdout_bytes += len(msg) + 1
        elif entry.stderr_bytes < STDERR_LIMIT_BYTES:
            entry.stderr.append(msg)
            entry.stderr_bytes += len(msg) + 1

    def ev_hup(self, worker: Any, node: str, rc: int) -> None:
        """A node's command ended with exit status ``rc``."""
        if node in self.nodes:
            self._settle(node, self._outcome(node, rc))

    def _ev_routing(self, worker: Any, arg: dict[str, Any]) -> None:
        """A gateway could not be reached: ClusterShell marked it unreachable and is about to send its nodes
        through another gateway of their group. Nodes that have no other are taken out of the relaunch here
        (else ClusterShell raises RouteResolvingError out of the whole run, every node's answer lost:
        Propagation.PropagationTreeRouter.next_hop, reached from TreeWorker._relaunch), and each gets a row
        that names the gateway and what its ssh said."""
        if arg.get("event") != "reroute":
            return
        targets, gateway = arg["targets"], str(arg["gateway"])
        stranded = []
        for node in targets:
            try:
                worker.router.next_hop(node)
            except RouteResolvingError:
                stranded.append(node)
        if stranded:
            targets.difference_update(NodeSet.fromlist(stranded))
            for node in stranded:
                self._settle(node, self._gateway_failure(gateway))

    def _gateway_failure(self, gateway: str) -> TransportError:
        said = self.gateway_said.get(gateway, [])
        if not said:
            return ConnectFailed(f"gateway {gateway} not reached (ClusterShell's channel to it ended)")
        return ssh_failure(said, where=f"gateway {gateway} not reached: ")

    def _hop(self, node: str) -> str:
        """``through gateway gw1: `` for a node behind a gateway (the first hop of its route), else ``""``."""
        gateway = self._first_hops().get(node)
        return f"through gateway {gateway}: " if gateway else ""

    def _first_hops(self) -> dict[str, str]:
        """Each node's first gateway, from the router's table (one walk of its networks, where a test of
        ``node in network`` for each node and route parses the name into a NodeSet every time: most of this
        thread's CPU per node); empty while there is no router (flat, or not yet started)."""
        if self._first_hop is None:
            table = getattr(getattr(self.task, "router", None), "table", None)
            if table is None:
                return {}
            hops: dict[str, str] = {}
            for network, gateways in table:
                label = str(gateways)
                for name in network:
                    if name in self.nodes:
                        hops.setdefault(name, label)
            self._first_hop = hops
        return self._first_hop

    def _outcome(self, node: str, rc: int) -> RemoteResult | TransportError:
        entry = self.nodes[node]
        if rc == SSH_FAILED_EXIT and not entry.stdout:  # ssh's own failure (the collector always prints)
            return ssh_failure([line.decode("utf-8", "replace") for line in entry.stderr], where=self._hop(node))
        hop = self._hop(node)
        return RemoteResult(exit_status=rc, stdout=b"\n".join(entry.stdout) + (b"\n" if entry.stdout else b""),
                            stderr=b"\n".join(entry.stderr)[:STDERR_LIMIT_BYTES], stdout_truncated=entry.truncated,
                            via=f"clush via {hop[len('through gateway '):-2]}" if hop else "clush")

    def run(self) -> None:
        """The thread's body: one Task, one shell over all the nodes, the bundle written once, run to its end."""
        task = self.task = task_self()
        timed_out: set[str] = set()
        failure: TransportError | None = None
        try:
            task.set_default("stdout_msgtree", False)  # this handler keeps what it needs, bounded
            task.set_default("stderr_msgtree", False)
            task.set_info("fanout", self.options.fanout)
            task.set_info("connect_timeout", max(1, round(self.options.connect_timeout_s)))
            task.set_info("ssh_options", " ".join(shlex.quote(a) for a in self.options.ssh_options))
            if self.options.user:
                task.set_info("ssh_user", self.options.user)
            if self.options.topology is not None:
                task.load_topology(str(self.options.topology))
            worker = task.shell(self.command.command, nodes=NodeSet.fromlist(list(self.nodes)), handler=self,
                                stderr=True, timeout=self.command.deadline_s)
            worker.write(self.command.stdin)  # never set_write_eof: see the module's docstring
            task.run()
            timed_out = set(worker.iter_keys_timeout())
        except Exception as exc:  # noqa: BLE001 - ClusterShell failed as a whole: every node's row says so
            failure = ConnectionLost(f"ClusterShell: {exc}")
        finally:
            with contextlib.suppress(Exception):
                task.abort(kill=True)  # unbinds the Task from this thread (its gateways' channels closed)
        for node in self.nodes:  # settled twice is settled once: the first outcome stays
            if node in timed_out:
                self._settle(node, CommandTimeout(f"{self._hop(node)}no answer within "
                                                  f"{self.command.deadline_s:.0f} s; ClusterShell ended the command"))
            if node not in self._settled:
                self._settle(node, failure or ConnectionLost(
                    f"{self._hop(node)}no answer: the command ended without a word from the node"))

    def _settle(self, node: str, outcome: RemoteResult | TransportError) -> None:
        """Give ``node`` its outcome on the event loop (its first one; later ones are dropped here)."""
        if node in self._settled:
            return
        self._settled.add(node)
        with self._outbox_lock:
            self._outbox.append((node, outcome))
            wake = len(self._outbox) == 1  # else a wake-up is already on its way and takes this one too
        if wake:
            self.loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:
        """The event loop's side: settle every outcome that came since the last wake-up."""
        with self._outbox_lock:
            outcomes, self._outbox = self._outbox, []
        for node, outcome in outcomes:
            self.batch.settle(node, outcome)

    def abort(self) -> None:
        """End the run (the sweep was stopped): ClusterShell closes every ssh, which ends each node's collector."""
        if self.task is not None and self.thread.is_alive():
            with contextlib.suppress(Exception):
                self.task.abort()


class ClushTransport:
    """The Transport of ``--via clush``: each host's ``run`` joins the batch of its command (see the module)."""

    def __init__(self, options: ClushOptions) -> None:
        self.options = options
        self._gatherer = Gatherer(self._launch)
        self._runs: list[_Run] = []

    async def run(self, host: Host, command: RemoteCommand) -> RemoteResult:
        """Run ``command`` on ``host`` with every other host that asks for it now; failures raise."""
        if not _ROUTABLE.match(host.name):
            raise ConnectFailed(f"{host.name!r} is not a host name ClusterShell can route (letters, digits, . _ -)")
        return await self._gatherer.run(host, command)

    def _launch(self, batch: Batch) -> None:
        run = _Run(asyncio.get_running_loop(), batch, self.options)
        self._runs.append(run)
        run.thread.start()

    async def close(self) -> None:
        """Abort the runs still going and wait for their threads."""
        for run in self._runs:
            run.abort()
        loop = asyncio.get_running_loop()
        for run in self._runs:
            await loop.run_in_executor(None, run.thread.join, 10.0)
        self._runs.clear()


def check_topology(path: Path) -> None:
    """Raise :class:`ClushConfigError` (one line) when ``path`` is not a topology ClusterShell can read from
    this machine (before any connection)."""
    from ClusterShell.Topology import TopologyParser

    if not path.is_file():
        raise ClushConfigError(f"{path}: no such topology file")
    try:
        TopologyParser(str(path)).tree(_short_hostname())
    except (TopologyError, OSError, ValueError) as exc:
        raise ClushConfigError(f"{path}: {exc}") from None


def _short_hostname() -> str:
    import socket

    return socket.gethostname().split(".")[0]
