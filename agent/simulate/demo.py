"""``gpudiag sweep --demo``: a small simulated cluster served by an in-process SSH server on loopback.

Every demo host is a real SSH endpoint (asyncssh server on 127.0.0.1, one port per host, throwaway host
and client keys, a known_hosts that trusts exactly those keys), and each runs the real collector in a
real ``sh`` whose PATH holds the fake ``nvidia-smi`` (and ``systemd-detect-virt``) playing that host's
scenario. So the demo goes through the real code path - transport, host-key check, collector, log scan,
parser, checks, report - with no GPU. The case-study node serves a GLM-5 SGLang log and the spare node a
kernel log with an Xid (:mod:`gpudiag.simulate.demo_logs`), read by the node-side scanner like any log.
One host is an address where nothing listens: the unreachable node.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import stat
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import asyncssh

from gpudiag.model import Host, SweepReport
from gpudiag.simulate.demo_logs import write_demo_logs
from gpudiag.simulate.proc_table import scenario_processes, write_proc_table

if TYPE_CHECKING:
    from gpudiag.logs.plan import Planner
    from gpudiag.runner import SweepObserver, SweepOptions

HERE = Path(__file__).resolve().parent

# (host name, scenario): what the demo cluster holds.
DEMO_NODES: tuple[tuple[str, str], ...] = (
    # the case study: 8x RTX PRO 6000 Blackwell, 100% busy at ~330 of 600 W, its SGLang server on the GPUs
    ("sglang-glm5", "case_study_server"),
    ("train-h200-01", "healthy"),
    ("infer-h200-02", "bandwidth_bound"),
    ("spare-h200-03", "idle"),
    ("train-h200-04", "power_reduced"),
)
UNREACHABLE_NODE = "train-h200-05"


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


def _exec_handler(scenario: str, bin_dir: Path, port: int, proc_root: Path | None = None
                  ) -> Callable[[asyncssh.SSHServerProcess[bytes]], Awaitable[None]]:
    async def handle(process: asyncssh.SSHServerProcess[bytes]) -> None:
        env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
                   GPUDIAG_FAKE_SCENARIO=scenario,
                   SSH_CONNECTION=f"127.0.0.1 0 127.0.0.1 {port}")
        if proc_root is not None:  # the scenario's processes (its server's stdout: a log found by itself)
            env["GPUDIAG_PROC_ROOT"] = str(proc_root)
        command = process.command or "true"
        proc = await asyncio.create_subprocess_exec(
            "sh", "-c", command, env=env, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        await process.redirect(stdin=proc.stdin, stdout=proc.stdout, stderr=proc.stderr)
        process.exit(await proc.wait())
        await process.wait_closed()  # runs asyncssh's cleanup of the redirected pipes

    return handle


@contextlib.asynccontextmanager
async def demo_cluster() -> AsyncIterator[DemoCluster]:
    """Start the demo cluster's SSH servers; stop them and remove the throwaway files on exit."""
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
        hosts: list[Host] = []
        known_lines: list[str] = []
        known_hosts = root / "known_hosts"
        user = os.environ.get("USER") or "gpudiag"

        logs = write_demo_logs(root)

        def host(name: str, port: int) -> Host:
            return Host(name=name, address="127.0.0.1", port=port, user=user,
                        identity_file=str(client_key_path), known_hosts=str(known_hosts), logs=logs.get(name, ()))

        try:
            for name, scenario in DEMO_NODES:
                port = _free_port()
                procs = scenario_processes(scenario)
                proc_root = write_proc_table(root / "proc" / name, procs, root) if procs else None
                server = await asyncssh.create_server(
                    _NodeServer, "127.0.0.1", port, server_host_keys=[host_key],
                    authorized_client_keys=authorized,
                    process_factory=_exec_handler(scenario, bin_dir, port, proc_root), encoding=None)
                servers.append(server)
                hosts.append(host(name, port))
                known_lines.append(f"[127.0.0.1]:{port} {host_key.export_public_key().decode().strip()}")
            hosts.append(host(UNREACHABLE_NODE, _free_port()))
            known_hosts.write_text("\n".join(known_lines) + "\n")
            yield DemoCluster(hosts=tuple(hosts), known_hosts=str(known_hosts),
                              client_key=str(client_key_path))
        finally:
            for server in servers:
                server.close()
                await server.wait_closed()


async def sweep_demo(options: SweepOptions, *, planner: Planner | None = None, connect_timeout_s: float = 3.0,
                     stop: asyncio.Event | None = None, observer: SweepObserver | None = None) -> SweepReport:
    """Start the demo cluster and sweep it with ``options`` through the real SSH transport.

    ``planner``: the log planner for ``options.logs`` that the caller built, and so checked (``--pack``,
    ``--signature``), before the cluster started; each demo host's plan is built from it once. Built here
    when not given. ``stop`` and ``observer``: as for :func:`gpudiag.runner.sweep` (Ctrl-C, live progress)."""
    from gpudiag.logs.plan import Planner
    from gpudiag.runner import sweep
    from gpudiag.transport import SshOptions, SshTransport

    planner = planner or Planner(options.logs)
    async with demo_cluster() as cluster:
        plans = {host.name: planner.plan(host) for host in cluster.hosts}
        transport = SshTransport(SshOptions(connect_timeout_s=connect_timeout_s,
                                            known_hosts=(cluster.known_hosts,), ssh_config=[]))
        return await sweep(cluster.hosts, transport, options, plans=plans, stop=stop, observer=observer)
