"""``--demo`` honours the options that apply to it, has a ``watch``, and its nodes show their own hostname,
kernel and hypervisor flag, never this machine's. The demo cluster is real (asyncssh servers on loopback, the
real collector in ``sh``), run through the command line in this process. Split from
tests/unit/demo/test_demo_options.py (picking the demo's hosts and refusing options: there, no cluster)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from gpudiag.cli.app import app
from gpudiag.demo.demo import DEMO_NODES

ENV = {"PATH": "/usr/bin:/bin"}


FAST = ("--samples", "1", "--interval", "0")


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), env=ENV)


def _json(done: Any) -> dict[str, Any]:
    assert done.exit_code in (0, 1, 2), done.output
    return dict(json.loads(done.stdout))


def test_thresholds_apply_and_each_node_shows_its_own_facts() -> None:
    flagged = _json(invoke("sweep", "--demo", "sglang-glm5", "train-h200-01", *FAST, "--format", "json"))
    relaxed = _json(invoke("sweep", "--demo", "sglang-glm5", *FAST, "--low-power-pct", "40", "--format", "json"))
    codes = [{f["code"] for f in doc["hosts"][0]["findings"]} for doc in (flagged, relaxed)]
    assert "BUSY_LOW_POWER" in codes[0] and "BUSY_LOW_POWER" not in codes[1]  # ~55% of the limit: not below 40%
    nodes = {h["host"]: h["node"] for h in flagged["hosts"]}
    uname = os.uname()
    facts = {name: (n["hostname"], n["kernel"], n["context"]["is_vm"]) for name, n in nodes.items()}
    assert facts == {"sglang-glm5": ("sglang-glm5", "5.15.0-139-generic", True),  # the case study: a KVM guest
                     "train-h200-01": ("train-h200-01", "6.8.0-60-generic", False)}  # bare metal
    assert uname.nodename not in {f[0] for f in facts.values()}
    assert nodes["train-h200-01"]["context"]["dmi_sys_vendor"] == "Supermicro"


def test_shard_and_merge_on_the_demo(tmp_path: Path) -> None:
    outputs = []
    for shard in ("1/2", "2/2"):
        out = tmp_path / f"shard{shard[0]}.json"
        done = invoke("sweep", "--demo", *FAST, "--shard", shard, "--format", "json", "-o", str(out))
        assert done.exit_code in (0, 1, 2), done.output
        outputs.append(out)
    merged = invoke("merge", *map(str, outputs), "--format", "json")
    hosts = [h["host"] for h in json.loads(merged.stdout)["hosts"]]
    assert sorted(hosts) == sorted(n.name for n in DEMO_NODES)
    assert [h for h in hosts if h == "train-h200-05"] == ["train-h200-05"]  # the unreachable node, in one shard


def test_the_demo_is_hosts_like_any_others_for_the_workers() -> None:
    # The workers' processes reach the demo cluster the run started, as they reach any hosts.
    done = invoke("sweep", "--demo", *FAST, "--workers", "2", "--format", "json")
    hosts = [h["host"] for h in _json(done)["hosts"]]
    assert hosts == [n.name for n in DEMO_NODES]  # every host, once, in the demo's order
    assert done.exit_code == 2  # the unreachable node


def test_watch_demo_refreshes_the_chosen_hosts() -> None:
    done = invoke("watch", "--demo", "train-h200-01", "--count", "2", "--every", "0", "--samples", "1", "--plain")
    assert done.exit_code == 0, done.output
    assert [line.split(" at ")[0] for line in done.stdout.splitlines() if line.startswith("refresh ")] == [
        "refresh 1/2", "refresh 2/2"]
    assert "train-h200-01" in done.stdout and "sglang-glm5" not in done.stdout


def test_watch_json_is_one_sweep_document_a_line() -> None:
    done = invoke("watch", "--demo", "train-h200-01", "--count", "2", "--every", "0", "--samples", "1",
                  "--format", "json")
    assert done.exit_code == 0, done.output
    docs = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(d["schema"], [h["host"] for h in d["hosts"]]) for d in docs] == [
        ("gpudiag.sweep/4", ["train-h200-01"])] * 2



def test_grep_json_carries_its_schema() -> None:
    done = CliRunner().invoke(app, ["grep", "--demo", "-s", "kernel_xid", "--format", "json"], env=ENV)
    doc = json.loads(done.stdout)
    assert doc["schema"] == "gpudiag.grep/1" and doc["signature"] == "kernel_xid"
