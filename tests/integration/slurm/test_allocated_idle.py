"""GPU_ALLOCATED_IDLE against the real Slurm of CI: a job given two GRES GPUs (stand-in device files) on the node
that plays the loopback sshd's ``idle`` node (8 GPUs at 0%, no process), swept through ``--slurm-job``; and a
Slurm that cannot list its jobs, which the sweep survives in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_cluster import SlurmCluster

pytestmark = [pytest.mark.integration, pytest.mark.slurm]
REPO = Path(__file__).resolve().parents[3]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpudiag", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=120, env=env)


def ssh_args(sshd_cluster) -> tuple[str, ...]:  # type: ignore[no-untyped-def]
    return ("-u", sshd_cluster.user, "-p", str(sshd_cluster.port), "--identity-file", str(sshd_cluster.client_key),
            "--known-hosts", str(sshd_cluster.known_hosts), "--samples", "2", "--interval", "0")


def submit(slurm: SlurmCluster, *args: str) -> str:
    """A job that sleeps, submitted with ``args``; its id once it runs."""
    job = slurm.run("sbatch", "--parsable", "-D", "/tmp", "-o", "/dev/null", "-e", "/dev/null", *args,
                    "--wrap", "sleep 300").stdout.strip()
    slurm.wait_for(lambda: slurm.run("squeue", "-h", "-j", job, "-o", "%T").stdout.strip() == "RUNNING",
                   f"job {job} running")
    return job


def field(slurm: SlurmCluster, job: str, key: str) -> str:
    text = slurm.run("scontrol", "show", "job", "-o", job).stdout
    return next(token.split("=", 1)[1] for token in text.split() if token.startswith(f"{key}="))


def test_allocated_idle_gpus_named_with_job_user_and_start(slurm: SlurmCluster, sshd_cluster,  # type: ignore[no-untyped-def]
                                                            tmp_path: Path) -> None:
    # As another user than the one who runs gpudiag: the finding names the job's owner, from Slurm.
    job = submit(slurm, "--uid=nobody", "-p", "gpu", "-w", "gpu03", "--gres=gpu:2", "-J", "idle-train")
    busy = submit(slurm, "-p", "gpu", "-w", "gpu01", "--gres=gpu:8")  # gpu01 plays a healthy, busy node
    started = field(slurm, job, "StartTime")
    done = cli("sweep", "--slurm-partition", "gpu", *ssh_args(sshd_cluster), "--format", "json")
    assert done.returncode == 2, done.stderr  # gpu02 plays the ecc node
    assert "Slurm" not in done.stderr, done.stderr  # the allocations were read: nothing to say
    doc = json.loads(done.stdout)
    found = [(h["host"], f) for h in doc["hosts"] for f in h["findings"] if f["code"] == "GPU_ALLOCATED_IDLE"]
    assert [(host, f["gpu"]) for host, f in found] == [("gpu03", 0), ("gpu03", 1)]  # its 2 of the node's 8
    for _, f in found:
        assert (f["evidence"]["job_id"], f["evidence"]["user"], f["evidence"]["started_at"]) == (job, "nobody",
                                                                                                  started)
        assert f["evidence"]["job_name"] == "idle-train" and f["action"] == "watch"
        assert f"given to Slurm job {job} (idle-train) of user nobody, running since {started}" in f["summary"]
    assert busy not in {f["evidence"]["job_id"] for _, f in found}

    # The job's own node, twice with --history, in the table: the second run says for how long.
    history = ("--history", str(tmp_path / "history.sqlite"))
    first = cli("sweep", "--slurm-job", job, *ssh_args(sshd_cluster), *history)
    assert first.returncode == 1 and "so for" not in first.stdout, first.stderr
    again = cli("sweep", "--slurm-job", job, *ssh_args(sshd_cluster), *history)
    assert again.returncode == 1, again.stderr
    text = " ".join(again.stdout.split())  # the sentence wraps
    assert "GPU_ALLOCATED_IDLE" in text and f"Slurm job {job} (idle-train) of user nobody" in text
    assert "; so for 2 runs over 0.0 h (since " in text


def test_a_slurm_that_cannot_list_its_jobs_is_one_line_and_the_sweep_goes_on(slurm: SlurmCluster, sshd_cluster,  # type: ignore[no-untyped-def]
                                                                              tmp_path: Path) -> None:
    """squeue failing as it does when slurmctld does not answer it (sinfo, which chose the nodes, still works):
    one line on stderr, the report as without allocations, and its note in the JSON."""
    submit(slurm, "-p", "gpu", "-w", "gpu03", "--gres=gpu:2")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    squeue = bin_dir / "squeue"
    squeue.write_text("#!/bin/sh\necho 'squeue: error: Unable to contact slurm controller (connect failure)' >&2\n"
                      "exit 1\n")
    squeue.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = cli("sweep", "--slurm-nodelist", "gpu03", *ssh_args(sshd_cluster), "--format", "json", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ("gpudiag: Slurm's GPU allocations were not read (the running jobs: squeue says: squeue: "
                           "error: Unable to contact slurm controller (connect failure)): this sweep cannot tell "
                           "GPU_ALLOCATED_IDLE\n")
    doc = json.loads(done.stdout)
    assert [(h["host"], h["status"], h["findings"]) for h in doc["hosts"]] == [("gpu03", "ok", [])]
