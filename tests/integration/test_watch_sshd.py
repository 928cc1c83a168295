"""`gpudiag watch` over the real sshd: refreshes reuse one connection per host (and one bastion connection
for every target behind it), counted on the server side in sshd's own log."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_run import run_cli
from gpudiag.model import RemoteResult
from gpudiag.sweep.runner import SweepOptions, collector_command
from gpudiag.transport.base import CommandTimeout
from gpudiag.transport.ssh import SshOptions, SshTransport
from loopback import commands_of, process_ended

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def logins(cluster) -> int:  # type: ignore[no-untyped-def]
    """Successful logins so far, as sshd logged them."""
    return sum(len(re.findall(r"Accepted publickey for ", Path(log).read_text(errors="replace")))
               for log in cluster.logs)


def watch(cluster, tmp_path: Path, hosts_yaml: str) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(f"{cluster.inventory_defaults()}hosts:\n{hosts_yaml}")
    return run_cli("watch", "-i", str(inventory), "--count", "3", "--every", "0.2", "--samples", "1", "--interval", "0",
                   "--plain", cwd=REPO)  # in this process: the process is not the point


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


def _rounds(cluster, scenario: str, count: int, deadline_s: float = 30.0) -> list[RemoteResult]:  # type: ignore[no-untyped-def]
    """``count`` refreshes of one host's streaming collector, as watch makes them."""
    transport = SshTransport(SshOptions(ssh_config=[], connect_timeout_s=10, keep_connections=True))
    command = collector_command(SweepOptions(samples=1, interval_s=0.0, deadline_s=deadline_s, stream=True))
    host = cluster.host(cluster.address_of(scenario), scenario)

    async def run() -> list[RemoteResult]:
        results: list[RemoteResult] = []
        try:
            for _ in range(count):
                try:
                    results.append(await transport.run(host, command))
                except CommandTimeout as exc:
                    results.append(RemoteResult(exit_status=None, stdout=b"", stderr=str(exc).encode()))
        finally:
            await transport.close()
        return results

    return asyncio.run(run())


def test_one_collector_process_answers_every_refresh_and_ends_with_the_connection(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    results = _rounds(sshd_cluster, "case_study", 3)
    docs = [json.loads(r.stdout) for r in results]
    assert [r.exit_status for r in results] == [0, 0, 0]
    assert [d["stream"]["round"] for d in docs] == [1, 2, 3]
    pids = {d["stream"]["pid"] for d in docs}
    assert len(pids) == 1  # started once: later refreshes cost the readings alone
    assert all(len(d["samples"]) == 1 and d["samples"][0]["exit"] == 0 for d in docs)
    assert all(d["context"]["topology"]["exit"] == 0 for d in docs)  # starved: read once, kept
    assert process_ended(pids.pop(), wait_s=10.0)  # the connection closed: its stdin ended, and so did it


def test_a_node_without_python_answers_each_refresh_with_a_new_shell_collector(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    results = _rounds(sshd_cluster, "no_python", 3)
    docs = [json.loads(r.stdout) for r in results]
    assert [(d["collector"], "stream" in d) for d in docs] == [("sh", False)] * 3
    assert all(r.exit_status == 0 for r in results)


def test_a_hung_call_is_killed_at_its_bound_and_the_round_still_answers(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    results = _rounds(sshd_cluster, "hang", 2, deadline_s=4.0)
    docs = [json.loads(r.stdout) for r in results]
    assert [d["hung"][0]["call"] for d in docs] == ["nvidia-smi --query-gpu"] * 2  # each round says its own
    assert [d["stream"]["round"] for d in docs] == [1, 2]  # the same collector answered both
    assert sshd_cluster.hung_stub_ended("hang")


def test_a_hung_round_ends_the_collector_and_its_hung_nvidia_smi(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    # The last resort: a round deadline no longer than the smallest call bound (1 s) fires first.
    (result,) = _rounds(sshd_cluster, "hang", 1, deadline_s=1.0)
    assert result.stdout == b"" and result.exit_status != 0
    assert sshd_cluster.hung_stub_ended("hang")  # the round's deadline ended the whole group on the node


# Every form a host's ``logs:`` takes in an inventory (docs/logs.md): a mapping among them once made a host
# unhashable, and watch and the exporter failed it on every refresh (issue 19, item 5).
LOG_FORMS = {
    "path": '["~/server.log"]',
    "kernel": '["@kernel"]',
    "mapping": '[{path: /var/log/vllm/server.log, packs: [vllm, nccl], tail_mib: 32, since_hours: 12}]',
    "kernel_mapping": '[{path: "@kernel", since_hours: 48}]',
    "mixed": '["~/server.log", {path: "@kernel", since_hours: 48}, "@kernel"]',
}


def log_forms_hosts(cluster) -> str:  # type: ignore[no-untyped-def]
    return "".join(f"  {name}: {{address: {cluster.address_of('healthy')}, logs: {logs}}}\n"
                   for name, logs in LOG_FORMS.items())


def test_watch_reads_a_host_whatever_form_its_logs_take(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(f"{sshd_cluster.inventory_defaults()}hosts:\n{log_forms_hosts(sshd_cluster)}")
    done = run_cli("watch", "-i", str(inventory), "--count", "2", "--every", "0.2", "--samples", "1", "--interval", "0",
                   "--format", "json", cwd=REPO)
    refreshes = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(refreshes) == 2, done.stderr
    for doc in refreshes:
        assert {h["host"]: h["status"] for h in doc["hosts"]} == dict.fromkeys(LOG_FORMS, "ok"), done.stdout
        assert "unexpected" not in json.dumps(doc)


def test_watch_demo_reads_the_spare_node_with_a_mapping_log() -> None:
    done = run_cli("watch", "--demo", "--count", "2", "--every", "0.2", "--samples", "1", "--interval", "0", "--format",
                   "json", cwd=REPO)
    refreshes = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(refreshes) == 2, done.stderr
    for doc in refreshes:
        (spare,) = [h for h in doc["hosts"] if h["host"] == "spare-h200-03"]
        assert spare["status"] == "ok" and spare["gpus"], spare
        assert "HOST_UNREACHABLE" not in {f["code"] for f in spare["findings"]}


def test_ctrl_c_ends_the_kept_collectors_mid_round(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """SIGINT to `gpudiag watch` while its kept collectors sample (15 s rounds): within 2 s of watch's end nothing
    of theirs runs on the nodes (before, a kept collector ran its round out, up to a call bound, ~12 s)."""
    hosts = sshd_cluster.extra_hosts(6)
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(sshd_cluster.inventory_defaults() + "hosts:\n"
                         + "".join(f"  {h.name}: {{address: {h.address}}}\n" for h in hosts))
    before = sshd_cluster.session_pids()
    proc = subprocess.Popen([sys.executable, "-m", "gpudiag", "watch", "-i", str(inventory), "--samples", "30",
                             "--interval", "0.5", "--timeout", "60", "--plain"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=REPO)
    deadline = time.monotonic() + 60
    while len(sshd_cluster.session_pids() - before) < len(hosts) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # every collector is in its first round
    assert proc.poll() is None, proc.communicate()[1]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    left = sshd_cluster.sessions_left(before, wait_s=2.0)
    assert not left, f"{len(left)} processes still run on the nodes 2 s after watch ended: {commands_of(left)}"
