"""`gpudiag watch` over the real sshd: refreshes reuse one connection per host (and one bastion connection
for every target behind it), counted on the server side in sshd's own log."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def logins(cluster) -> int:  # type: ignore[no-untyped-def]
    """Successful logins so far, as sshd logged them."""
    return sum(len(re.findall(r"Accepted publickey for ", Path(log).read_text(errors="replace")))
               for log in cluster.logs)


def watch(cluster, tmp_path: Path, hosts_yaml: str) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(f"defaults: {{user: {cluster.user}, port: {cluster.port}, identity_file: {cluster.client_key},"
                         f" known_hosts: {cluster.known_hosts}}}\nhosts:\n{hosts_yaml}")
    return subprocess.run([sys.executable, "-m", "agent.cli", "watch", "-i", str(inventory), "--count", "3",
                           "--every", "0.2", "--samples", "1", "--interval", "0", "--plain"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)


def test_watch_refreshes_over_the_same_connections(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    before = logins(sshd_cluster)
    done = watch(sshd_cluster, tmp_path, f"  sick: {{address: {sshd_cluster.address_of('case_study')}}}\n"
                                         f"  spare: {{address: {sshd_cluster.address_of('idle')}}}\n")
    assert done.returncode == 1, done.stderr
    refreshes = re.findall(r"^refresh (\d)/3 at ", done.stdout, flags=re.M)
    assert refreshes == ["1", "2", "3"]
    blocks = re.split(r"^refresh \d/3 at ", done.stdout, flags=re.M)[1:]
    assert "+ WARNING  BUSY_LOW_POWER" in blocks[0]
    assert "+ " not in blocks[1] and "+ " not in blocks[2]  # nothing new: nothing announced again
    assert "█" in blocks[2] and " 100%" in blocks[2]  # the sick GPUs' utilization bars
    assert logins(sshd_cluster) - before == 2  # one login per host for all three refreshes


def test_watch_through_a_bastion_uses_one_bastion_connection(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bastion = f"{sshd_cluster.user}@{sshd_cluster.address_of('healthy')}:{sshd_cluster.port}"
    targets = ("case_study", "idle", "power_reduced", "bandwidth_bound")
    hosts_yaml = "".join(f"  {s}: {{address: {sshd_cluster.address_of(s)}, jump: '{bastion}'}}\n" for s in targets)
    before = logins(sshd_cluster)
    done = watch(sshd_cluster, tmp_path, hosts_yaml)
    assert done.returncode == 1, done.stderr
    assert done.stdout.count("refresh ") == 3
    assert logins(sshd_cluster) - before == 1 + len(targets)  # the bastion once, each target once
