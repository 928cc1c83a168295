"""``--via clush`` through ClusterShell's real gateway tree over the loopback sshd: the root (this machine) starts
a ClusterShell gateway on a loopback host (``python -m ClusterShell.Gateway`` over ssh, as clush does), the
gateway runs ssh to each node behind it, and the bundle travels on stdin through both hops. The same hosts swept
directly give the same rows, host for host; a node that refuses, a node whose host key is wrong at the last hop,
and a node behind a gateway that cannot be reached each get a row with its reason.

Hosts are reached by name through one ssh config (``-F``), read the same way by gpudiag's own client and by
ClusterShell's ssh at every hop (here every hop is this machine)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
FAST = ("--samples", "1", "--interval", "0", "--timeout", "20", "--format", "json")
# name -> the scenario it plays, behind the gateway gw1
BEHIND_GW1 = {"n-healthy": "healthy", "n-case": "case_study", "n-ecc": "ecc", "n-idle": "idle",
              "n-nosmi": "no_nvidia_smi"}


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpudiag", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=180, env=env)


@pytest.fixture()
def tree(sshd_cluster, silent_listener: int, tmp_path: Path) -> tuple[Path, Path, Path]:  # type: ignore[no-untyped-def]
    """An ssh config naming every host, and a topology: this machine -> gw1 (a loopback host) and gw-down
    (nothing listens) -> their nodes."""
    c = sshd_cluster
    names = {name: c.address_of(scenario) for name, scenario in BEHIND_GW1.items()}
    names |= {"gw1": c.extra_addresses[0], "n-badkey": c.address_of("thermal"), "n-behind-down": c.address_of("mixed")}
    blocks = [f"Host {name}\n  HostName {address}\n  Port {c.port}\n" for name, address in names.items()]
    blocks.append(f"Host n-down\n  HostName 127.0.0.1\n  Port {_closed_port()}\n")
    blocks.append("Host gw-down\n  HostName 127.0.0.1\n  Port 1\n")
    blocks.append(f"Host n-silent\n  HostName 127.0.0.1\n  Port {silent_listener}\n")  # accepts, never speaks
    blocks.insert(0, f"Host n-badkey\n  UserKnownHostsFile {c.wrong_key_known_hosts}\n")  # first value wins
    blocks.append(f"Host *\n  User {c.user}\n  IdentityFile {c.client_key}\n  IdentitiesOnly yes\n"
                  f"  UserKnownHostsFile {c.known_hosts}\n  GlobalKnownHostsFile /dev/null\n  LogLevel ERROR\n")
    config = tmp_path / "ssh_config"
    config.write_text("".join(blocks))
    topology = tmp_path / "topology.conf"
    root = socket.gethostname().split(".")[0]
    topology.write_text(f"[routes]\n{root}: gw1,gw-down\n"
                        f"gw1: {','.join(BEHIND_GW1)},n-down,n-badkey,n-silent\ngw-down: n-behind-down\n")
    # gpudiag's own client takes its known_hosts from the inventory (asyncssh reads no UserKnownHostsFile from
    # an ssh config): the same files, host by host
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(f"defaults:\n  known_hosts: {c.known_hosts}\nhosts:\n"
                         f"  n-badkey:\n    known_hosts: {c.wrong_key_known_hosts}\n"
                         + "".join(f"  {name}: {{}}\n" for name in [*BEHIND_GW1, "n-down", "n-silent",
                                                                    "n-behind-down"]))
    return config, topology, inventory


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rows(done: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    assert done.returncode in (0, 1, 2), done.stderr
    return {h["host"]: h for h in json.loads(done.stdout)["hosts"]}


def _verdict(host: dict[str, Any]) -> tuple[Any, ...]:
    """What a host's row says, less what differs between two runs (times, samples)."""
    findings = tuple(sorted((f["code"], f["severity"], f.get("gpu"), f["action"]) for f in host["findings"]))
    gpus = tuple(g["uuid"] for g in host["gpus"])
    return host["status"], host.get("unreachable_reason"), findings, gpus


def test_the_tree_reads_what_a_direct_sweep_reads_and_says_why_a_host_was_not(tree) -> None:  # type: ignore[no-untyped-def]
    config, topology, inventory = tree
    targets = [*BEHIND_GW1, "n-down", "n-badkey", "n-silent", "n-behind-down"]
    env = {**os.environ, "CLUSTERSHELL_GW_PYTHON_EXECUTABLE": sys.executable}  # the gateway's Python: ours
    via = _rows(cli("sweep", "--via", "clush", "--clush-topology", str(topology), "-F", str(config), *targets,
                    *FAST, "--connect-timeout", "3", env=env))
    direct = _rows(cli("sweep", "-F", str(config), "-i", str(inventory), "--limit", ",".join(targets), *FAST,
                       "--connect-timeout", "3"))

    assert sorted(via) == sorted(direct) == sorted(targets)
    for name in [*BEHIND_GW1, "n-down", "n-badkey", "n-silent"]:  # the same row, host for host
        assert _verdict(via[name]) == _verdict(direct[name]), name
    assert {name: via[name]["status"] for name in BEHIND_GW1} == dict.fromkeys(BEHIND_GW1, "ok")
    assert {f["code"] for f in via["n-ecc"]["findings"]} >= {"ECC_UNCORRECTED"}
    assert {name: via[name]["read_via"] for name in BEHIND_GW1} == dict.fromkeys(BEHIND_GW1, "clush via gw1")
    assert direct["n-healthy"]["read_via"] is None

    # the last hop's failures, said by the gateway's ssh
    assert (via["n-down"]["status"], via["n-down"]["unreachable_reason"]) == ("unreachable", "refused")
    assert via["n-down"]["error"].startswith("through gateway gw1: ")
    assert (via["n-silent"]["status"], via["n-silent"]["unreachable_reason"]) == ("unreachable", "timeout")
    assert via["n-silent"]["error"].startswith("through gateway gw1: ")
    assert via["n-badkey"]["status"] == "host_key_rejected"
    assert "through gateway gw1: " in via["n-badkey"]["error"]
    # a gateway down: the node behind it is a row that names it; directly, that node answers
    assert (via["n-behind-down"]["status"], via["n-behind-down"]["unreachable_reason"]) == ("unreachable", "refused")
    assert via["n-behind-down"]["error"].startswith("gateway gw-down not reached: ")
    assert direct["n-behind-down"]["status"] == "ok"


def test_flat_clush_without_a_topology_reads_the_same(tree) -> None:  # type: ignore[no-untyped-def]
    config, _, inventory = tree
    targets = ["n-healthy", "n-ecc", "n-down"]
    via = _rows(cli("sweep", "--via", "clush", "-F", str(config), *targets, *FAST,
                    env={**os.environ, "CLUSTERSHELL_CFGDIR": str(config.parent / "no-clustershell-config")}))
    direct = _rows(cli("sweep", "-F", str(config), "-i", str(inventory), "--limit", ",".join(targets), *FAST))
    assert {n: _verdict(via[n]) for n in targets} == {n: _verdict(direct[n]) for n in targets}
    assert via["n-ecc"]["read_via"] == "clush"
