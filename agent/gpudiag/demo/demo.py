"""The demo cluster (``--demo``): a small simulated cluster served by an in-process SSH server on loopback.

Every demo host is a real SSH endpoint (asyncssh server on 127.0.0.1, one port per host, throwaway host
and client keys, a known_hosts that trusts exactly those keys), and each runs the real collector in a
real ``sh`` whose PATH holds the fake ``nvidia-smi`` (and ``systemd-detect-virt``) playing that host's
scenario. So the demo goes through the real code path - transport, host-key check, collector, log scan,
parser, checks, report - with no GPU. The case-study node serves a GLM-5 SGLang log and the spare node a
kernel log with an Xid (:mod:`gpudiag.demo.demo_logs`), read by the node-side scanner like any log.
One host is an address where nothing listens: the unreachable node.

What each node is lives in one place, :data:`DEMO_NODES` (:class:`DemoNode`): its name, scenario, kernel,
whether it is a VM (the case-study node is a KVM guest; the H200s are bare metal) and its DMI names. The
collector runs on this machine, so what it reads from the operating system itself (the hostname, the kernel,
the CPU's hypervisor flag, /sys/class/dmi) is this machine's: the demo's server replaces those facts in each
document the node prints with the node's own, so no simulated node shows the laptop it runs on.

The cluster is a host source's (:mod:`gpudiag.sources.demo`): a run starts it once
(:class:`BackgroundCluster`) and its hosts go through the selection, the transport, the sweep, watch and the
exporter as any hosts do; nothing else knows the demo.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import stat
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh

from gpudiag.demo.demo_logs import write_demo_logs
from gpudiag.demo.proc_table import scenario_processes, write_proc_table
from gpudiag.model import Host
from gpudiag.transport.spawn import SETTLE_S, kill_group, settle, start_process

HERE = Path(__file__).resolve().parent

@dataclass(frozen=True, slots=True, kw_only=True)
class DemoNode:
    """One simulated node, all of it: add a fact here (and where the node shows it), never beside it."""

    name: str  # the host name in the report, and the node's hostname
    scenario: str | None  # the fake nvidia-smi's scenario (agent/gpudiag/demo/scenarios); None: nothing listens
    description: str = ""
    kernel: str = "6.8.0-60-generic"  # uname -r
    vm: str = "none"  # systemd-detect-virt --vm: "kvm" for a KVM guest, "none" on bare metal
    dmi_sys_vendor: str = "Supermicro"  # /sys/class/dmi/id: an HGX H200 server by default
    dmi_product_name: str = "SYS-821GE-TNHR"
    env: Mapping[str, str] = field(default_factory=dict)  # more of what the node's processes see
    groups: tuple[str, ...] = ()  # its inventory groups: the fleet checks (DRIVER_DRIFT) compare within them

    @property
    def hypervisor_flag(self) -> bool:
        """The CPU flag a guest's /proc/cpuinfo shows."""
        return self.vm != "none"


DEMO_NODES: tuple[DemoNode, ...] = (
    # The case study: 8x RTX PRO 6000 Blackwell in a KVM guest, 100% busy at ~330 of 600 W, its SGLang server
    # on the GPUs (a process table: pid, job, and its stdout, the log gpudiag finds by itself).
    DemoNode(name="sglang-glm5", scenario="case_study_server", description="the case study (KVM guest)",
             kernel="5.15.0-139-generic", vm="kvm", dmi_sys_vendor="QEMU",
             dmi_product_name="Standard PC (Q35 + ICH9, 2009)"),
    DemoNode(name="train-h200-01", scenario="healthy", groups=("h200",)),
    DemoNode(name="infer-h200-02", scenario="bandwidth_bound", groups=("h200",)),
    # Out of service after the Xid 63 of its kernel log: GPU 4 waits for a reset to remap a memory row.
    DemoNode(name="spare-h200-03", scenario="spare_row_remap", description="a pending row remap", groups=("h200",)),
    # reimaged from a stale image: an older driver than the other H200 nodes run (DRIVER_DRIFT)
    DemoNode(name="train-h200-04", scenario="power_reduced_drifted", description="an older driver than its group",
             groups=("h200",)),
    DemoNode(name="train-h200-05", scenario=None, description="unreachable", groups=("h200",)),
)


def as_node(line: bytes, node: DemoNode) -> bytes:
    """A document the collector printed (one line), with what it read from this machine's operating system
    replaced by the node's own: hostname, kernel, the CPU's hypervisor flag, the DMI names. Any other line
    passes as it is."""
    try:
        doc = json.loads(line)
    except ValueError:
        return line
    if not isinstance(doc, dict):
        return line
    if isinstance(doc.get("host"), dict):
        doc["host"].update(hostname=node.name, kernel=node.kernel)
    if isinstance(doc.get("context"), dict):
        doc["context"].update(hypervisor_flag=node.hypervisor_flag,
                              dmi={"product_name": node.dmi_product_name, "sys_vendor": node.dmi_sys_vendor})
    return json.dumps(doc, separators=(",", ":")).encode() + b"\n"


@dataclass(frozen=True, slots=True)
class DemoCluster:
    """A running demo cluster: its hosts and the files a client needs to reach them."""

    hosts: tuple[Host, ...]
    known_hosts: str
    client_key: str


def _free_port() -> int:
    """A loopback port where nothing listens (for the unreachable node)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _install_stub(bin_dir: Path) -> None:
    """Copy the fake nvidia-smi into ``bin_dir`` (also as ``systemd-detect-virt``), run by this interpreter."""
    source = (HERE / "fake_nvidia_smi").read_text()
    body = source.split("\n", 1)[1] if source.startswith("#!") else source
    for name in ("nvidia-smi", "systemd-detect-virt"):  # the same stub answers both, by the name it runs under
        target = bin_dir / name
        target.write_text(f"#!{sys.executable}\n{body}")
        target.chmod(target.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    scenarios = HERE / "scenarios"
    if scenarios.is_dir():
        shutil.copytree(scenarios, bin_dir / "scenarios", dirs_exist_ok=True)


class _NodeServer(asyncssh.SSHServer):
    """Accepts only the demo's client key (set through authorized_client_keys)."""

    def begin_auth(self, username: str) -> bool:
        return True


# A document is one line, up to the transport's output bound (a node's raw samples with --samples-detail).
_LINE_LIMIT = 64 * 1024 * 1024


async def _feed(process: asyncssh.SSHServerProcess[bytes], stdin: asyncio.StreamWriter) -> None:
    """The channel's input to the collector's stdin, and its end when the channel ends (the client closed it,
    or went away): a streaming collector then leaves, as it does behind a real sshd."""
    try:
        while data := await process.stdin.read(65536):
            stdin.write(data)
            await stdin.drain()
    except (OSError, asyncssh.Error):
        pass
    finally:
        with contextlib.suppress(OSError):
            stdin.close()


def _exec_handler(node: DemoNode, bin_dir: Path, port: int, running: set[asyncio.Task[object]],
                  proc_root: Path | None = None) -> Callable[[asyncssh.SSHServerProcess[bytes]], Awaitable[None]]:
    """The node's commands; each one's task is in ``running`` while it runs (the cluster ends them on exit)."""
    async def handle(process: asyncssh.SSHServerProcess[bytes]) -> None:
        task = asyncio.current_task()
        assert task is not None
        running.add(task)
        try:
            await serve(process)
        finally:
            running.discard(task)

    async def serve(process: asyncssh.SSHServerProcess[bytes]) -> None:
        env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
                   GPUDIAG_FAKE_SCENARIO=str(node.scenario), GPUDIAG_FAKE_VIRT=node.vm,
                   SSH_CONNECTION=f"127.0.0.1 0 127.0.0.1 {port}", **node.env)
        if proc_root is not None:  # the scenario's processes (its server's stdout: a log found by itself)
            env["GPUDIAG_PROC_ROOT"] = str(proc_root)
        command = process.command or "true"
        # A session of its own, as sshd gives each command: the collector ends its process group when its
        # stdin ends (a closed channel), which must not be gpudiag's.
        proc = await start_process(asyncio.create_subprocess_exec(
            "sh", "-c", command, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, limit=_LINE_LIMIT, start_new_session=True), end=_end_group)
        assert proc.stdin is not None and proc.stdout is not None
        await process.redirect(stderr=proc.stderr)
        feeding = asyncio.ensure_future(_feed(process, proc.stdin))
        # Line by line (a streaming collector answers one document per refresh), each as the node prints it.
        try:
            while line := await proc.stdout.readline():
                process.stdout.write(as_node(line, node))
                await process.stdout.drain()
        except (OSError, asyncssh.Error):  # the client left mid-answer
            kill_group(proc.pid)
        except asyncio.CancelledError:  # the demo cluster stops: its nodes' processes with it
            kill_group(proc.pid)
            raise
        finally:
            code = await proc.wait()
            feeding.cancel()
            await asyncio.wait({feeding})  # its end closes the collector's stdin: no pipe is left for the GC
            with contextlib.suppress(OSError, asyncssh.Error):
                process.exit(code)
            await process.wait_closed()  # runs asyncssh's cleanup of the redirected pipe

    return handle


async def _end_group(proc: asyncio.subprocess.Process) -> None:
    """A command started after its channel's handler was cancelled: ended, its exit reaped, its pipes closed."""
    kill_group(proc.pid)
    if proc.stdin is not None:
        proc.stdin.close()
    await proc.wait()


@contextlib.asynccontextmanager
async def demo_cluster(nodes: Sequence[DemoNode] = DEMO_NODES) -> AsyncIterator[DemoCluster]:
    """Start the SSH servers of ``nodes``; stop them and remove the throwaway files on exit."""
    with tempfile.TemporaryDirectory(prefix="gpudiag-demo-") as tmp:
        root = Path(tmp)
        bin_dir = root / "bin"
        bin_dir.mkdir()
        _install_stub(bin_dir)
        host_key = asyncssh.generate_private_key("ssh-ed25519")
        client_key = asyncssh.generate_private_key("ssh-ed25519")
        client_key_path = root / "client_ed25519"
        client_key.write_private_key(str(client_key_path))
        authorized = asyncssh.import_authorized_keys(client_key.export_public_key().decode())
        servers: list[asyncssh.SSHAcceptor] = []
        running: set[asyncio.Task[object]] = set()
        hosts: list[Host] = []
        known_lines: list[str] = []
        known_hosts = root / "known_hosts"
        user = os.environ.get("USER") or "gpudiag"

        logs = write_demo_logs(root)

        def host(node: DemoNode, port: int) -> Host:
            return Host(name=node.name, address="127.0.0.1", port=port, user=user, groups=node.groups,
                        identity_file=str(client_key_path), known_hosts=str(known_hosts), logs=logs.get(node.name, ()))

        try:
            for node in nodes:
                port = _free_port()
                if node.scenario is not None:
                    procs = scenario_processes(node.scenario)
                    proc_root = write_proc_table(root / "proc" / node.name, procs, root) if procs else None
                    server = await asyncssh.create_server(
                        _NodeServer, "127.0.0.1", port, server_host_keys=[host_key],
                        authorized_client_keys=authorized,
                        process_factory=_exec_handler(node, bin_dir, port, running, proc_root), encoding=None)
                    servers.append(server)
                    known_lines.append(f"[127.0.0.1]:{port} {host_key.export_public_key().decode().strip()}")
                hosts.append(host(node, port))  # no server: the unreachable node
            known_hosts.write_text("\n".join(known_lines) + "\n")
            yield DemoCluster(hosts=tuple(hosts), known_hosts=str(known_hosts),
                              client_key=str(client_key_path))
        finally:
            for server in servers:
                server.close()
                await server.wait_closed()
            # Commands still running (a stopped sweep's): ended here, not by asyncio.run's final cancel, and
            # every process still being created awaited, so none is left to hang the loop's close.
            for task in running:
                task.cancel()
            if running:
                await asyncio.wait(running, timeout=SETTLE_S)
            await settle()


class BackgroundCluster:
    """The demo cluster served from a thread of its own, on an event loop of its own, until :meth:`stop`: its
    hosts are then ordinary hosts to whatever sweeps them, in this process (on any ``--event-loop``) or in the
    ``--workers`` processes (:mod:`gpudiag.sources.demo` starts it for a run)."""

    def __init__(self, nodes: Sequence[DemoNode] = DEMO_NODES) -> None:
        self.nodes = tuple(nodes)
        self.hosts: tuple[Host, ...] = ()
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), name="gpudiag-demo", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            raise self._error

    async def _serve(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        try:
            async with demo_cluster(self.nodes) as cluster:
                self.hosts = cluster.hosts
                self._ready.set()
                await self._stop.wait()
        except Exception as exc:  # it could not start (no free port, no temporary folder): the run says why
            self._error = exc
        finally:
            self._ready.set()

    def stop(self) -> None:
        """Stop the servers, end the commands still running on them, remove the throwaway files."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # its loop ended already
                loop.call_soon_threadsafe(stop.set)
        self._thread.join()
