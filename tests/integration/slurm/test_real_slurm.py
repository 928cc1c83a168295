"""gpudiag against a real Slurm: partition, job and node-list selection, a sweep of Slurm's nodes through the
loopback sshd, drain and undrain with scontrol, and a job array of sharded sweeps merged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli_run import run_cli
from gpudiag.sources.slurm import SlurmError, SlurmSelection, select_nodes
from gpudiag.sweep.shard import select_shard
from slurm_cluster import SlurmCluster

# One worker runs them all, on the session's one Slurm cluster (pyproject.toml: --dist loadgroup).
pytestmark = [pytest.mark.integration, pytest.mark.slurm, pytest.mark.xdist_group("slurm")]
REPO = Path(__file__).resolve().parents[3]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=REPO)  # in this process: the process is not the point


def ssh_args(sshd_cluster) -> tuple[str, ...]:  # type: ignore[no-untyped-def]
    return ("-u", sshd_cluster.user, "-p", str(sshd_cluster.port), "--identity-file", str(sshd_cluster.client_key),
            "--known-hosts", str(sshd_cluster.known_hosts), "--samples", "1", "--interval", "0")


def test_partition_gives_its_nodes_with_address_state_and_reason(slurm: SlurmCluster, sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    slurm.set_state("gpu03", "DRAIN", "rma: fan")
    nodes = select_nodes(SlurmSelection(partitions=("gpu",)))
    assert [(n.name, n.address, n.state, n.reason, n.partitions) for n in nodes] == [
        ("gpu01", sshd_cluster.address_of("healthy"), "idle", None, ("gpu",)),
        ("gpu02", sshd_cluster.address_of("ecc"), "idle", None, ("gpu",)),
        ("gpu03", sshd_cluster.address_of("idle"), "drained", "rma: fan", ("gpu",)),
    ]
    assert [n.name for n in select_nodes(SlurmSelection(partitions=("gpu", "debug"), states=("drain",)))] == ["gpu03"]
    # Slurm's own state names: sinfo -t idle also matches a drained node whose base state is idle.
    assert [n.name for n in select_nodes(SlurmSelection(nodelist="gpu[02-04]", states=("idle",)))] == [
        "gpu02", "gpu03", "gpu04"]
    assert [n.name for n in select_nodes(SlurmSelection(nodelist="gpu[01-02]"))] == ["gpu01", "gpu02"]


@pytest.mark.parametrize(("chosen", "message"), [
    (SlurmSelection(partitions=("nope",)), "--slurm-partition nope: no such partition (or it has no nodes)"),
    (SlurmSelection(nodelist="gpu[01-09]"), "not Slurm nodes (or in no partition): gpu[05-09]"),
    (SlurmSelection(job="999999"), "--slurm-job 999999: squeue says: slurm_load_jobs error: Invalid job id specified"),
    (SlurmSelection(job="12;rm"), "--slurm-job 12;rm: expected a job id such as 81723 (or 81723_4 for an array task)"),
    (SlurmSelection(states=("bogus",)), '--slurm-state bogus: sinfo says: sinfo: error: Bad state string: "bogus"'),
])
def test_what_slurm_refuses_is_one_line(slurm: SlurmCluster, chosen: SlurmSelection, message: str) -> None:
    with pytest.raises(SlurmError) as excinfo:
        select_nodes(chosen)
    assert str(excinfo.value) == message


def test_a_jobs_nodes(slurm: SlurmCluster) -> None:
    job = slurm.run("sbatch", "--parsable", "-N", "2", "-p", "gpu", "-w", "gpu[01,03]", "-o", "/dev/null",
                    "--wrap", "sleep 120").stdout.strip()
    slurm.wait_for(lambda: slurm.run("squeue", "-h", "-j", job, "-o", "%T").stdout.strip() == "RUNNING",
                   f"job {job} running")
    nodes = select_nodes(SlurmSelection(job=job))
    assert [(n.name, n.state) for n in nodes] == [("gpu01", "allocated"), ("gpu03", "allocated")]


def test_sweep_drain_and_undrain_through_slurm_and_sshd(slurm: SlurmCluster, sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    slurm.set_state("gpu03", "DRAIN", "rma: fan")  # drained by someone else: gpudiag must keep their reason
    dry = cli("sweep", "--slurm-partition", "gpu", *ssh_args(sshd_cluster), "--drain-on", "critical",
              "--format", "json")
    assert dry.returncode == 2, dry.stderr  # ecc: a critical finding
    doc = json.loads(dry.stdout)
    assert [h["host"] for h in doc["hosts"]] == ["gpu01", "gpu02", "gpu03"]
    assert {h["host"]: h["address"] for h in doc["hosts"]}["gpu02"] == sshd_cluster.address_of("ecc")
    assert doc["slurm"]["nodes"]["gpu03"] == {"state": "drained", "reason": "rma: fan", "partitions": ["gpu"]}
    by_host = {h["host"]: h for h in doc["hosts"]}
    assert (by_host["gpu03"]["scheduler_state"], by_host["gpu03"]["scheduler_reason"]) == ("drained", "rma: fan")
    assert (by_host["gpu02"]["scheduler_state"], by_host["gpu02"]["scheduler_reason"]) == ("idle", None)
    (drain,) = doc["slurm"]["actions"]
    assert drain["node"] == "gpu02" and drain["action"] == "drain" and drain["done"] is None
    assert drain["reason"] == "gpudiag: reset_gpu: ECC_UNCORRECTED gpu 1"  # the node's action, then why
    assert drain["command"] == ["scontrol", "update", "NodeName=gpu02", "State=DRAIN", f"Reason={drain['reason']}"]
    assert dry.stderr.startswith("gpudiag: would drain gpu02 (")
    assert slurm.state_of("gpu02") == ("IDLE", None)  # a dry run changes nothing

    done = cli("sweep", "--slurm-partition", "gpu,debug", "--exclude", "gpu01", *ssh_args(sshd_cluster),
               "--drain-on", "critical", "--yes")
    assert done.returncode == 2, done.stderr
    assert "done: drain gpu02" in done.stdout and "done: drain gpu04" in done.stdout
    assert "leave  gpu03: already drained by someone else: rma: fan" not in done.stdout  # no finding on gpu03
    assert "gpu02" in done.stdout and "gpu01" not in done.stdout  # --exclude gpu01: not swept, not listed
    assert slurm.state_of("gpu02") == ("IDLE+DRAIN", drain["reason"])
    assert slurm.state_of("gpu04") == ("IDLE+DRAIN", "gpudiag: reboot_node: DRIVER_ERROR")
    assert slurm.state_of("gpu03") == ("IDLE+DRAIN", "rma: fan")

    slurm.set_state("gpu01", "DRAIN", "gpudiag: XID 79 gpu 3")  # an old gpudiag drain: gpu01 is healthy now
    plan = cli("undrain", *ssh_args(sshd_cluster), "--format", "json")
    assert plan.returncode == 0, plan.stderr
    actions = {a["node"]: a for a in json.loads(plan.stdout)["actions"]}
    assert {n: a["action"] for n, a in actions.items()} == {"gpu01": "resume", "gpu02": "leave", "gpu03": "leave",
                                                             "gpu04": "leave"}
    assert actions["gpu03"]["why"] == "drained by someone else: rma: fan"
    assert actions["gpu02"]["why"] == "not cleared: reset_gpu: ECC_UNCORRECTED gpu 1"
    assert sorted(json.loads(plan.stdout)["hosts_swept"]) == ["gpu01", "gpu02", "gpu04"]
    assert slurm.state_of("gpu01")[0] == "IDLE+DRAIN"  # still a dry run

    resumed = cli("undrain", *ssh_args(sshd_cluster), "--yes")
    assert resumed.returncode == 0, resumed.stderr
    assert "done: resume gpu01 (cleared (was gpudiag: XID 79 gpu 3))" in resumed.stdout
    assert slurm.state_of("gpu01")[0] in ("IDLE", "IDLE+NOT_RESPONDING")  # Slurm pings it again right after
    assert slurm.state_of("gpu02")[0] == "IDLE+DRAIN" and slurm.state_of("gpu03") == ("IDLE+DRAIN", "rma: fan")


def test_drain_on_an_action_threshold(slurm: SlurmCluster, sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    """--drain-on reset_gpu drains the node whose action is at least a GPU reset (gpu02: uncorrected ECC),
    with the action leading its reason in Slurm; reboot_node asks more than gpu02 needs (only gpu04's driver
    error), and a threshold the ladder does not have is typer's usage error naming the choices."""
    for name in ("gpu02", "gpu04"):
        if "DRAIN" in slurm.state_of(name)[0]:
            slurm.set_state(name, "RESUME")  # whatever an earlier test left
    wide = cli("sweep", "--slurm-partition", "gpu,debug", "--exclude", "gpu03", *ssh_args(sshd_cluster),
               "--drain-on", "reboot_node", "--format", "json")
    assert wide.returncode == 2, wide.stderr
    doc = json.loads(wide.stdout)
    assert {h["host"]: h["action"] for h in doc["hosts"]} == {"gpu01": "none", "gpu02": "reset_gpu",
                                                              "gpu04": "reboot_node"}
    assert [(a["node"], a["reason"]) for a in doc["slurm"]["actions"]] == [
        ("gpu04", "gpudiag: reboot_node: DRIVER_ERROR")]
    assert doc["slurm"]["drain_on"] == "reboot_node"

    done = cli("sweep", "--slurm-nodelist", "gpu[01-02]", *ssh_args(sshd_cluster), "--drain-on", "reset_gpu",
               "--yes")
    assert done.returncode == 2, done.stderr
    assert "done: drain gpu02 (action reset_gpu, at least reset_gpu)" in done.stdout
    assert "gpu02  action: reset_gpu" in done.stdout  # the table says it too
    assert slurm.state_of("gpu02") == ("IDLE+DRAIN", "gpudiag: reset_gpu: ECC_UNCORRECTED gpu 1")
    assert slurm.state_of("gpu01")[0] in ("IDLE", "IDLE+NOT_RESPONDING")
    resumed = cli("undrain", "--slurm-nodelist", "gpu02", *ssh_args(sshd_cluster), "--drain-on", "replace_gpu",
                  "--yes")  # gpu02 needs a reset, less than replace_gpu: it resumes on that level
    assert resumed.returncode == 0, resumed.stderr
    assert slurm.state_of("gpu02")[0] in ("IDLE", "IDLE+NOT_RESPONDING")
    bad = cli("sweep", "--slurm-partition", "gpu", "--drain-on", "reboot")
    assert bad.returncode == 3 and "reset_gpu" in bad.stderr and "reboot_node" in bad.stderr


def test_sweep_with_history_records_and_drains(slurm: SlurmCluster, sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # The Slurm step runs first (drain, each node's state), then the audit step records and writes that report.
    history, report = tmp_path / "state" / "history.sqlite", tmp_path / "report.json"
    args = ("sweep", "--slurm-nodelist", "gpu[01-02]", *ssh_args(sshd_cluster), "--drain-on", "critical", "--yes",
            "--history", str(history))
    first = cli(*args, "--format", "json", "--output", str(report))
    assert first.returncode == 2, first.stderr
    doc = json.loads(report.read_text())  # the report goes to --output; stdout has one summary line
    assert first.stdout.startswith(f"wrote {report}: ") and first.stdout.count("\n") == 1
    assert doc["history"] == {"run": 1}
    # The first recorded run: every finding is new, and the changes block lists each of them in one list.
    opened = sorted(f["fingerprint"] for h in doc["hosts"] for f in h["findings"])
    assert sorted(c["fingerprint"] for c in doc["changes"]["changes"] if c["change"] == "new") == opened
    assert {c["change"] for c in doc["changes"]["changes"]} == {"new"}
    (drain,) = doc["slurm"]["actions"]
    assert (drain["node"], drain["action"], drain["done"]) == ("gpu02", "drain", True)
    assert {h["host"]: h["scheduler_state"] for h in doc["hosts"]} == {"gpu01": "idle", "gpu02": "idle"}
    assert "gpudiag: done: drain gpu02" in first.stderr
    assert slurm.state_of("gpu02") == ("IDLE+DRAIN", drain["reason"])

    again = cli(*args, "--only-changes")  # nothing new: stdout silent; the exit code still says the state
    assert (again.returncode, again.stdout) == (2, ""), again.stderr
    assert all(line.startswith("gpudiag: ") for line in again.stderr.splitlines())
    runs = json.loads(cli("history", str(history), "--format", "json").stdout)
    assert [r["run"] for r in runs] == [2, 1]
    assert slurm.state_of("gpu02") == ("IDLE+DRAIN", drain["reason"])


def test_a_slurm_selection_changes_nothing_for_the_nodes_it_did_not_select(slurm: SlurmCluster, sshd_cluster,  # type: ignore[no-untyped-def]
                                                                          tmp_path: Path) -> None:
    """A run of partition debug (gpu04) after one of gpu[01-02]: gpu01/gpu02's findings are neither resolved
    nor carried; a run of gpu[01-02] again reports no change, gpu02's streak went on."""
    history = tmp_path / "history.sqlite"
    base = ("sweep", *ssh_args(sshd_cluster), "--history", str(history), "--only-changes")
    first = cli(*base, "--slurm-nodelist", "gpu[01-02]")
    assert first.returncode == 2 and "gpu02" in first.stdout, first.stderr
    other = cli(*base, "--slurm-partition", "debug")
    assert "RESOLVED" not in other.stdout and "gpu02" not in other.stdout, other.stdout
    again = cli(*base, "--slurm-nodelist", "gpu[01-02]")
    assert (again.returncode, again.stdout) == (2, ""), again.stderr
    runs = json.loads(cli("history", str(history), "--format", "json").stdout)
    assert [r["selection"] for r in runs] == ["--slurm-nodelist gpu[01-02]", "--slurm-partition debug",
                                              "--slurm-nodelist gpu[01-02]"]
    rows = json.loads(cli("history", str(history), "--host", "gpu02", "--format", "json").stdout)
    assert rows[0]["run"] == 3 and {f["runs"] for r in rows if r["run"] == 3 for f in r["findings"]} == {2}


def test_bad_slurm_flags_are_one_line(slurm: SlurmCluster, sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    bad = cli("sweep", "--slurm-partition", "nope", *ssh_args(sshd_cluster))
    assert (bad.returncode, bad.stderr) == (3, "gpudiag: --slurm-partition nope: no such partition (or it has no "
                                                "nodes)\n")
    bad = cli("sweep", "--slurm-partition", "gpu", "--drain-on", "often")  # a choice: typer's usage error
    assert bad.returncode == 3 and "'often' is not one of 'critical', 'warning'" in bad.stderr
    bad = cli("sweep", "gpu01", "--drain-on", "critical")
    assert bad.returncode == 3 and bad.stderr.startswith("gpudiag: --drain-on needs the nodes from Slurm")


def test_job_array_shards_merge_into_one_sweep(slurm: SlurmCluster, sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    hosts = sshd_cluster.extra_hosts(6) + sshd_cluster.hosts("ecc")
    inventory = tmp_path / "fleet.yaml"
    inventory.write_text(f"{sshd_cluster.inventory_defaults()}hosts:\n"
                         + "".join(f"  {h.name}: {{address: {h.address}}}\n" for h in hosts))
    script = tmp_path / "sweep.sh"  # the arguments travel as "$@": nothing is pasted into a shell
    script.write_text('#!/bin/sh\nexec "$@"\n')
    job = slurm.run("sbatch", "--parsable", "--array=0-1", "-p", "gpu", "-o", str(tmp_path / "part-%a.json"),
                    "-e", str(tmp_path / "part-%a.err"), str(script), sys.executable, "-m", "gpudiag",
                    "sweep", "-i", str(inventory), "--samples", "1", "--interval", "0", "--shard", "auto",
                    "--format", "json").stdout.strip()
    slurm.wait_job(job)
    parts = sorted(tmp_path.glob("part-*.json"))
    assert len(parts) == 2, [p.read_text() for p in tmp_path.glob("part-*.err")]
    for index, part in enumerate(parts, start=1):
        swept = [h["host"] for h in json.loads(part.read_text())["hosts"]]
        err = (tmp_path / f"part-{index - 1}.err").read_text()
        assert swept == [h.name for h in select_shard(hosts, index, 2)], err
    merged = cli("merge", *map(str, parts), "--format", "json")
    assert merged.returncode == 2, merged.stderr  # the ecc node
    assert sorted(h["host"] for h in json.loads(merged.stdout)["hosts"]) == sorted(h.name for h in hosts)


def connected(address: str, port: int) -> bool:
    """Whether a TCP connection to ``address:port`` is established (from /proc/net/tcp: no tools needed)."""
    end = "".join(f"{int(b):02X}" for b in reversed(address.split("."))) + f":{port:04X}"
    rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return any(end in row.split()[1:3] and row.split()[3] == "01" for row in rows)  # 01: ESTABLISHED


def test_a_node_drained_by_someone_else_during_the_sweep_keeps_their_reason(slurm: SlurmCluster, sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    args = [*ssh_args(sshd_cluster)]
    args[args.index("--samples") + 1], args[args.index("--interval") + 1] = "6", "1"  # a sweep of about 5 s
    sweep = subprocess.Popen([sys.executable, "-m", "gpudiag", "sweep", "--slurm-nodelist", "gpu02", *args,
                              "--drain-on", "critical", "--yes", "--format", "json"], cwd=REPO, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    node = sshd_cluster.address_of("ecc")
    # Slurm was asked before gpudiag connects: once it holds an SSH connection to the node, drain it "by hand".
    slurm.wait_for(lambda: sweep.poll() is not None or connected(node, sshd_cluster.port), "SSH connection", 60)
    assert sweep.poll() is None, "the sweep ended before the node was drained by hand"
    slurm.set_state("gpu02", "DRAIN", "someone: hands off")  # while gpudiag samples the node
    out, err = sweep.communicate(timeout=120)
    assert sweep.returncode == 2, err
    (action,) = json.loads(out)["slurm"]["actions"]
    assert (action["action"], action["why"]) == ("leave", "already drained by someone else: someone: hands off")
    assert slurm.state_of("gpu02") == ("IDLE+DRAIN", "someone: hands off")
