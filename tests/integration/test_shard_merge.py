"""Two controllers sweep halves of one inventory (--shard) and `gpudiag merge` gives the whole report."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cli_run import run_cli

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=REPO)  # in this process: the process is not the point


def test_shards_then_merge_equal_one_sweep(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    hosts = {s: sshd_cluster.address_of(s) for s in ("healthy", "case_study", "idle", "power_reduced", "ecc")}
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(
        f"{sshd_cluster.inventory_defaults()}hosts:\n"
        + "".join(f"  {name}: {{address: {address}}}\n" for name, address in hosts.items()))
    args = ("-i", str(inventory), "--samples", "1", "--interval", "0", "--format", "json")
    parts = []
    for i in (1, 2):
        done = cli("sweep", *args, "--shard", f"{i}/2")
        assert done.returncode in (0, 1, 2), done.stderr
        path = tmp_path / f"shard{i}.json"
        path.write_text(done.stdout)
        parts.append(path)
    shard_hosts = [[h["host"] for h in json.loads(p.read_text())["hosts"]] for p in parts]
    assert sorted(shard_hosts[0] + shard_hosts[1]) == sorted(hosts) and not set(shard_hosts[0]) & set(shard_hosts[1])

    merged = cli("merge", *map(str, parts), "--format", "json")
    whole = cli("sweep", *args)
    assert merged.returncode == whole.returncode == 2, merged.stderr  # ecc: a critical finding
    m, w = json.loads(merged.stdout), json.loads(whole.stdout)
    assert sorted(h["host"] for h in m["hosts"]) == sorted(h["host"] for h in w["hosts"])
    assert m["summary"]["findings_by_code"] == w["summary"]["findings_by_code"]

    again = cli("merge", str(parts[0]), str(parts[0]))
    assert again.returncode == 3 and again.stderr.startswith("gpudiag: host ")
    bad = cli("sweep", *args, "--shard", "3/2")
    assert bad.returncode == 3 and bad.stderr.strip() == "gpudiag: --shard 3/2: expected I/N with 1 <= I <= N, e.g. 1/4"
