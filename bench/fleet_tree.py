"""10,000 simulated hosts, swept directly and through a two-level ClusterShell tree of simulated gateways
(issue 32): wall time, client CPU per host and peak RSS at each size, and the peers' ``clush -w ...
nvidia-smi --query-gpu=...`` flat and in tree mode over the same fleet, as ratios.

Run from the repository root (the device machine: ``bench/device_fleet.sh``)::

    python3 bench/fleet_tree.py --sizes 1000,3000,10000 --peers-at 10000
    python3 bench/fleet_tree.py --sizes 200 --peers-at 200 --gateways 2x2    # a small check anywhere
    python3 bench/fleet_tree.py --sizes 10000 --runs tree --save rows.jsonl    # one run of one size (a device call)
    python3 bench/fleet_tree.py --summary a.jsonl b.jsonl                      # the table and ratios of saved runs

The fleet starts in seconds at any size: one ``sshd`` on the wildcard address serves every loopback address
(``tests/loopback.py``'s :func:`running_fleet`), each node a healthy 8-GPU H200 stub. The gateways are loopback
hosts of the same sshd: ClusterShell starts ``python -m ClusterShell.Gateway`` on each over ssh, the root reaching
``--gateways A`` first-level ones, each of those B second-level ones, which reach the nodes (topology.conf written
here, its root this machine's short name). Per size, each a child process measured with its whole tree:

- ``gpudiag direct``: ``gpudiag sweep -i INVENTORY --samples 1 --interval 0 --workers auto --concurrency 1024
  --format json`` (``--direct-flags``: 1024 in flight, so that the cores, not the window, bound it);
- ``gpudiag tree``: the same with ``--via clush --clush-topology FILE`` (one process: the tree fans out);

and at ``--peers-at`` hosts also ``clush -w HOSTS -f 64 nvidia-smi --query-gpu=...`` flat and with
``--topology FILE``. "client CPU" is the root's: the measured process and everything it started (its ssh to
the first-level gateways, or to every node); the gateways and the nodes run under the sshd, their CPU is the
"sshd side" column. The root's targets (issue 32): CPU per host flat from 1,000 to 10,000, peak RSS at most
2 GiB at 10,000, and the tree's root CPU at most a tenth of the direct sweep's.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shlex
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from node_cost import QUERY  # noqa: E402
from sweep_loopback import CLI, ENV, Row, hostlist, not_ok, raise_open_files, run_measured  # noqa: E402

from loopback import SshdCluster, extra_address, running_fleet  # noqa: E402

ONE = ("--samples", "1", "--interval", "0", "--timeout", "60")
FAN_OUT = 64  # ClusterShell's default, at the root and at each gateway


def gateway_addresses(first: int, second: int) -> tuple[list[str], list[str]]:
    """The gateways' loopback addresses: 127.2.0.x (first level), 127.2.1.x (second), apart from the nodes'."""
    return [f"127.2.0.{i + 1}" for i in range(first)], [f"127.2.1.{i + 1}" for i in range(first * second)]


def write_topology(path: Path, nodes: Sequence[str], first: list[str], second: list[str]) -> Path:
    """root -> first-level gateways -> second-level ones (each first-level its share) -> nodes (each its share)."""
    per = -(-len(second) // len(first))
    lines = ["[routes]", f"{socket.gethostname().split('.')[0]}: {','.join(first)}"]
    lines += [f"{gw}: {','.join(second[i * per:(i + 1) * per])}" for i, gw in enumerate(first)]
    share = -(-len(nodes) // len(second))
    lines += [f"{gw}: {hostlist(nodes[i * share:(i + 1) * share])}" for i, gw in enumerate(second)
              if nodes[i * share:(i + 1) * share]]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_inventory(path: Path, cluster: SshdCluster, nodes: Sequence[str]) -> Path:
    """The nodes by address (a name ClusterShell routes as it is), the fleet's user, port, key and known_hosts."""
    path.write_text(cluster.inventory_defaults() + "hosts:\n" + "".join(f"  '{a}': {{}}\n" for a in nodes))
    return path


def ssh_options(cluster: SshdCluster) -> str:
    return (f"-i {cluster.client_key} -p {cluster.port} -oIdentitiesOnly=yes -oStrictHostKeyChecking=yes "
            f"-oUserKnownHostsFile={cluster.known_hosts} -oGlobalKnownHostsFile=/dev/null -F /dev/null")


def measured(label: str, argv: Sequence[str], cluster: SshdCluster, env: dict[str, str], fan: str,
             json_out: bool) -> Row:
    code, out, err, wall, cpu, rss_one, rss_sum, sshd, other = run_measured(argv, env=env,
                                                                            sshd_pids=cluster.sshd_pids)
    note = ""
    if json_out:
        try:
            doc = json.loads(out)
            answered = sum(1 for h in doc["hosts"] if h["status"] == "ok")
            note = not_ok(doc)
        except (json.JSONDecodeError, KeyError):
            answered, note = 0, f"exit {code}: {(err.strip().splitlines() or ['no output'])[-1][:100]}"
    else:  # clush: "127.0.1.5: 0, NVIDIA H200, ..." one line per GPU
        answered = len({line.split(":", 1)[0] for line in out.splitlines() if "," in line})
        if code and err.strip():
            note = f"exit {code}: {err.strip().splitlines()[-1][:100]}"
    return Row(tool=label, fan_out=fan, wall_s=wall, cpu_s=cpu, rss_one_mib=rss_one, rss_sum_mib=rss_sum,
               answered=answered, sshd_cpu_s=sshd, other_cpu_s=other, note=note)


RUNS = ("direct", "tree", "clush-flat", "clush-tree")  # --runs: which of the four; the clush ones at --peers-at only


def one_size(size: int, first: int, second: int, runs: Sequence[str], work: Path,
             direct_flags: Sequence[str]) -> list[Row]:
    nodes = [extra_address(i) for i in range(size)]
    gw1, gw2 = gateway_addresses(first, second)
    (work / "fleet").mkdir()
    started = time.monotonic()
    with running_fleet(work / "fleet", nodes + gw1 + gw2) as cluster:
        print(f"\n== {size} hosts: fleet up in {time.monotonic() - started:.1f} s (one sshd, port {cluster.port}); "
              f"tree: {first} gateways over {first * second}", flush=True)
        inventory = write_inventory(work / "inventory.yaml", cluster, nodes)
        topology = write_topology(work / "topology.conf", nodes, gw1, gw2)
        env = {**ENV, "CLUSTERSHELL_GW_PYTHON_EXECUTABLE": sys.executable}  # the gateways' Python: this one
        warm = write_inventory(work / "warm.yaml", cluster, nodes[:4])
        run_measured([*CLI, "sweep", "-i", str(warm), *ONE, "--format", "json"], env=env, sshd_pids=())
        gpudiag = [*CLI, "sweep", "-i", str(inventory), *ONE]
        clush = [sys.executable, "-m", "ClusterShell.CLI.Clush", "-w", hostlist(nodes), "-f", str(FAN_OUT),
                 "-o", ssh_options(cluster), "-u", "60", QUERY]
        commands = {
            "direct": (f"gpudiag direct, {' '.join(direct_flags)}", [*gpudiag, *direct_flags, "--format", "json"],
                       "see flags", True),
            "tree": ("gpudiag tree, --via clush", [*gpudiag, "--via", "clush", "--clush-topology", str(topology),
                                                   "--format", "json"], f"{FAN_OUT}/hop", True),
            "clush-flat": ("clush flat, --query-gpu", clush, str(FAN_OUT), False),
            "clush-tree": ("clush tree, --query-gpu", [*clush[:3], "--topology", str(topology), *clush[3:]],
                           f"{FAN_OUT}/hop", False)}
        rows = [measured(label, argv, cluster, env, fan, json_out)
                for label, argv, fan, json_out in (commands[run] for run in runs)]
        for row in rows:
            print(f"  {row.tool:<32} wall {row.wall_s:7.1f} s  root CPU {row.cpu_s:7.2f} s "
                  f"({1000 * row.cpu_s / size:6.2f} ms/host)  RSS {row.rss_one_mib:6.0f} MiB 1p, "
                  f"{row.rss_sum_mib or 0:6.0f} tree  ok {row.answered}/{size}  sshd side {row.sshd_cpu_s:7.1f} s"
                  + (f"  [{row.note}]" if row.note else ""), flush=True)
        return rows


def report(results: dict[int, list[Row]]) -> None:
    sizes = sorted(results)
    print("\nsummary (root = the process measured and what it started; sshd side = gateways + nodes)")
    head = ("hosts", "run", "wall s", "root CPU s", "ms/host", "x smallest", "RSS 1p MiB", "RSS tree MiB", "ok")
    print("  ".join(f"{h:>10}" for h in head))
    base: dict[str, float] = {}
    for size in sizes:
        for row in results[size]:
            ms = 1000 * row.cpu_s / size
            base.setdefault(row.tool, ms)
            cells = (size, row.tool.split(",")[0], f"{row.wall_s:.1f}", f"{row.cpu_s:.2f}", f"{ms:.2f}",
                     f"{ms / base[row.tool]:.2f}", f"{row.rss_one_mib:.0f}", f"{row.rss_sum_mib or 0:.0f}",
                     f"{row.answered}/{size}")
            print("  ".join(f"{c:>10}" for c in cells))
    for size in sizes:
        rows = {row.tool.split(",")[0]: row for row in results[size]}
        direct, tree = rows.get("gpudiag direct"), rows.get("gpudiag tree")
        if direct and tree:
            print(f"{size}: tree root CPU / direct: {tree.cpu_s / direct.cpu_s:.2f} (target <= 0.1); "
                  f"wall tree / direct: {tree.wall_s / direct.wall_s:.2f}; peak RSS tree "
                  f"{(tree.rss_sum_mib or tree.rss_one_mib) / 1024:.2f} GiB, direct "
                  f"{(direct.rss_sum_mib or direct.rss_one_mib) / 1024:.2f} GiB (target <= 2 at 10,000)")
        for name, own in (("clush flat", direct), ("clush tree", tree)):
            peer = rows.get(name)
            if peer and own:
                print(f"{size}: gpudiag {'direct' if own is direct else 'tree'} / {name}: wall "
                      f"{own.wall_s / peer.wall_s:.2f}, root CPU {own.cpu_s / peer.cpu_s:.2f}, "
                      f"sshd side {own.sshd_cpu_s / max(peer.sshd_cpu_s, 1e-9):.2f}")


def save(path: Path, size: int, rows: Sequence[Row]) -> None:
    """Append ``rows`` to ``path``, one JSON line each with its size: calls of one size and run each (the
    device's per-call bound) are summed up afterwards by ``--summary``."""
    with path.open("a") as out:
        out.writelines(json.dumps({"hosts": size, **dataclasses.asdict(row)}) + "\n" for row in rows)


def saved(paths: Sequence[Path]) -> dict[int, list[Row]]:
    """The rows of ``--save`` files, by size, in the order they were measured (a later run of the same size and
    tool replaces the earlier)."""
    by_size: dict[int, dict[str, Row]] = {}
    for path in paths:
        for line in path.read_text().splitlines():
            if line.strip():
                fields = json.loads(line)
                row = Row(**{k: v for k, v in fields.items() if k != "hosts"})
                by_size.setdefault(int(fields["hosts"]), {})[row.tool.split(",")[0]] = row
    return {size: list(rows.values()) for size, rows in by_size.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="1000,3000,10000", help="comma-separated host counts")
    parser.add_argument("--peers-at", default="10000", help="sizes at which clush runs too (comma-separated)")
    parser.add_argument("--direct-flags", default="--workers auto --concurrency 1024",
                        help="the direct sweep's fan-out flags (default: all cores, 1024 hosts in flight)")
    parser.add_argument("--gateways", default="4x8", help="A x B: A first-level gateways, B second-level each")
    parser.add_argument("--runs", default=",".join(RUNS),
                        help=f"which runs, comma-separated, of {', '.join(RUNS)} (the clush ones at --peers-at "
                             "sizes only); the device's calls are bounded: one size and run per call fits")
    parser.add_argument("--save", type=Path, help="append each measured run to this file (JSON lines)")
    parser.add_argument("--summary", type=Path, nargs="+", metavar="FILE",
                        help="measure nothing: the summary table and ratios of the runs saved in these files")
    args = parser.parse_args()
    if args.summary:
        report(saved(args.summary))
        return
    runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    if unknown := sorted(set(runs) - set(RUNS)):
        parser.error(f"--runs: unknown {', '.join(unknown)} (known: {', '.join(RUNS)})")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    peers_at = {int(s) for s in args.peers_at.split(",") if s.strip()}
    first, second = (int(n) for n in args.gateways.lower().split("x"))
    raise_open_files(max(sizes) + first * (second + 1))
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; fan-out {FAN_OUT} per hop")
    results: dict[int, list[Row]] = {}
    try:
        for size in sizes:
            with tempfile.TemporaryDirectory(prefix="gpudiag-fleet-") as tmp:
                chosen = [r for r in runs if size in peers_at or not r.startswith("clush")]
                results[size] = one_size(size, first, second, chosen, Path(tmp), shlex.split(args.direct_flags))
            if args.save:
                save(args.save, size, results[size])
    except KeyboardInterrupt:  # `timeout -s INT`: what finished, and nothing of this run left behind
        print("\ninterrupted: the sizes that finished", flush=True)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with contextlib.suppress(OSError):
            os.killpg(os.getpgrp(), signal.SIGTERM)  # the sweep in flight, its ssh, the fleet's sessions
    report(results)


if __name__ == "__main__":
    main()
