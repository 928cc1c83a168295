"""An OpenSSH config alias is honoured; remote output is bounded; the remote command reads its stdin to EOF."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from cli_run import run_cli
from gpudiag.model import Host
from gpudiag.transport.base import RemoteCommand
from gpudiag.transport.ssh import SshOptions, SshTransport

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def test_a_config_alias_needs_nothing_else(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "ssh_config"
    config.write_text(f"""Host sick-node
    HostName {sshd_cluster.address_of('case_study')}
    Port {sshd_cluster.port}
    User {sshd_cluster.user}
    IdentityFile {sshd_cluster.client_key}
""")
    done = run_cli("sweep", "sick-node", "-F", str(config), "--known-hosts", str(sshd_cluster.known_hosts), "--format",
                   "json", "--samples", "1", "--interval", "0", cwd=REPO)  # in this process
    assert done.returncode == 1, done.stderr
    (host,) = json.loads(done.stdout)["hosts"]
    assert (host["host"], host["status"]) == ("sick-node", "ok")
    assert {f["code"] for f in host["findings"]} == {"BUSY_LOW_POWER"}


def _run(sshd_cluster, command: RemoteCommand) -> object:  # type: ignore[no-untyped-def]
    (host,) = sshd_cluster.hosts("healthy")
    transport = SshTransport(SshOptions(ssh_config=[], connect_timeout_s=5.0))

    async def go() -> object:
        try:
            return await transport.run(host, command)
        finally:
            await transport.close()

    return asyncio.run(go())


def test_remote_output_is_bounded_and_the_flood_is_cut(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    result = _run(sshd_cluster, RemoteCommand(command="timeout 20 yes gpudiag", deadline_s=15.0,
                                              stdout_limit_bytes=1024 * 1024))
    assert result.stdout_truncated  # type: ignore[attr-defined]
    assert len(result.stdout) == 1024 * 1024  # type: ignore[attr-defined]
    assert result.exit_status is None  # type: ignore[attr-defined]


def test_stdin_is_sent_then_closed(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    result = _run(sshd_cluster, RemoteCommand(command="wc -c", stdin=b"x" * 100_000, deadline_s=15.0))
    assert result.stdout.strip() == b"100000" and result.exit_status == 0  # type: ignore[attr-defined]


def test_hosts_are_plain_values(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    """The fixture's hosts carry everything a connection needs (nothing hidden in the environment)."""
    (host,) = sshd_cluster.hosts("healthy")
    assert isinstance(host, Host) and host.port == sshd_cluster.port and host.known_hosts
