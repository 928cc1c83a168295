"""SSH errors name the endpoint that was really tried: an ssh_config alias's HostName, Port and User, and for a
ProxyJump that failed, the bastion (its address, port, user), not the target. Real sshd, real configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_run import run_cli
from loopback import SshdCluster

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def sweep(config: Path, cluster: SshdCluster, *targets: str) -> dict[str, dict[str, object]]:
    done = run_cli("sweep", *targets, "-F", str(config), "--known-hosts", str(cluster.known_hosts), "--format", "json",
                   "--samples", "1", "--interval", "0", "--connect-timeout", "5", cwd=REPO)  # in this process
    assert done.returncode == 2, done.stderr
    return {h["host"]: h for h in json.loads(done.stdout)["hosts"]}


def test_errors_name_the_configured_address_port_user_and_bastion(sshd_cluster: SshdCluster,
                                                                  tmp_path: Path) -> None:
    healthy = sshd_cluster.address_of("healthy")
    config = tmp_path / "ssh_config"
    config.write_text(f"""Host alias9
    HostName 127.0.0.9
    Port 1
Host locked
    HostName {healthy}
    Port {sshd_cluster.port}
    User nobody
    IdentityFile {sshd_cluster.client_key}
Host behind
    HostName {healthy}
    Port {sshd_cluster.port}
    User {sshd_cluster.user}
    IdentityFile {sshd_cluster.client_key}
    ProxyJump jumper@bastion1
Host bastion1
    HostName 127.0.0.9
    Port 1
""")
    hosts = sweep(config, sshd_cluster, "alias9", "locked", "behind")
    assert hosts["alias9"]["error"] == "connection refused by 127.0.0.9:1 (host up, nothing listening)"
    assert hosts["locked"]["status"] == "auth_failed"
    assert str(hosts["locked"]["error"]).startswith(f"login refused for user nobody at {healthy}:{sshd_cluster.port} "
                                                    "(Permission denied")
    # The target is fine; its bastion is what refused: named as configured and as resolved.
    assert (hosts["behind"]["status"], hosts["behind"]["error"]) == (
        "unreachable", "via bastion jumper@bastion1 (ProxyJump of behind): connection refused by 127.0.0.9:1 "
                       "(host up, nothing listening)")
