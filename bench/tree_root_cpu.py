"""Where the root's CPU goes in ``gpudiag sweep --via clush`` through a gateway tree (issue 32), part by part, and the
same for the direct sweep: what is left to cut, and what is ClusterShell's own.

Run from the repository root (a small size fits this 2-core machine)::

    python3 bench/tree_root_cpu.py --sizes 4,200 --gateways 2x2
    python3 bench/tree_root_cpu.py --sizes 4,300 --runs 2 --direct-flags "--workers 1 --concurrency 1024"

The fleet is ``bench/fleet_tree.py``'s (one sshd serving every loopback address, the same topology). Each run is
``gpudiag sweep -i INVENTORY --samples 1 --interval 0 --format json`` (``--via clush --clush-topology FILE`` for
the tree) as a child process whose entry point times its parts with the CPU clock of the thread that runs them:
``clush thread`` (ClusterShell's Task: the gateway channel's XML, base64 and pickle, its NodeSets, and this
transport's handler), ``parse`` (``sweep.runner.interpret``), ``checks`` (``runner.evaluate``), ``report``
(``report.render``), ``start`` (the interpreter's own start-up), ``rest`` (the process's CPU less those: gpudiag's
imports, the event loop, the runner, the plans, the bundle) and ``children`` (what the process started: the ssh to
the first-level gateways, or the ``--workers`` processes). The smallest size gives the fixed part; the columns at
the other sizes less it, per host, are the cost that grows with the hosts. One child process per run; the least of
``--runs`` is kept (noise only adds CPU).
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from fleet_tree import ONE, gateway_addresses, write_inventory, write_topology  # noqa: E402
from sweep_loopback import ENV, raise_open_files  # noqa: E402

from loopback import extra_address, running_fleet  # noqa: E402

PARTS = ("start", "clush thread", "parse", "checks", "report", "rest", "children")

# The child's entry point: gpudiag's CLI with the parts above timed; one line on stderr at exit.
_TIMED_CLI = r'''
import atexit, resource, sys, time
START = time.process_time()
spent = {}
def timed(owner, name, part):
    inner = getattr(owner, name)
    def wrapper(*args, **kwargs):
        begun = time.thread_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[part] = spent.get(part, 0.0) + time.thread_time() - begun
    setattr(owner, name, wrapper)
import gpudiag.cli.entry as entry, gpudiag.report as report, gpudiag.sweep.runner as runner
timed(runner, "interpret", "parse")
timed(runner, "evaluate", "checks")
timed(report, "render", "report")
if "--via" in sys.argv:  # ClusterShell imported only where the sweep imports it
    import gpudiag.transport.clush as clush
    timed(clush._Run, "run", "clush thread")
def said():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime
    parts = {"start": START, **spent}
    parts["rest"] = total - sum(parts.values())
    parts["children"] = children.ru_utime + children.ru_stime
    sys.stderr.write("@parts " + " ".join(f"{k.replace(' ', '_')}={v:.4f}" for k, v in parts.items()) + "\n")
atexit.register(said)
sys.argv[0] = "gpudiag"
entry.main()
'''


def parts_of(argv: list[str], env: dict[str, str]) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", _TIMED_CLI, *argv], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False)
    line = next((ln for ln in done.stderr.splitlines() if ln.startswith("@parts ")), None)
    if line is None:
        raise SystemExit(f"the sweep said no parts (exit {done.returncode}): {done.stderr.strip()[-300:]}")
    return {k.replace("_", " "): float(v) for k, v in (item.split("=") for item in line.split()[1:])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="4,200", help="comma-separated host counts; the smallest is the fixed part")
    parser.add_argument("--gateways", default="2x2", help="A x B: A first-level gateways, B second-level each")
    parser.add_argument("--runs", type=int, default=1, help="runs of each sweep; the least CPU is kept")
    parser.add_argument("--direct-flags", default="--workers 1 --concurrency 1024",
                        help="the direct sweep's flags (default: one process, so its parts are all in it)")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(",") if s.strip())
    first, second = (int(n) for n in args.gateways.lower().split("x"))
    raise_open_files(max(sizes) + first * (second + 1))
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; tree {first}x{second}; CPU s of the "
          f"root process by part (the least of {args.runs} run(s))")
    table: dict[tuple[str, int], dict[str, float]] = {}
    for size in sizes:
        nodes = [extra_address(i) for i in range(size)]
        gw1, gw2 = gateway_addresses(first, second)
        with tempfile.TemporaryDirectory(prefix="gpudiag-root-cpu-") as tmp:
            work = Path(tmp)
            (work / "fleet").mkdir()
            with running_fleet(work / "fleet", nodes + gw1 + gw2) as cluster:
                inventory = write_inventory(work / "inventory.yaml", cluster, nodes)
                topology = write_topology(work / "topology.conf", nodes, gw1, gw2)
                env = {**ENV, "CLUSTERSHELL_GW_PYTHON_EXECUTABLE": sys.executable}
                base = ["sweep", "-i", str(inventory), *ONE, "--format", "json"]
                runs = {"tree": [*base, "--via", "clush", "--clush-topology", str(topology)],
                        "direct": [*base, *shlex.split(args.direct_flags)]}
                for name, argv in runs.items():
                    measured = [parts_of(argv, env) for _ in range(args.runs)]
                    best = min(measured, key=lambda p: sum(p.values()))
                    table[name, size] = best
                    print(f"  {size:6d} {name:<7} total {sum(best.values()):6.2f} s  "
                          + "  ".join(f"{p} {best.get(p, 0.0):.3f}" for p in PARTS), flush=True)
    smallest = sizes[0]
    print(f"\nper host past the fixed part ({smallest} hosts), ms: " + ", ".join(PARTS) + ", total")
    for name in ("tree", "direct"):
        for size in sizes[1:]:
            grown = {p: 1000 * (table[name, size].get(p, 0.0) - table[name, smallest].get(p, 0.0))
                     / (size - smallest) for p in PARTS}
            print(f"  {name:<7} {size:6d}  " + "  ".join(f"{p} {grown[p]:6.2f}" for p in PARTS)
                  + f"  total {sum(grown.values()):6.2f}")
    for size in sizes[1:]:
        tree, direct = sum(table["tree", size].values()), sum(table["direct", size].values())
        print(f"{size}: tree / direct root CPU {tree / direct:.2f} (this machine, these flags)")


if __name__ == "__main__":
    main()
