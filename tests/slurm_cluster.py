"""A real one-machine Slurm cluster on loopback for the tests: :func:`running_slurm`.

Debian's ``slurm-wlm`` (slurmctld, one slurmd per node) and ``munge``, all started in a private temporary
folder: its own ``slurm.conf`` (found through ``SLURM_CONF``), state, spool and log folders, its own munge key
and socket (``AuthInfo=socket=...``), so nothing in ``/etc/slurm`` or ``/etc/munge`` is read or touched.
Several nodes run on this one host, as Slurm's multiple-slurmd setup does: one ``NodeName`` line per node,
each with its own ``Port`` and a ``NodeAddr`` on 127.0.0.0/8, and one ``slurmd -N <node>`` per node. The
``NodeAddr`` of a node is the loopback address of the simulated GPU node it stands for (``127.0.0.2`` plays
``healthy`` in :mod:`loopback`), so gpudiag can reach a Slurm node through the loopback sshd.

``proctrack/linuxproc`` and ``task/none`` keep slurmd away from cgroups (a container has none to give).
Each node has 8 GRES GPUs (``Gres=gpu:8``) on stand-in device files: ``gres.conf`` names
``<root>/dev/nvidia[0-7]``, plain files (slurmd only needs the paths to exist; with ``task/none`` nothing
constrains a device), so a job given ``--gres=gpu:2`` gets GPU indexes as on a real GPU node and
``scontrol show job -d`` prints them (``GRES=gpu:2(IDX:0-1)``).
munged runs as the ``munge`` user, as it wants to; Slurm's daemons run as root (``SlurmUser=root``), so a
test running as root can submit jobs. A missing package raises :class:`SlurmUnavailable` (the fixture skips).

Standard library only, and nothing from pytest.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("scontrol", "sinfo", "sbatch", "squeue", "scancel")
SBIN = ("/usr/sbin", "/usr/local/sbin", "/sbin")
GPUS_PER_NODE = 8  # GRES GPUs of each node, on stand-in device files


class SlurmUnavailable(RuntimeError):
    """Slurm or munge is not installed here, or cannot start (the message says which)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SlurmCluster:
    """A running cluster: its config file, the environment its commands need, and its nodes."""

    conf: Path
    root: Path
    nodes: Mapping[str, str]  # node name -> NodeAddr (a loopback address)
    partitions: Mapping[str, tuple[str, ...]]

    @property
    def env(self) -> dict[str, str]:
        """This process's environment plus ``SLURM_CONF`` pointing at the cluster's config."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client command (argv, no shell) against this cluster."""
        return subprocess.run(list(argv), env=self.env, capture_output=True, text=True, check=check,
                              timeout=timeout)

    def state_of(self, node: str) -> tuple[str, str | None]:
        """(State, Reason) as ``scontrol show node`` prints them: ``("IDLE+DRAIN", "gpudiag: ...")``."""
        fields = self.run("scontrol", "show", "node", "-o", node).stdout
        state = reason = None
        for token in fields.split(" "):
            if token.startswith("State="):
                state = token[len("State="):]
        if " Reason=" in fields:
            reason = fields.split(" Reason=", 1)[1].split(" [", 1)[0].strip()
        return state or "", reason

    def reset(self, timeout_s: float = 30.0) -> None:
        """Cancel every job (of any user: a test may submit as another) and resume every drained node; wait
        until all nodes are idle again."""
        jobs = self.run("squeue", "-h", "-o", "%A", check=False).stdout.split()
        if jobs:
            self.run("scancel", "--full", *jobs, check=False)
        for node in self.nodes:
            state, _ = self.state_of(node)
            if "DRAIN" in state or "DOWN" in state:
                self.set_state(node, "RESUME")
        _wait(lambda: all(self.state_of(n)[0] == "IDLE" for n in self.nodes)
              and not self.run("squeue", "-h").stdout.strip(), "the nodes did not come back idle", timeout_s,
              (self.root / "log" / "slurmctld.log",))

    def wait_for(self, condition: object, what: str, timeout_s: float = 30.0) -> None:
        """Wait until ``condition()`` holds; a ``SlurmUnavailable`` with slurmctld's last lines when not."""
        _wait(condition, f"no {what}", timeout_s, (self.root / "log" / "slurmctld.log",))

    def wait_job(self, job: str, timeout_s: float = 60.0) -> None:
        """Wait until ``job`` (all its array tasks) has left the queue."""
        _wait(lambda: not self.run("squeue", "-h", "-j", job, check=False).stdout.strip(),
              f"job {job} did not finish", timeout_s, (self.root / "log" / "slurmctld.log",))

    def set_state(self, node: str, state: str, reason: str | None = None) -> None:
        argv = ["scontrol", "update", f"NodeName={node}", f"State={state}"]
        if reason is not None:
            argv.append(f"Reason={reason}")
        self.run(*argv)


def _which(name: str) -> str | None:
    return shutil.which(name) or next((f"{d}/{name}" for d in SBIN if os.access(f"{d}/{name}", os.X_OK)), None)


def _free_ports(count: int) -> list[int]:
    """``count`` TCP ports that are free on loopback now (held open together, so they differ)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _conf(root: Path, nodes: Mapping[str, str], partitions: Mapping[str, tuple[str, ...]],
          ctld_port: int, node_ports: list[int], host: str) -> str:
    lines = [
        "# written by tests/slurm_cluster.py for one test session",
        "ClusterName=gpudiagtest",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={root}/munge/munge.socket",
        f"StateSaveLocation={root}/state",
        f"SlurmdSpoolDir={root}/spool/%n",
        f"SlurmctldPidFile={root}/run/slurmctld.pid",
        f"SlurmdPidFile={root}/run/slurmd-%n.pid",
        f"SlurmctldLogFile={root}/log/slurmctld.log",
        f"SlurmdLogFile={root}/log/slurmd-%n.log",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "MpiDefault=none",
        "SwitchType=switch/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "ReturnToService=2",
        "SlurmdTimeout=300",
        "InactiveLimit=0",
        "KillWait=5",
        "MinJobAge=300",
        "GresTypes=gpu",
    ]
    for (name, address), port in zip(nodes.items(), node_ports, strict=True):
        lines.append(f"NodeName={name} NodeHostname={host} NodeAddr={address} Port={port} CPUs=1 "
                     f"RealMemory=100 Gres=gpu:{GPUS_PER_NODE} State=UNKNOWN")
    for index, (name, members) in enumerate(partitions.items()):
        lines.append(f"PartitionName={name} Nodes={','.join(members)} Default={'YES' if index == 0 else 'NO'} "
                     "MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def _wait(condition: object, what: str, timeout_s: float, logs: tuple[Path, ...] = ()) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.1)
    tails = "; ".join(f"{p.name}: {' | '.join(p.read_text(errors='replace').splitlines()[-5:])}"
                      for p in logs if p.exists())
    raise SlurmUnavailable(f"{what} within {timeout_s:.0f} s ({tails or 'no log'})")


def _stop(pid_files: list[Path]) -> None:
    """SIGTERM to every daemon at once, then wait (up to 10 s) for each and SIGKILL what is left."""
    pids = []
    for pid_file in pid_files:
        with contextlib.suppress(OSError, ValueError, IndexError):
            pid = int(pid_file.read_text().split()[0])
            os.kill(pid, signal.SIGTERM)
            pids.append(pid)
    deadline = time.monotonic() + 10
    for pid in pids:
        with contextlib.suppress(OSError):
            while time.monotonic() < deadline:
                os.kill(pid, 0)  # raises once it is gone
                time.sleep(0.05)
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def running_slurm(nodes: Mapping[str, str], partitions: Mapping[str, tuple[str, ...]]) -> Iterator[SlurmCluster]:
    """Start munged, slurmctld and one slurmd per node; stop them all and remove the folder at the end.

    ``nodes`` maps each node name to its ``NodeAddr`` (on 127.0.0.0/8); ``partitions`` maps a partition name
    to its nodes (the first is the default partition).
    """
    missing = [name for name in DAEMONS + CLIENTS if _which(name) is None]
    if missing:
        raise SlurmUnavailable(f"Slurm/munge not installed (no {', '.join(missing)}): "
                               "apt-get install slurm-wlm munge")
    if os.geteuid() != 0:
        raise SlurmUnavailable("the Slurm test cluster needs root (munged runs as the munge user, slurmd as root)")
    try:
        munge_user = pwd.getpwnam("munge")
    except KeyError:
        raise SlurmUnavailable("no 'munge' user (the munge package creates it)") from None
    # Not under pytest's tmp_path: its parents are 0700 root, and munged (as munge) must reach its folder.
    root = Path(tempfile.mkdtemp(prefix="gpudiag-slurm-"))
    root.chmod(0o711)
    started: list[Path] = []
    try:
        for sub in ("state", "spool", "run", "log", "dev"):
            (root / sub).mkdir()
        for index in range(GPUS_PER_NODE):  # the GPUs' device files: plain files stand in for /dev/nvidiaN
            (root / "dev" / f"nvidia{index}").touch()
        (root / "gres.conf").write_text(f"Name=gpu File={root}/dev/nvidia[0-{GPUS_PER_NODE - 1}]\n")
        munge_dir = root / "munge"
        munge_dir.mkdir(mode=0o700)
        key = munge_dir / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        for path in (munge_dir, key):
            os.chown(path, munge_user.pw_uid, munge_user.pw_gid)
        munge_dir.chmod(0o711)  # clients (root, and job steps) reach the socket; the key stays 0400 munge
        subprocess.run(
            ["runuser", "-u", "munge", "--", _which("munged"), f"--key-file={key}",
             f"--socket={munge_dir}/munge.socket", f"--pid-file={munge_dir}/munged.pid",
             f"--log-file={munge_dir}/munged.log", f"--seed-file={munge_dir}/munged.seed"],
            check=True, capture_output=True, text=True, timeout=30)
        started.append(munge_dir / "munged.pid")

        host = socket.gethostname().split(".")[0]
        ports = _free_ports(len(nodes) + 1)
        conf = root / "slurm.conf"
        conf.write_text(_conf(root, nodes, partitions, ports[0], ports[1:], host))
        cluster = SlurmCluster(conf=conf, root=root, nodes=dict(nodes), partitions=dict(partitions))
        env = cluster.env
        subprocess.run([_which("slurmctld"), "-f", str(conf)], env=env, check=True, capture_output=True,
                       text=True, timeout=30)
        started.append(root / "run" / "slurmctld.pid")
        for name in nodes:
            subprocess.run([_which("slurmd"), "-f", str(conf), "-N", name], env=env, check=True,
                           capture_output=True, text=True, timeout=30)
            started.append(root / "run" / f"slurmd-{name}.pid")

        def all_idle() -> bool:
            out = cluster.run("sinfo", "-h", "-N", "-o", "%N %t", check=False)
            states = dict(line.split() for line in out.stdout.splitlines() if line.strip())
            return out.returncode == 0 and all(states.get(n) == "idle" for n in nodes)

        _wait(all_idle, "the Slurm nodes did not all come up idle", 60,
              tuple(sorted((root / "log").glob("*.log"))) + (munge_dir / "munged.log",))
        yield cluster
    except subprocess.CalledProcessError as exc:
        raise SlurmUnavailable(f"{Path(exc.cmd[0]).name} did not start: {(exc.stderr or '').strip()[-300:]}") from exc
    finally:
        _stop(started)
        shutil.rmtree(root, ignore_errors=True)
