"""Hosts from an Ansible inventory, a ClusterShell @group and a pdsh ^file, swept through the loopback sshd."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cli_run import run_cli

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=REPO, env=env)  # in this process: the process is not the point


def test_ansible_ini_inventory_sweeps_through_sshd(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "host_vars" / "node-ecc.yml").write_text(f"ansible_host: {sshd_cluster.address_of('ecc')}\n")
    inventory = tmp_path / "hosts.ini"
    inventory.write_text(
        f"[healthy]\nnode-ok ansible_host={sshd_cluster.address_of('healthy')}\n"
        "[sick]\nnode-ecc\n"
        "[gpus:children]\nhealthy\nsick\n"
        f"[all:vars]\nansible_user={sshd_cluster.user}\nansible_port={sshd_cluster.port}\n"
        f"ansible_ssh_private_key_file={sshd_cluster.client_key}\n"
        f"ansible_ssh_common_args='-o UserKnownHostsFile={sshd_cluster.known_hosts}'\n")
    done = cli("sweep", "-i", str(inventory), "--limit", "gpus", "--samples", "1", "--interval", "0",
               "--format", "json")
    assert done.returncode == 2, done.stderr  # the ecc node is critical
    assert done.stderr == (f"gpudiag: {inventory}: an Ansible INI inventory: 2 hosts in 3 groups, host_vars for 1 "
                           "hosts\n")
    hosts = {h["host"]: h for h in json.loads(done.stdout)["hosts"]}
    assert {name: h["status"] for name, h in hosts.items()} == {"node-ok": "ok", "node-ecc": "ok"}
    assert [f["code"] for f in hosts["node-ecc"]["findings"]][:1] == ["ECC_UNCORRECTED"]


def test_clustershell_group_and_pdsh_file_sweep_through_sshd(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "groups.d").mkdir()
    (tmp_path / "groups.conf").write_text("[Main]\ndefault: lab\nautodir: $CFGDIR/groups.d\n")
    healthy, idle = sshd_cluster.address_of("healthy"), sshd_cluster.address_of("idle")
    (tmp_path / "groups.d" / "lab.yaml").write_text(f"lab:\n  pair: '{healthy},{idle}'\n")
    host_file = tmp_path / "hosts.txt"
    host_file.write_text(f"# pdsh -w ^hosts.txt\n{healthy}\n")
    env = {**os.environ, "CLUSTERSHELL_CFGDIR": str(tmp_path)}
    args = ("-u", sshd_cluster.user, "-p", str(sshd_cluster.port), "--identity-file", str(sshd_cluster.client_key),
            "--known-hosts", str(sshd_cluster.known_hosts), "--samples", "1", "--interval", "0", "--format", "json")
    done = cli("sweep", "@pair", *args, env=env)
    assert done.returncode in (0, 1), done.stderr
    assert sorted(h["host"] for h in json.loads(done.stdout)["hosts"]) == sorted([healthy, idle])
    done = cli("sweep", f"^{host_file}", *args, env=env)
    assert [h["host"] for h in json.loads(done.stdout)["hosts"]] == [healthy]
    bad = cli("sweep", "@nope", *args, env=env)
    assert (bad.returncode, bad.stderr) == (3, "gpudiag: @nope: no such ClusterShell group, or it is empty (clush -b "
                                                "-w @nope shows it)\n")
