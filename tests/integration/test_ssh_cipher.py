"""The SSH transport asks for AES-GCM first, and still reaches a server that offers no GCM cipher."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpudiag.model import Host
from gpudiag.transport.ssh import SshOptions, SshTransport

pytestmark = pytest.mark.integration


def _ciphers(host: Host, known_hosts: Path | None = None) -> tuple[str, str]:
    """(client to server, server to client) cipher of one connection made as a sweep makes it."""
    transport = SshTransport(SshOptions(ssh_config=[], connect_timeout_s=5.0,
                                        known_hosts=(str(known_hosts),) if known_hosts else ()))

    async def go() -> tuple[str, str]:
        conn = await transport._connect(host, None)
        try:
            return conn.get_extra_info("send_cipher"), conn.get_extra_info("recv_cipher")
        finally:
            conn.close()
            await conn.wait_closed()

    return asyncio.run(go())


def test_aes128_gcm_is_chosen_with_openssh(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    (host,) = sshd_cluster.hosts("healthy")
    assert _ciphers(host) == ("aes128-gcm@openssh.com", "aes128-gcm@openssh.com")


@contextlib.contextmanager
def _sshd_offering(sshd_cluster, ciphers: str, work: Path) -> Iterator[Host]:  # type: ignore[no-untyped-def]
    """One more sshd, configured like the cluster's first one but on its own port and with only ``ciphers``."""
    (host,) = sshd_cluster.hosts("healthy")
    with socket.socket() as probe:
        probe.bind((host.target, 0))
        port = probe.getsockname()[1]
    base = sshd_cluster.logs[0].with_suffix(".conf").read_text().splitlines()
    config = work / "sshd.conf"
    config.write_text("\n".join([f"Port {port}", f"ListenAddress {host.target}", f"Ciphers {ciphers}",
                                 *(line for line in base if not line.startswith(("Port ", "ListenAddress ")))
                                 ]) + "\n")
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            with contextlib.suppress(OSError), socket.create_connection((host.target, port), timeout=0.5) as s:
                if s.recv(8).startswith(b"SSH-"):
                    break
            assert proc.poll() is None, "sshd exited"
            time.sleep(0.05)
        yield dataclasses.replace(host, port=port, known_hosts=None)
    finally:
        proc.terminate()
        proc.wait(timeout=5)


def test_a_server_without_gcm_is_still_reached(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with _sshd_offering(sshd_cluster, "aes128-ctr", tmp_path) as host:
        key = next(line.split(" ", 1)[1] for line in sshd_cluster.known_hosts.read_text().splitlines())
        known = tmp_path / "known_hosts"
        known.write_text(f"[{host.target}]:{host.port} {key}\n")
        assert _ciphers(host, known) == ("aes128-ctr", "aes128-ctr")
