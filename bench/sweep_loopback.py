"""How fast gpudiag sweeps N hosts over real SSH, next to pdsh and clush on the same hosts. Prints numbers only.

Run from the repository root (needs OpenSSH's sshd and ssh; pdsh and clush are optional)::

    python3 bench/sweep_loopback.py                  # 100 hosts (about a minute on 2 cores)
    python3 bench/sweep_loopback.py --sizes 100,300,1000 [--call-ms 33]
    python3 bench/sweep_loopback.py --sizes 300 --profile wall   # where gpudiag's client time goes

For each size N it starts :func:`loopback.running_cluster` with N healthy simulated nodes
(127.0.1.1, 127.0.1.2, ...: one real ``sshd`` per 16 addresses, the fake ``nvidia-smi`` on each, every call
lasting at least ``--call-ms``: by default an H200's 33 ms, from ``bench/node_cost.py``) and runs, one after
the other, on the same hosts with the same key, port and ``known_hosts``:

- ``gpudiag CLI``: ``python3 -m gpudiag sweep -i INVENTORY --format json`` as a subprocess (Python start-up
  included) with ``--samples 1 --interval 0`` (one reading, comparable to one nvidia-smi call), at its default
  fan-out and at the peers' 64; up to 300 hosts also with the default window (5 samples 0.5 s apart: 2 s), at
  fan-out 64 (256 collectors at once, all on these 2 cores, would outlast the 30 s deadline);
- ``gpudiag in-process``: :func:`gpudiag.sweep.runner.sweep` with :class:`gpudiag.transport.ssh.SshTransport`
  (``SshOptions(ssh_config=[], connect_timeout_s=10)``) inside this process, one sample: the same sweep
  without interpreter start-up, imports and report rendering (the CLI rows minus this row is that overhead);
- ``gpudiag watch``: :func:`gpudiag.sweep.watch.watch` inside this process, 4 refreshes of one sample with no pause:
  the first refresh (connections opened, one collector started per host) and the mean of the later ones
  (connections and collectors kept: a refresh is one line each way per host). Its sshd-side CPU is the whole
  machine's busy CPU less the client's: kept sessions are not reaped, so the sshd listeners' accounts do not
  show them, and a collector that outlives its session is reaped by init. The machine is otherwise idle (the
  other rows' ``other s`` shows how idle). A line compares a later refresh with the in-process sweep;
- the same in-process sweep with asyncssh's own cipher order (chacha20-poly1305 first) instead of gpudiag's
  AES-GCM first (``SshOptions.encryption_algs``): what the cipher order changes in the client's CPU;
- ``asyncssh floor``: ``bench/asyncssh_floor.py`` as a subprocess, a minimal asyncssh client that connects to
  each host, runs the peers' query, reads it and closes, with gpudiag's fan-out (256), key exchange (asyncssh's
  default, which settles on curve25519-sha256 with OpenSSH) and cipher order; and again with chacha20 first.
  Its client CPU per host is the floor of any asyncssh sweep;
- ``pdsh -R ssh`` and ``clush`` running one ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits``
  per host through OpenSSH's ``ssh`` (one ssh process per host), at fan-out 64 and at their defaults, each
  with OpenSSH's default key exchange (post-quantum: sntrup761x25519 in 9.2, mlkem768x25519 from 10.0)
  and with ``-o KexAlgorithms=curve25519-sha256`` (pdsh's ssh module appends PDSH_SSH_ARGS_APPEND to its ssh
  command line, clush passes ``-o``), the exchange gpudiag's asyncssh negotiates. A line per client says what
  it really negotiated with these sshds (``ssh -v`` for the peers, asyncssh's debug log for gpudiag);
- a dead host (a TCP listener that accepts and never speaks) swept alone with ``--connect-timeout 2``, and the
  N healthy hosts plus that dead host together.

Columns of the table printed per size:

- ``fan-out``: hosts in flight (``--concurrency``/``-f``); "(default)" marks each tool's own default;
- ``wall s``: elapsed seconds, start of the command to its exit;
- ``CPU s``: user + system CPU of the client with every descendant it reaped (pdsh's and clush's ssh
  processes): GNU ``/usr/bin/time``'s ``%U + %S`` (else ``os.wait4``); in-process, ``getrusage`` SELF +
  CHILDREN deltas;
- ``ms/host``: that CPU divided by N;
- ``RSS 1p``: peak resident memory of the largest single client process, MiB: ``/usr/bin/time``'s ``%M``
  (else ``ru_maxrss`` of ``os.wait4``, which on Linux reports at least this benchmark's own RSS, inherited
  across fork and exec); in-process, this process's ``VmHWM`` reset just before the sweep (so it includes the
  benchmark itself and its imports);
- ``RSS sum``: peak of the summed RSS of the client's whole process tree, MiB, sampled every 0.2 s from /proc
  (pdsh and clush hold one ssh process per host in flight, which ``RSS 1p`` does not add up; sampling can
  miss a short peak, so it may read below ``RSS 1p``); "-" in-process;
- ``ok``: hosts that answered (gpudiag: status ``ok`` in the JSON; pdsh/clush: distinct host prefixes in
  the output);
- ``wall x`` / ``CPU x``: this row divided by the reference row, gpudiag CLI with one sample at its default
  fan-out (above 1: slower or costlier than gpudiag);
- ``sshd ms/host``: that divided by N;
- ``sshd CPU s``: CPU the server side spent for this run (the sshd listeners' reaped children: sshd sessions,
  shells, ``python3`` collectors, fake ``nvidia-smi`` processes), from /proc/<pid>/stat cutime + cstime;
- ``busy %``: (client CPU + sshd CPU) / (wall x cores). Near 100 %, client and server compete for the same
  cores and the side with the bigger CPU share is what to make cheaper;
- ``other s``: CPU the rest of the machine used meanwhile (/proc/stat busy time minus client CPU and sshd CPU:
  this benchmark's own sampling, and anything else running). Much above 0, the run was disturbed and a
  warning line says so.

Also printed: first, what a simulated node's commands cost alone (``bench/node_cost.py --stub`` with the same
``--call-ms``, 20 runs each); per size, a summary of the targets: gpudiag's client CPU per host against the
asyncssh floor's (gpudiag CLI / floor, target at most 1.5), pdsh's and clush's with each key exchange against
gpudiag's (target at least 3 with curve25519), AES-GCM against chacha20 first, and the node side per host:
the sshd side of the sweep (sshd, shell, collector or query) and the node's command alone (the collector
against the peers' one nvidia-smi call, target at most 1.5x). The start-up of ``python3 -c pass`` and of
``python3 -m gpudiag --help`` (median of 5 runs); one "bottleneck" line per row (CPU-bound when busy
> 75 %, and which side used most of the CPU); the dead host alone (wall time against the connect timeout) and
the N healthy hosts plus the dead host in one sweep (wall time against max(dead host alone, healthy sweep),
which it should be close to, and against connect timeout + healthy sweep, which it should not be). "sshd
could not serve N hosts" means the cluster did not come up at that size; an ``ok`` below N/N means some hosts
did not answer that tool.

``--workers-ab VARIANTS`` runs none of this either: only the gpudiag CLI with one sample at its default fan-out,
once per variant (comma-separated: a ``--workers`` count, then any other sweep flags), ``--rounds`` times (the
order reversed each round), with the load average before and after::

    python3 bench/sweep_loopback.py --sizes 1000 --workers-ab '1,2,2 --connect-rate 50/s'


``--cipher-ab PAIRS`` runs none of this either: only the in-process sweep and the floor, with each cipher
order, PAIRS times alternating, with the mean and spread of their client CPU per host.

``--profile wall|cpu`` runs none of this: at each size it sweeps in-process (one sample) and renders the
table and the JSON, first timed, then under cProfile (by package or module, then the top functions), and
times the JSON encoders (``json.dumps`` with and without indent, ``orjson`` where installed) on that report.

Client and servers share this machine, so these numbers are about relative cost, not about a real cluster,
where each node's share runs on its own CPU. Nothing here is asserted by any test.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import importlib.util
import json
import logging
import os
import re
import resource
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the loopback sshd cluster (tests/loopback.py)

from node_cost import COLLECTOR, PEERS_QUERY, QUERY, NodeCost, cost_table, node_costs, stub_env  # noqa: E402

from gpudiag.model import Host, HostStatus, SweepReport  # noqa: E402
from gpudiag.sweep.runner import SweepOptions, sweep  # noqa: E402
from gpudiag.sweep.watch import watch  # noqa: E402
from gpudiag.transport.base import RemoteCommand  # noqa: E402
from gpudiag.transport.ssh import ENCRYPTION_ALGS, SshOptions, SshTransport  # noqa: E402
from loopback import SshdCluster, SshdUnavailable, running_cluster  # noqa: E402

EQUAL_FAN_OUT = 64  # every tool at this fan-out, besides each at its own default
DEFAULT_FAN_OUT = {"gpudiag": 256, "pdsh": 32, "clush": 64}
# How long one nvidia-smi call lasts on the simulated nodes: the H200's median wall time for the peers' query
# (bench/node_cost.py on the device machine, driver 580.159.04, persistence mode on).
H200_CALL_MS = 33.0
WINDOW_MAX_HOSTS = 300  # the default 5-sample window costs 5 nvidia-smi calls a host: only up to this size
WATCH_REFRESHES = 4
DEAD_CONNECT_TIMEOUT_S = 2.0
FORCED_KEX = "curve25519-sha256"  # what asyncssh (so gpudiag) negotiates with OpenSSH, forced on the peers' ssh
CHACHA_FIRST = "default"  # asyncssh's own cipher order (chacha20-poly1305 first): gpudiag before AES-GCM first
NODE_COST_RUNS = 20
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
CORES = os.cpu_count() or 1
TIME = os.access("/usr/bin/time", os.X_OK)  # GNU time: the tool's own peak RSS (see run_measured)
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    """One measured run."""

    tool: str
    fan_out: str
    wall_s: float
    cpu_s: float
    rss_one_mib: float
    rss_sum_mib: float | None
    answered: int
    sshd_cpu_s: float
    other_cpu_s: float = 0.0  # busy CPU of the whole machine during the run, minus client and sshd side
    note: str = ""


# -- measuring ------------------------------------------------------------------------------------
def sshd_cpu_s(pids: Sequence[int]) -> float:
    """CPU of the sshd listeners and everything they reaped (utime + stime + cutime + cstime)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15])
    return total / TICK


def machine_busy_s() -> float:
    """CPU seconds this machine has spent busy (all cores, all processes), from /proc/stat."""
    with contextlib.suppress(OSError, ValueError):
        ticks = [int(t) for t in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return (sum(ticks[:8]) - ticks[3] - ticks[4]) / TICK  # all but idle and iowait (guest is in user)
    return 0.0


def _tree_rss_bytes(root: int) -> int:
    """Summed RSS of ``root`` and its descendants now, from /proc/<pid>/stat (ppid, rss in pages)."""
    parent: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()
            parent[int(entry.name)], rss[int(entry.name)] = int(fields[1]), int(fields[21])
    inside, total = {root}, 0
    for pid in sorted(parent):  # a child's pid is almost always above its parent's; re-walk to be sure
        chain, p = [], pid
        while p not in inside and p in parent and p > 1:
            chain.append(p)
            p = parent[p]
        if p in inside:
            inside.update(chain)
    for pid in inside:
        total += rss.get(pid, 0)
    return total * PAGE


class TreeSampler:
    """Samples the summed RSS of a process tree every ``period_s`` in a thread; ``peak_mib`` afterwards."""

    def __init__(self, root: int, period_s: float = 0.2) -> None:
        self.root, self.period_s, self.peak = root, period_s, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _tree_rss_bytes(self.root))
            self._stop.wait(self.period_s)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak / 2**20


def _sshd_settled(pids: Sequence[int], wait_s: float = 2.0) -> None:
    """Wait until the sshd listeners have reaped every session (their CPU counts only then)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            if not any(Path(f"/proc/{p}/task/{p}/children").read_text().strip() for p in pids):
                return
        except OSError:  # no /proc/<pid>/task/<pid>/children on this kernel: a fixed pause instead
            time.sleep(0.3)
            return
        time.sleep(0.02)


def run_measured(argv: Sequence[str], *, env: dict[str, str], sshd_pids: Sequence[int]
                 ) -> tuple[int, str, str, float, float, float, float, float, float]:
    """Run ``argv``; (exit code, stdout, stderr, wall s, CPU s, RSS 1p MiB, RSS sum MiB, sshd CPU s, other CPU s).

    Under GNU ``/usr/bin/time`` when there is one: a child forked straight from this (large) Python process
    would report this process's RSS as its own peak, since Linux keeps ``maxrss`` across fork and exec.
    """
    with tempfile.TemporaryDirectory() as tmp:
        out_path, err_path, usage_path = Path(tmp, "out"), Path(tmp, "err"), Path(tmp, "usage")
        wrapper = ["/usr/bin/time", "-o", str(usage_path), "-f", "%U %S %M"] if TIME else []
        _sshd_settled(sshd_pids)
        before = sshd_cpu_s(sshd_pids)
        busy_before = machine_busy_s()
        with out_path.open("wb") as out, err_path.open("wb") as err:
            started = time.monotonic()
            proc = subprocess.Popen([*wrapper, *argv], stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env)
            sampler = TreeSampler(proc.pid)
            _, status, usage = os.wait4(proc.pid, 0)  # this child's rusage, with every descendant it reaped
            wall = time.monotonic() - started
            busy = machine_busy_s() - busy_before
        rss_sum = sampler.stop()
        proc.returncode = os.waitstatus_to_exitcode(status)
        cpu, rss_one = usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024
        if TIME:
            with contextlib.suppress(OSError, ValueError):
                user, system, max_kib = usage_path.read_text().split()[-3:]
                cpu, rss_one = float(user) + float(system), int(max_kib) / 1024
        _sshd_settled(sshd_pids)
        sshd = sshd_cpu_s(sshd_pids) - before
        return (proc.returncode, out_path.read_text(errors="replace"), err_path.read_text(errors="replace"), wall,
                cpu, rss_one, rss_sum, sshd, max(0.0, busy - cpu - sshd))


def _reset_peak_rss() -> None:
    with contextlib.suppress(OSError):  # Linux >= 4.0: "5" resets VmHWM to the current RSS
        Path("/proc/self/clear_refs").write_text("5")


def _peak_rss_mib() -> float:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_now() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


# -- the contenders -------------------------------------------------------------------------------
def write_inventory(path: Path, cluster: SshdCluster, hosts: Sequence[Host]) -> Path:
    lines = [cluster.inventory_defaults() + "hosts:"]
    lines += [f"  {h.name}: {{address: {h.address}" + (f", port: {h.port}" if h.port != cluster.port else "") + "}"
              for h in hosts]
    path.write_text("\n".join(lines) + "\n")
    return path


# How the CLI is started: as ``python3 -m gpudiag`` (what a console script does, give or take runpy).
CLI = (sys.executable, "-m", "gpudiag")
# The default install (no extras): the same entry point with orjson made unimportable, as where it is not installed.
CLI_NO_ORJSON = (sys.executable, "-c", "import sys; sys.modules['orjson'] = None; sys.argv[0] = 'gpudiag'; "
                                       "from gpudiag.cli.entry import main; main()")


def gpudiag_cli(cluster: SshdCluster, inventory: Path, extra: Sequence[str], label: str,
                concurrency: int = DEFAULT_FAN_OUT["gpudiag"], event_loop: str = "asyncio", fmt: str = "json",
                entry: Sequence[str] = CLI) -> tuple[Row, dict[str, Any]]:
    """The CLI as a subprocess, ``--format fmt`` (json or table) to a pipe; with the table, the hosts that
    answered are read from its summary ("hosts  300: 300 ok") and the document returned is empty."""
    argv = [*entry, "--event-loop", event_loop, "sweep", "-i", str(inventory), "--format", fmt,
            "--concurrency", str(concurrency), *extra]
    code, out, err, wall, cpu, rss_one, rss_sum, sshd, other = run_measured(argv, env=ENV, sshd_pids=cluster.sshd_pids)
    try:
        doc = json.loads(out) if fmt == "json" else {"hosts": []}
    except json.JSONDecodeError:
        doc = {"hosts": []}
    answered = sum(1 for h in doc["hosts"] if h["status"] == "ok")
    if fmt != "json":
        said = re.search(r"^\s*hosts\s+\d+: (\d+) ok", out, re.MULTILINE)
        answered = int(said.group(1)) if said else 0
    note = "" if out else f"exit {code}: {err.strip().splitlines()[-1] if err.strip() else 'no output'}"
    note = note or not_ok(doc)
    return Row(tool=label, fan_out=_fan(concurrency, "gpudiag"), wall_s=wall, cpu_s=cpu, rss_one_mib=rss_one,
               rss_sum_mib=rss_sum, answered=answered, sshd_cpu_s=sshd, other_cpu_s=other, note=note), doc


def not_ok(doc: dict[str, Any]) -> str:
    """The hosts that did not answer ``ok`` and why, in a few words ("" when all did)."""
    hosts = doc.get("hosts")
    bad = [h for h in hosts if h["status"] != "ok"] if isinstance(hosts, list) else []
    reasons: dict[str, list[str]] = {}
    for h in bad:
        reasons.setdefault(f"{h['status']}: {h['error']}", []).append(f"{h['host']} after {h['duration_s']} s")
    said = [f"{len(who)} host(s) {why} ({', '.join(who[:3])})" for why, who in reasons.items()]
    return "; ".join(said[:3]) + (f"; and {len(said) - 3} more reason(s)" if len(said) > 3 else "")


def gpudiag_in_process(cluster: SshdCluster, hosts: Sequence[Host], samples: int, interval_s: float,
                       label: str, encryption_algs: str = ENCRYPTION_ALGS,
                       concurrency: int = DEFAULT_FAN_OUT["gpudiag"]) -> Row:
    options = SweepOptions(samples=samples, interval_s=interval_s, concurrency=concurrency)
    transport = SshTransport(SshOptions(ssh_config=[], connect_timeout_s=10, encryption_algs=encryption_algs))
    _sshd_settled(cluster.sshd_pids)
    _reset_peak_rss()
    before_sshd, before_busy = sshd_cpu_s(cluster.sshd_pids), machine_busy_s()
    before_cpu, started = _cpu_now(), time.monotonic()
    report = asyncio.run(sweep(list(hosts), transport, options))
    wall, cpu, busy = time.monotonic() - started, _cpu_now() - before_cpu, machine_busy_s() - before_busy
    _sshd_settled(cluster.sshd_pids)
    sshd = sshd_cpu_s(cluster.sshd_pids) - before_sshd
    bad = [h for h in report.hosts if h.status is not HostStatus.OK]
    note = "; ".join(f"{h.host} {h.status.value} after {h.duration_s} s: {h.error}" for h in bad[:3])
    return Row(tool=label, fan_out=_fan(options.concurrency, "gpudiag"), wall_s=wall, cpu_s=cpu,
               rss_one_mib=_peak_rss_mib(), rss_sum_mib=None, answered=len(report.hosts) - len(bad), sshd_cpu_s=sshd,
               other_cpu_s=max(0.0, busy - cpu - sshd), note=note)


def gpudiag_watch(cluster: SshdCluster, hosts: Sequence[Host], refreshes: int = WATCH_REFRESHES) -> list[Row]:
    """``gpudiag watch`` in this process, one sample a refresh, no pause between refreshes: the first refresh
    (connections opened, collectors started) and the mean of the later ones (both kept)."""
    options = SweepOptions(samples=1, interval_s=0.0, stream=True)
    transport = SshTransport(SshOptions(ssh_config=[], connect_timeout_s=10, keep_connections=True))
    _sshd_settled(cluster.sshd_pids)
    marks: list[tuple[float, float, float, int]] = []  # wall, client CPU, machine busy, hosts ok
    failed: list[str] = []

    def mark(report: SweepReport | None) -> None:
        ok = sum(1 for h in report.hosts if h.status is HostStatus.OK) if report else len(hosts)
        marks.append((time.monotonic(), _cpu_now(), machine_busy_s(), ok))
        if report is not None:
            failed.extend(f"refresh {len(marks) - 1}: {h.host} {h.status.value}: {h.error}"
                          for h in report.hosts if h.status is not HostStatus.OK)

    mark(None)
    asyncio.run(watch(list(hosts), transport, options, every_s=0.0, count=refreshes,
                      on_refresh=lambda _n, report, _change: mark(report)))
    steps = [(b[0] - a[0], b[1] - a[1], b[2] - a[2], b[3]) for a, b in zip(marks, marks[1:], strict=False)]
    rows = []
    for label, chosen in ((f"gpudiag watch, refresh 1 of {refreshes}", steps[:1]),
                          (f"gpudiag watch, refreshes 2-{refreshes}, mean", steps[1:])):
        wall, cpu, busy = (statistics.mean(s[i] for s in chosen) for i in range(3))
        rows.append(Row(tool=label, fan_out=_fan(options.concurrency, "gpudiag"), wall_s=wall, cpu_s=cpu,
                        rss_one_mib=_peak_rss_mib(), rss_sum_mib=None, answered=min(s[3] for s in chosen),
                        sshd_cpu_s=max(0.0, busy - cpu)))
    if failed:
        rows[-1] = dataclasses.replace(rows[-1], note=f"{len(failed)} host refresh(es) failed: {'; '.join(failed[:3])}")
    return rows


def _ssh_options(cluster: SshdCluster) -> str:
    return (f"-i {cluster.client_key} -p {cluster.port} -o UserKnownHostsFile={cluster.known_hosts} "
            "-o StrictHostKeyChecking=yes -o BatchMode=yes -F /dev/null -o IdentitiesOnly=yes "
            "-o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10")


def hostlist(addresses: Sequence[str]) -> str:
    """``127.0.1.[1-254],127.0.2.[1-46]``: contiguous addresses folded per /24, as pdsh and clush read them."""
    by_prefix: dict[str, list[int]] = {}
    for address in addresses:
        prefix, last = address.rsplit(".", 1)
        by_prefix.setdefault(prefix, []).append(int(last))
    return ",".join(f"{p}.[{min(n)}-{max(n)}]" for p, n in by_prefix.items())


def _distinct_hosts(out: str) -> int:
    return len({line.split(":", 1)[0] for line in out.splitlines() if line.count(",") >= 5})


def _peer_argv(tool: str, cluster: SshdCluster, addresses: Sequence[str], fan_out: int, kex: str | None,
               command: str = QUERY, verbose: bool = False) -> tuple[list[str], dict[str, str]]:
    """pdsh's or clush's command line and environment: their ssh gets its options from PDSH_SSH_ARGS_APPEND
    (pdsh's ssh rcmd module) or ``-o`` (clush); ``kex`` forces the key exchange, None keeps OpenSSH's."""
    options = _ssh_options(cluster) + (f" -o KexAlgorithms={kex}" if kex else "") + (" -v" if verbose else "")
    if tool == "pdsh":
        return (["pdsh", "-R", "ssh", "-w", hostlist(addresses), "-f", str(fan_out), "-u", "30", command],
                {**os.environ, "PDSH_SSH_ARGS_APPEND": options})
    return (["clush", "-w", hostlist(addresses), "-f", str(fan_out), "-o", options, "-u", "30", command],
            dict(os.environ))


def _peer_label(tool: str, kex: str | None) -> str:
    return f"{'pdsh -R ssh' if tool == 'pdsh' else 'clush'}, {kex or 'default kex'}"


def peer(tool: str, cluster: SshdCluster, addresses: Sequence[str], fan_out: int, kex: str | None) -> Row:
    """pdsh or clush running :data:`QUERY` on every host."""
    argv, env = _peer_argv(tool, cluster, addresses, fan_out, kex)
    code, out, err, wall, cpu, rss_one, rss_sum, sshd, other = run_measured(argv, env=env, sshd_pids=cluster.sshd_pids)
    note = f"exit {code}: {err.strip().splitlines()[0][:80]}" if code and err.strip() else ""
    return Row(tool=_peer_label(tool, kex), fan_out=_fan(fan_out, tool), wall_s=wall, cpu_s=cpu,
               rss_one_mib=rss_one, rss_sum_mib=rss_sum, answered=_distinct_hosts(out), sshd_cpu_s=sshd,
               other_cpu_s=other, note=note)


def asyncssh_floor(cluster: SshdCluster, hosts: Sequence[Host], encryption_algs: str, label: str,
                   fan_out: int = DEFAULT_FAN_OUT["gpudiag"]) -> Row:
    """``bench/asyncssh_floor.py`` as a subprocess: connect, run :data:`QUERY`, read it, close; gpudiag's
    fan-out, key exchange and (with ``ENCRYPTION_ALGS``) cipher order."""
    argv = [sys.executable, str(REPO / "bench" / "asyncssh_floor.py"), "--port", str(cluster.port),
            "--user", cluster.user, "--key", str(cluster.client_key), "--known-hosts", str(cluster.known_hosts),
            "--fan-out", str(fan_out), "--encryption-algs", encryption_algs, "--command", QUERY,
            *(h.target for h in hosts)]
    code, out, err, wall, cpu, rss_one, rss_sum, sshd, other = run_measured(argv, env=ENV, sshd_pids=cluster.sshd_pids)
    failed = [line for line in out.splitlines() if ": failed: " in line]
    note = f"exit {code}: {err.strip()[-200:]}" if code else "; ".join(failed[:3])
    return Row(tool=label, fan_out=_fan(fan_out, "gpudiag"), wall_s=wall, cpu_s=cpu, rss_one_mib=rss_one,
               rss_sum_mib=rss_sum, answered=_distinct_hosts(out), sshd_cpu_s=sshd, other_cpu_s=other, note=note)


def negotiated(cluster: SshdCluster, host: Host) -> list[str]:
    """The key exchange and cipher each client really negotiates with these sshds (one host, verbose)."""
    lines = []
    for tool in ("pdsh", "clush"):
        if shutil.which(tool) is None:
            continue
        for kex in (None, FORCED_KEX):
            argv, env = _peer_argv(tool, cluster, [host.target], 1, kex, command="true", verbose=True)
            done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=60)
            said = done.stdout + done.stderr
            found = [line.split("debug1: kex: ", 1)[1].split(" MAC:")[0] for line in said.splitlines()
                     if "debug1: kex: algorithm:" in line or "debug1: kex: client->server cipher:" in line]
            lines.append(f"  {_peer_label(tool, kex)}: {'; '.join(found) or 'not found in ssh -v'}")
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    logger, keep = logging.getLogger("asyncssh"), Keep()
    level = logger.level
    logger.addHandler(keep)
    logger.setLevel(logging.DEBUG)
    asyncssh.set_debug_level(2)
    try:
        transport = SshTransport(SshOptions(ssh_config=[], connect_timeout_s=10))
        asyncio.run(transport.run(host, RemoteCommand(command="true")))
    finally:
        logger.removeHandler(keep)
        logger.setLevel(level)
        asyncssh.set_debug_level(1)
    kexes = [r.split("Key exchange alg: ", 1)[1] for r in records if "Key exchange alg: " in r]
    cipher = [r.split("Encryption alg: ", 1)[1] for r in records if "Encryption alg: " in r]
    lines.append(f"  gpudiag (asyncssh): algorithm: {kexes[0] if kexes else '?'}; "
                 f"cipher: {cipher[0] if cipher else '?'}")
    return lines


def _fan(n: int, tool: str) -> str:
    return f"{n} (default)" if DEFAULT_FAN_OUT[tool] == n else str(n)


@contextlib.contextmanager
def silent_listener() -> Iterator[int]:
    """A TCP port that accepts and never says a word: a hung sshd or a black-holed host."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()


# -- reporting ------------------------------------------------------------------------------------
def table(rows: Sequence[Row], reference: Row, size: int) -> str:
    head = ("tool", "fan-out", "wall s", "CPU s", "ms/host", "RSS 1p", "RSS sum", "ok", "wall x", "CPU x",
            "sshd CPU s", "sshd ms/host", "busy %", "other s")
    body = []
    for r in rows:
        busy = 100 * (r.cpu_s + r.sshd_cpu_s) / (r.wall_s * CORES)
        body.append((r.tool, r.fan_out, f"{r.wall_s:.2f}", f"{r.cpu_s:.2f}", f"{1000 * r.cpu_s / size:.2f}",
                     f"{r.rss_one_mib:.0f}", "-" if r.rss_sum_mib is None else f"{r.rss_sum_mib:.0f}",
                     f"{r.answered}/{size}", f"{r.wall_s / reference.wall_s:.2f}",
                     f"{r.cpu_s / reference.cpu_s:.2f}", f"{r.sshd_cpu_s:.2f}", f"{1000 * r.sshd_cpu_s / size:.1f}",
                     f"{busy:.0f}", f"{r.other_cpu_s:.2f}"))
    widths = [max(len(str(x[i])) for x in (head, *body)) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" if i < 2 else f"{{:>{w}}}" for i, w in enumerate(widths))
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*b) for b in body]
    lines += [f"  note: {r.tool} @ {r.fan_out}: {r.note}" for r in rows if r.note]
    noisy = [r for r in rows if r.other_cpu_s > 0.1 * r.wall_s * CORES]
    if noisy:
        lines.append(f"  warning: other processes used over 10 % of the machine during {len(noisy)} run(s) "
                     f"({', '.join(f'{r.tool} @ {r.fan_out}' for r in noisy)}): those numbers are disturbed")
    return "\n".join(lines)


def bottleneck(rows: Sequence[Row]) -> list[str]:
    lines = []
    for r in rows:
        share = r.sshd_cpu_s / max(1e-9, r.cpu_s + r.sshd_cpu_s)
        busy = (r.cpu_s + r.sshd_cpu_s) / (r.wall_s * CORES)
        where = "sshd side" if share > 0.5 else "client"
        verdict = (f"CPU-bound ({busy:.0%} of {CORES} cores busy), mostly the {where} ({max(share, 1 - share):.0%})"
                   if busy > 0.75 else f"not CPU-bound ({busy:.0%} of {CORES} cores busy): waiting (sleeps, I/O)")
        lines.append(f"  {r.tool} @ {r.fan_out}: {verdict}")
    return lines


def startup_s(argv: Sequence[str], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        started = time.monotonic()
        subprocess.run(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV, check=False)
        times.append(time.monotonic() - started)
    return statistics.median(times)


def _version(argv: Sequence[str]) -> str:
    if shutil.which(argv[0]) is None:
        return "not installed"
    done = subprocess.run(list(argv), capture_output=True, text=True, check=False)
    return (done.stdout + done.stderr).strip().splitlines()[0]


# -- where the client's time goes -----------------------------------------------------------------
def _category(path: str, func: str) -> str:
    """A profile entry's place: a package, a gpudiag module, a stdlib module, or a built-in by name."""
    if path == "~":
        return func
    if not path.startswith("/"):
        return path  # <string>, <frozen ...>
    real = Path(path).resolve()  # the strict editable install links gpudiag's modules into build/
    parts = real.parts
    if "site-packages" in parts:
        return parts[parts.index("site-packages") + 1].split(".")[0]
    if REPO in real.parents:
        return "gpudiag " + str(real.relative_to(REPO))
    if "json" in parts:
        return f"json/{parts[-1]}"
    return parts[-2] if parts[-2] == "asyncio" else parts[-1]


def _module(path: str) -> str:
    """A source file's path inside its package, gpudiag's checkout or the standard library."""
    if not path.startswith("/"):
        return path
    real = Path(path).resolve()
    if REPO in real.parents:
        return str(real.relative_to(REPO))
    parts = real.parts
    for anchor in ("site-packages", "dist-packages"):
        if anchor in parts:
            return "/".join(parts[parts.index(anchor) + 1:])
    return "/".join(parts[-2:])


def _ms(seconds: float, size: int) -> str:
    return f"{1000 * seconds / size:.2f} ms/host"


def profile_client(cluster: SshdCluster, size: int, timer: str = "wall", top: int = 25) -> None:
    """The in-process sweep of one sample plus both renderings (table, json), first timed (CPU of this
    process; no children), then under cProfile: the share of each package or module and the top functions
    by own time. Then the JSON encoders on this report's document."""
    import cProfile
    import pstats

    from gpudiag.report import render
    from gpudiag.report.json_report import to_document

    hosts = cluster.extra_hosts(size)
    options = SweepOptions(samples=1, interval_s=0.0)

    def run_sweep() -> SweepReport:
        return asyncio.run(sweep(list(hosts), SshTransport(SshOptions(ssh_config=[], connect_timeout_s=10)),
                                 options))

    warm = asyncio.run(sweep(list(hosts[:4]), SshTransport(SshOptions(ssh_config=[])), options))
    render(warm, "table"), render(warm, "json")  # their imports are paid once per process: not per host
    _sshd_settled(cluster.sshd_pids)
    phases: dict[str, float] = {}
    started = time.process_time()
    report = run_sweep()
    phases["sweep (connect, collect, parse, checks)"] = time.process_time() - started
    for fmt in ("table", "json"):
        started = time.process_time()
        text = render(report, fmt)
        phases[f"render {fmt} ({len(text) / size / 1024:.1f} KiB/host)"] = time.process_time() - started
    bad = sum(1 for h in report.hosts if h.status is not HostStatus.OK)
    print(f"\nprofile: {size} hosts, one sample, {size - bad}/{size} ok; CPU of this process (no profiler):")
    for name, cpu in phases.items():
        print(f"  {name:<44} {cpu:6.2f} s  {_ms(cpu, size)}  {cpu / sum(phases.values()):4.0%}")
    print(f"  {'total':<44} {sum(phases.values()):6.2f} s  {_ms(sum(phases.values()), size)}")

    _sshd_settled(cluster.sshd_pids)
    # "wall": cProfile's own timer, cheap to read; the time spent waiting in epoll is taken out below, but a busy
    # machine's preemption still lands in whatever ran (often socket.send). "cpu": process time, exact about
    # what ran, but read with a system call per event: calls-heavy Python code (rich, json's encoder) reads high.
    profiler = cProfile.Profile(time.process_time) if timer == "cpu" else cProfile.Profile()
    profiler.enable()
    report = run_sweep()
    render(report, "table")
    render(report, "json")
    profiler.disable()
    # {(file, line, func): (primitive calls, calls, own s, cumulative s, callers)}
    stats: dict[tuple[str, int, str], Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    waiting = sum(v[2] for (path, _l, func), v in stats.items() if path == "~" and "epoll" in func)
    stats = {k: v for k, v in stats.items() if not (k[0] == "~" and "epoll" in k[2])}
    total = sum(v[2] for v in stats.values())
    by_place: dict[str, float] = {}
    for (path, _line, func), value in stats.items():
        by_place[_category(path, func)] = by_place.get(_category(path, func), 0.0) + value[2]
    print(f"under cProfile, {timer} timer: {total:.2f} s of own time besides "
          f"{waiting:.2f} s waiting in epoll; by place:")
    for place, own in sorted(by_place.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {own / total:5.1%}  {own:6.2f} s  {place}")
    print("top functions by own time (and their cumulative time):")
    for (path, line, func), value in sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]:
        where = func if path == "~" else f"{_module(path)}:{line} {func}"
        print(f"  {value[2] / total:5.1%}  own {value[2]:5.2f} s  cum {value[3]:5.2f} s  {value[0]:>8} calls  {where}")
    cumulative = {f"{_category(path, func)} {func}": value[3] for (path, _l, func), value in stats.items()
                  if path != "~" and func in ("render_table", "render_json", "to_document", "dumps", "parse_host",
                                              "sweep_host", "check_host", "run")}
    print("cumulative time of chosen entry points:")
    for name, cum in sorted(cumulative.items(), key=lambda kv: -kv[1]):
        print(f"  {cum / total:5.1%}  {cum:6.2f} s  {name}")
    json_encoders(to_document(report), size)


def json_encoders(document: dict[str, Any], size: int, repeats: int = 5) -> None:
    """ms per host of each way to write the report's document, best of ``repeats``; orjson when installed."""
    encoders: list[tuple[str, Any]] = [
        ("json.dumps(indent=2) [gpudiag today]", lambda d: json.dumps(d, indent=2, allow_nan=False)),
        ("json.dumps(indent=None, separators=(',', ':'))",
         lambda d: json.dumps(d, indent=None, separators=(",", ":"), allow_nan=False)),
        ("json.dumps(indent=None) (', ', ': ')", lambda d: json.dumps(d, allow_nan=False)),
    ]
    try:
        import orjson
    except ImportError:
        print("orjson: not installed (pip install orjson)")
    else:
        encoders += [("orjson.dumps(OPT_INDENT_2)", lambda d: orjson.dumps(d, option=orjson.OPT_INDENT_2)),
                     ("orjson.dumps()", lambda d: orjson.dumps(d))]
    reference = json.dumps(document, indent=2, allow_nan=False)
    print(f"JSON encoders on this report's document ({size} hosts, {len(reference) / size / 1024:.1f} KiB/host "
          f"with indent=2), CPU best of {repeats}:")
    for name, encode in encoders:
        best = float("inf")
        for _ in range(repeats):
            started = time.process_time()
            out = encode(document)
            best = min(best, time.process_time() - started)
        text = out.decode() if isinstance(out, bytes) else out
        same = "byte-identical to indent=2" if text == reference else (
            "same document" if json.loads(text) == document else "A DIFFERENT DOCUMENT")
        print(f"  {name:<48} {1000 * best / size:7.3f} ms/host  {len(text) / size / 1024:5.1f} KiB/host  {same}")
    started = time.process_time()
    for _ in range(repeats):
        json.loads(reference)
    print(f"  (json.loads of the indent=2 text: {1000 * (time.process_time() - started) / repeats / size:.3f} ms/host)")


def cipher_ab(cluster: SshdCluster, size: int, pairs: int) -> None:
    """``pairs`` alternating runs of the in-process sweep and of the floor, AES-GCM first against chacha20
    first: client CPU ms/host, mean and standard deviation of each (one run of each is noisy on 2 cores)."""
    hosts = cluster.extra_hosts(size)
    for algs in (ENCRYPTION_ALGS, CHACHA_FIRST):  # warm-up: imports, the first use of each cipher
        gpudiag_in_process(cluster, hosts[:4], 1, 0.0, "warm-up", encryption_algs=algs)
    runs: dict[str, list[Row]] = {}
    for n in range(pairs):
        order = (ENCRYPTION_ALGS, CHACHA_FIRST) if n % 2 == 0 else (CHACHA_FIRST, ENCRYPTION_ALGS)
        for algs in order:
            name = "AES-GCM first" if algs == ENCRYPTION_ALGS else "chacha20 first"
            runs.setdefault(f"gpudiag in-process, {name}", []).append(
                gpudiag_in_process(cluster, hosts, 1, 0.0, name, encryption_algs=algs))
            runs.setdefault(f"asyncssh floor, {name}", []).append(asyncssh_floor(cluster, hosts, algs, name))
    print(f"\ncipher order, {pairs} alternating runs each, {size} hosts, one sample: client CPU ms/host")
    for label, rows in runs.items():
        per_host = [1000 * r.cpu_s / size for r in rows]
        sshd = [1000 * r.sshd_cpu_s / size for r in rows]
        print(f"  {label:<40} {statistics.mean(per_host):6.2f} +- {statistics.pstdev(per_host):4.2f}  "
              f"(runs: {', '.join(f'{x:.2f}' for x in per_host)}; sshd side {statistics.mean(sshd):.1f} ms/host; "
              f"ok {min(r.answered for r in rows)}/{size}; other CPU {max(r.other_cpu_s for r in rows):.2f} s at most)")


def workers_ab(cluster: SshdCluster, work: Path, size: int, workers: Sequence[str], rounds: int) -> None:
    """The CLI with one sample at its default fan-out, once per variant of ``workers`` ("2", "2 --connect-rate
    50/s": a ``--workers`` count and other flags), ``rounds`` times with the order reversed each round (the
    machine's load drifts): wall, CPU, and what limits it."""
    hosts = cluster.extra_hosts(size)
    inventory = write_inventory(work / "inventory.yaml", cluster, hosts)
    gpudiag_cli(cluster, write_inventory(work / "warm.yaml", cluster, hosts[:4]), ["--samples", "1"], "warm-up")
    one = ["--samples", "1", "--interval", "0"]
    rows: list[Row] = []
    print(f"load average before: {_loadavg()}; open-file limit {resource.getrlimit(resource.RLIMIT_NOFILE)}")
    for n in range(rounds):
        for count in (workers if n % 2 == 0 else list(reversed(workers))):
            count_arg, *flags = shlex.split(count)
            rows.append(gpudiag_cli(cluster, inventory, [*one, "--workers", count_arg, *flags],
                                    f"gpudiag CLI, 1 sample, --workers {count}")[0])
    print(f"load average after: {_loadavg()}")
    print(table(rows, rows[0], size))
    for count in workers:
        mine = [r for r in rows if r.tool.endswith(f"--workers {count}")]
        walls = ", ".join(f"{r.wall_s:.2f}" for r in mine)
        print(f"  --workers {count}: wall {statistics.mean(r.wall_s for r in mine):.2f} s mean ({walls}), client "
              f"CPU {statistics.mean(r.cpu_s for r in mine):.2f} s, sshd side "
              f"{statistics.mean(r.sshd_cpu_s for r in mine):.2f} s, ok {min(r.answered for r in mine)}/{size}")
    print("bottleneck (client CPU vs sshd-side CPU; client and servers share these cores):")
    print("\n".join(bottleneck(rows)))


def _loadavg() -> str:
    with contextlib.suppress(OSError):
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return "-"


# -- one size -------------------------------------------------------------------------------------
def summary(rows: Sequence[Row], size: int, node: Sequence[NodeCost]) -> list[str]:
    """The targets: client CPU per host against the asyncssh floor and the peers, node-side CPU per host."""
    def row(tool: str, fan_out: int | None = None) -> Row | None:
        return next((r for r in rows if r.tool == tool and (fan_out is None or r.fan_out.split()[0] == str(fan_out))),
                    None)

    def ms(r: Row | None) -> str:
        return "-" if r is None else f"{1000 * r.cpu_s / size:.2f}"

    def ratio(a: Row | None, b: Row | None) -> str:
        return "-" if a is None or b is None else f"{a.cpu_s / b.cpu_s:.2f}"

    cli, in_process = row("gpudiag CLI, 1 sample", DEFAULT_FAN_OUT["gpudiag"]), row("gpudiag in-process, 1 sample")
    chacha = row("gpudiag in-process, 1 sample, chacha20 first")
    floor, floor_chacha = row("asyncssh floor"), row("asyncssh floor, chacha20 first")
    lines = [f"summary, client CPU ms/host ({size} hosts, one sample, this run):",
             f"  gpudiag CLI {ms(cli)} (the in-process sweep alone: {ms(in_process)}), asyncssh floor {ms(floor)}: "
             f"gpudiag/floor {ratio(cli, floor)} (target <= 1.5)",
             f"  AES-GCM first against chacha20 first: gpudiag in-process {ms(in_process)} vs {ms(chacha)} "
             f"({ratio(in_process, chacha)}), floor {ms(floor)} vs {ms(floor_chacha)} ({ratio(floor, floor_chacha)})"]
    for tool in ("pdsh -R ssh", "clush"):
        fan_out = DEFAULT_FAN_OUT["pdsh" if tool.startswith("pdsh") else "clush"]
        forced, default = row(f"{tool}, {FORCED_KEX}", fan_out), row(f"{tool}, default kex", fan_out)
        if forced is None and default is None:
            continue
        lines.append(f"  {tool} @ {fan_out}: {FORCED_KEX} {ms(forced)}, default kex {ms(default)}; "
                     f"{tool.split()[0]}({FORCED_KEX})/gpudiag {ratio(forced, cli)} (target >= 3), "
                     f"{tool.split()[0]}(default kex)/gpudiag {ratio(default, cli)}")
    peer_row = row(f"pdsh -R ssh, {FORCED_KEX}", DEFAULT_FAN_OUT["pdsh"])
    lines.append(f"  sshd side (sshd, shell, the command) ms/host: gpudiag CLI "
                 f"{'-' if cli is None else f'{1000 * cli.sshd_cpu_s / size:.1f}'}, pdsh ({FORCED_KEX}) "
                 f"{'-' if peer_row is None else f'{1000 * peer_row.sshd_cpu_s / size:.1f}'}")
    costs = {c.label: c for c in node}
    if PEERS_QUERY in costs and COLLECTOR in costs:
        smi, collector = costs[PEERS_QUERY], costs[COLLECTOR]
        lines.append(f"  the node's command alone (node_cost.py, simulated node, {NODE_COST_RUNS} runs): gpudiag "
                     f"collector {collector.cpu_ms:.1f} ms CPU, pdsh's one nvidia-smi call {smi.cpu_ms:.1f}: "
                     f"{collector.cpu_ms / smi.cpu_ms:.2f}x (target <= 1.5)")
    return lines


@contextlib.contextmanager
def bed(size: int, call_ms: float, prefix: str = "gpudiag-bench-") -> Iterator[tuple[SshdCluster | None, Path]]:
    """A cluster of ``size`` simulated healthy nodes in a temporary folder, and that folder; (None, folder) with
    a line printed when sshd cannot serve that many (a missing OpenSSH raises :class:`SshdUnavailable`)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp)
        (work / "cluster").mkdir()
        started = time.monotonic()
        try:
            cluster = stack.enter_context(running_cluster(work / "cluster", extra_healthy=size, scenarios={},
                                                          call_ms=call_ms))
        except SshdUnavailable:
            raise
        except (RuntimeError, OSError) as exc:  # e.g. sshd not answering on every address in time
            print(f"sshd could not serve {size} hosts: {exc}")
            yield None, work
            return
        print(f"cluster: {len(cluster.sshd_pids)} sshd on port {cluster.port}, up in "
              f"{time.monotonic() - started:.1f} s", flush=True)
        yield cluster, work


def bench_size(size: int, call_ms: float, node: Sequence[NodeCost], profile: str | None = None,
               cipher_pairs: int = 0, workers: Sequence[str] = (), rounds: int = 2) -> None:
    print(f"\n== {size} hosts " + "=" * 80)
    with bed(size, call_ms) as (cluster, work):
        if cluster is None:
            return
        if profile:
            profile_client(cluster, size, profile)
        elif cipher_pairs:
            cipher_ab(cluster, size, cipher_pairs)
        elif workers:
            workers_ab(cluster, work, size, workers, rounds)
        else:
            run_size(cluster, work, size, node)


def run_size(cluster: SshdCluster, work: Path, size: int, node: Sequence[NodeCost]) -> None:
    hosts = cluster.extra_hosts(size)
    print("negotiated with these sshds (one host; pdsh and clush with ssh -v):")
    print("\n".join(negotiated(cluster, hosts[0])))
    addresses = [h.target for h in hosts]
    inventory = write_inventory(work / "inventory.yaml", cluster, hosts)
    gpudiag_cli(cluster, write_inventory(work / "warm.yaml", cluster, hosts[:4]), ["--samples", "1"], "warm-up")

    one = ["--samples", "1", "--interval", "0"]
    reference, _ = gpudiag_cli(cluster, inventory, one, "gpudiag CLI, 1 sample")
    rows = [reference,
            gpudiag_cli(cluster, inventory, one, "gpudiag CLI, 1 sample", concurrency=EQUAL_FAN_OUT)[0]]
    if importlib.util.find_spec("uvloop") is not None:
        rows.append(gpudiag_cli(cluster, inventory, one, "gpudiag CLI, 1 sample, uvloop", event_loop="uvloop")[0])
    if size <= WINDOW_MAX_HOSTS:
        # At the peers' fan-out: here every collector shares these cores, and 256 of them at once, each
        # making 5 nvidia-smi calls, outlast the 30 s deadline. On a cluster each node runs its own one.
        rows.append(gpudiag_cli(cluster, inventory, [], "gpudiag CLI, 5 samples/2 s", concurrency=EQUAL_FAN_OUT)[0])
    rows.append(gpudiag_in_process(cluster, hosts, 1, 0.0, "gpudiag in-process, 1 sample"))
    rows.append(gpudiag_in_process(cluster, hosts, 1, 0.0, "gpudiag in-process, 1 sample, chacha20 first",
                                   encryption_algs=CHACHA_FIRST))
    rows += gpudiag_watch(cluster, hosts)
    rows.append(asyncssh_floor(cluster, hosts, ENCRYPTION_ALGS, "asyncssh floor"))
    rows.append(asyncssh_floor(cluster, hosts, CHACHA_FIRST, "asyncssh floor, chacha20 first"))
    for tool, fan_outs in (("pdsh", (EQUAL_FAN_OUT, DEFAULT_FAN_OUT["pdsh"])), ("clush", (EQUAL_FAN_OUT,))):
        if shutil.which(tool) is None:
            print(f"{tool}: not installed, skipped")
            continue
        rows += [peer(tool, cluster, addresses, f, kex) for kex in (None, FORCED_KEX) for f in fan_outs]
    unserved = [r for r in rows if r.answered < size]
    print(table(rows, reference, size))
    print("\n".join(summary(rows, size, node)))
    swept = next(r for r in rows if r.tool.startswith("gpudiag in-process"))
    later = next(r for r in rows if r.tool.startswith("gpudiag watch, refreshes"))
    print(f"watch: a later refresh of {size} hosts costs {later.wall_s / swept.wall_s:.0%} of a fresh in-process "
          f"sweep's wall time, {later.cpu_s / swept.cpu_s:.0%} of its client CPU and "
          f"{later.sshd_cpu_s / swept.sshd_cpu_s:.0%} of its sshd-side CPU")
    if unserved:
        print(f"  sshd did not serve every host for: {', '.join(f'{r.tool} @ {r.fan_out}' for r in unserved)}")
    print("bottleneck (client CPU vs sshd-side CPU; client and servers share these cores):")
    print("\n".join(bottleneck(rows)))

    with silent_listener() as port:
        dead = Host(name="dead", address="127.0.0.1", port=port)
        timeout = ["--connect-timeout", f"{DEAD_CONNECT_TIMEOUT_S:g}"]
        alone, doc = gpudiag_cli(cluster, write_inventory(work / "dead.yaml", cluster, [dead]), [*one, *timeout],
                                 "dead host alone")
        status = next((f"{h['status']}: {h['error']}" for h in doc["hosts"]), "no report")
        both, doc = gpudiag_cli(cluster, write_inventory(work / "both.yaml", cluster, [*hosts, dead]),
                                [*one, *timeout], "healthy + dead")
    answered = sum(1 for h in doc["hosts"] if h["status"] == "ok")
    others = not_ok({"hosts": [h for h in doc["hosts"] if h["host"] != "dead"]})
    print(f"dead host alone (--connect-timeout {DEAD_CONNECT_TIMEOUT_S:g}): wall {alone.wall_s:.2f} s = connect "
          f"timeout + {alone.wall_s - DEAD_CONNECT_TIMEOUT_S:.2f} s ({status})")
    expected = max(alone.wall_s, reference.wall_s)
    print(f"{size} healthy + the dead host: wall {both.wall_s:.2f} s, {answered}/{size} ok; "
          f"max(dead host alone, healthy sweep) = {expected:.2f} s, connect timeout + healthy sweep = "
          f"{DEAD_CONNECT_TIMEOUT_S + reference.wall_s:.2f} s")
    if others:
        print(f"  note: besides the dead host, {others}")


def raise_open_files(size: int) -> None:
    """Let this process (and the pdsh, clush and gpudiag children, which inherit it) open what ``size`` hosts need."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = size * 8 + 256
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard),
                                                    hard))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="100", help="comma-separated host counts (default 100)")
    parser.add_argument("--call-ms", type=float, default=H200_CALL_MS,
                        help=f"how long each simulated nvidia-smi call lasts at least (default {H200_CALL_MS:g}: "
                             "an H200's, from bench/node_cost.py)")
    parser.add_argument("--profile", choices=("wall", "cpu"),
                        help="instead of the comparison: profile gpudiag's client (in-process sweep of one sample, "
                             "table and json rendering) at each size with cProfile's wall or CPU timer, and time "
                             "the JSON encoders")
    parser.add_argument("--cipher-ab", type=int, default=0, metavar="PAIRS",
                        help="instead of the comparison: PAIRS alternating runs of the in-process sweep and of the "
                             "asyncssh floor with AES-GCM first and with chacha20 first")
    parser.add_argument("--workers-ab", default="", metavar="VARIANTS",
                        help="instead of the comparison: the CLI (one sample) with each of these --workers "
                             "counts, each optionally followed by other sweep flags (e.g. '1,2,2 --connect-rate "
                             "50/s'), --rounds times, the order reversed each round")
    parser.add_argument("--rounds", type=int, default=2, help="--workers-ab: rounds (default 2)")
    args = parser.parse_args()
    workers = [w.strip() for w in args.workers_ab.split(",") if w.strip()]
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    raise_open_files(max(sizes))
    print(f"machine: {CORES} cores, Python {sys.version.split()[0]}, {_version(['ssh', '-V'])}, "
          f"{_version(['pdsh', '-V'])}, {_version(['clush', '--version'])}; each nvidia-smi call lasts at least "
          f"{args.call_ms:g} ms")
    print(f"start-up, median of 5: python3 -c pass {startup_s([sys.executable, '-c', 'pass']):.3f} s, "
          f"python3 -m gpudiag --help {startup_s([sys.executable, '-m', 'gpudiag.cli.app', '--help']):.3f} s")
    node: list[NodeCost] = []
    if not (args.profile or args.cipher_ab or workers):
        with tempfile.TemporaryDirectory(prefix="gpudiag-node-cost-") as tmp:
            node = node_costs(stub_env(Path(tmp), args.call_ms), NODE_COST_RUNS)
        print(f"\na simulated node's commands (bench/node_cost.py --stub --call-ms {args.call_ms:g}, "
              f"{NODE_COST_RUNS} runs each):")
        print(cost_table(node))
    try:
        for size in sizes:
            bench_size(size, args.call_ms, node, profile=args.profile, cipher_pairs=args.cipher_ab, workers=workers,
                       rounds=args.rounds)
    except SshdUnavailable as exc:
        print(f"cannot run: {exc}")
        sys.exit(1)


if __name__ == "__main__":
    main()
