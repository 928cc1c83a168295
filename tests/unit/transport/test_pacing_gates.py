"""The handshake bounds apply to where a connection really goes: aliases of one sshd (an SSH config's HostName
and Port) share its bound, and a ProxyJump in the config is a bastion, as an inventory ``jump:`` is."""

from __future__ import annotations

from pathlib import Path

from gpudiag.model import Host
from gpudiag.transport.ssh import SshOptions, SshTransport


def test_gates_follow_the_ssh_config(tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("Host dead*\n    HostName 127.0.0.1\n    Port 2299\n"
                      "Host behind*\n    HostName 10.0.0.5\n    ProxyJump ops@bastion.example:2222,inner\n")
    transport = SshTransport(SshOptions(ssh_config=[str(config)]))

    assert transport._gates(Host(name="dead01"), False) == transport._gates(Host(name="dead02"), False) == (
        "sshd 127.0.0.1:2299",)
    assert transport._gates(Host(name="behind1"), False) == (
        "sshd 10.0.0.5:22", "bastion ops@bastion.example:2222")
    # gpudiag's own jump (the inventory's jump:, -J) names the bastion as written, tunnelled or not said
    jumped = Host(name="gpu01", address="10.0.0.9", jump="root@[::1]:2200")
    assert transport._gates(jumped, True) == ("sshd 10.0.0.9:22", "bastion root@[::1]:2200")
    assert transport._gates(jumped, False) == ("sshd 10.0.0.9:22",)
