"""How the client's CPU per host, its wall time and its memory grow with the number of hosts (issue 22's growth
and memory targets). Prints the ratios.

Run from the repository root::

    python3 bench/growth.py --sizes 300,1000,3000,10000     # on the bed (real sshds): bench/device_growth.sh
    python3 bench/growth.py --fake --sizes 1000,4000        # anywhere, in seconds: no sshd (see below)

On the bed (the simulated nodes of ``bench/sweep_loopback.py``), per size N: a cluster of N nodes, then one
``gpudiag sweep -i INVENTORY --samples 1 --interval 0 --workers auto --format json`` (plus ``--extra``) as a
child process. Printed per size: wall, client CPU (every worker included) and per host, the ratio of that to
the smallest size's (target: within 1.2 from 300 to 10,000), peak RSS of the largest process and of the
whole client tree (target: at most 2 GiB at 10,000), hosts ok, the nodes' CPU, how busy the cores were and
what bounds the wall (the cores, or the fan-out window when they are not busy); then what one controller
would spend on 10,000 real nodes at the largest size's CPU per host. At ``--compare-at`` hosts (1000), on
the same bed, also the CLI in one process (``--workers 1``), JSON and table, against the in-process sweep.

``--fake`` measures the steps that could grow faster than the hosts (the inventory, the fan-out, the
parsing and checks, the report, the history and its changes) without SSH or nodes: the CLI's console entry
point runs in this process over the unit tests' fake transport, each host answering an 8-GPU collector
document recorded on the bed with its own power figure (tests/unit/many_hosts.py: no two hosts fold into one
table row), once per size and step; the CPU seconds of each and the ratio of the largest size's to the
smallest's, against the ratio of the sizes (linear). tests/scale/test_cli_scale.py bounds the same ratios.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the loopback sshd cluster (tests/loopback.py)
sys.path.insert(0, str(REPO / "tests" / "unit"))  # the fake transport and its recorded bed document

from many_hosts import cpu_of_sweep  # noqa: E402
from sweep_loopback import (  # noqa: E402
    CORES,
    Row,
    bed,
    gpudiag_cli,
    gpudiag_in_process,
    raise_open_files,
    table,
    write_inventory,
)

from loopback import SshdCluster, SshdUnavailable  # noqa: E402

ONE = ("--samples", "1", "--interval", "0")
REAL_NODES = 10_000


def compare(cluster: SshdCluster, inventory: Path, size: int) -> None:
    """On the same bed: the CLI in one process (``--workers 1``), JSON and table, against the in-process sweep
    (issue 22's client target: at most 1.3x), one run each."""
    hosts = cluster.extra_hosts(size)
    rows = [gpudiag_in_process(cluster, hosts, 1, 0.0, "gpudiag in-process")]
    rows += [gpudiag_cli(cluster, inventory, [*ONE, "--workers", "1"], f"gpudiag CLI --format {fmt} --workers 1",
                         fmt=fmt)[0] for fmt in ("json", "table")]
    reference = rows[0]
    print(f"\n{size} hosts, one process: the CLI against the in-process sweep, one sample")
    print(table(rows, reference, size))
    for row in rows[1:]:
        print(f"  {row.tool} / in-process: {row.cpu_s / reference.cpu_s:.2f} (target <= 1.3), "
              f"{1000 * row.cpu_s / size:.2f} against {1000 * reference.cpu_s / size:.2f} ms/host", flush=True)


def on_the_bed(sizes: Sequence[int], extra: Sequence[str], call_ms: float, compare_at: int | None) -> None:
    rows: list[tuple[int, Row, float]] = []  # size, the measured run, seconds the cluster took to start
    for size in sizes:
        started = time.monotonic()
        with bed(size, call_ms, prefix="gpudiag-growth-") as (cluster, work):
            if cluster is None:
                continue
            up_s = time.monotonic() - started
            hosts = cluster.extra_hosts(size)
            inventory = write_inventory(work / "inventory.yaml", cluster, hosts)
            gpudiag_cli(cluster, write_inventory(work / "warm.yaml", cluster, hosts[:4]), ONE, "warm-up")
            row, _ = gpudiag_cli(cluster, inventory, [*ONE, "--workers", "auto", *extra],
                                 f"gpudiag CLI --workers auto {' '.join(extra)}".strip())
            rows.append((size, row, up_s))
            print(f"{size} hosts: cluster up in {up_s:.1f} s; wall {row.wall_s:.1f} s, client CPU "
                  f"{row.cpu_s:.2f} s ({1000 * row.cpu_s / size:.2f} ms/host), ok {row.answered}/{size}"
                  + (f"; {row.note}" if row.note else ""), flush=True)
            if size == compare_at:
                compare(cluster, inventory, size)
    if not rows:
        return
    base_size, base, _ = rows[0]
    base_ms = 1000 * base.cpu_s / base_size
    print(f"\ngrowth, one sample, --workers auto on {CORES} cores {' '.join(extra)}")
    head = ("hosts", "wall s", "client CPU s", "ms/host", f"x {base_size}", "RSS 1p MiB", "RSS tree MiB", "ok",
            "nodes' CPU s", "busy %", "bound by")
    print("  ".join(f"{h:>12}" for h in head))
    for size, row, _ in rows:
        busy = (row.cpu_s + row.sshd_cpu_s) / (row.wall_s * CORES)
        bound = ("the cores (mostly the simulated nodes)" if busy > 0.75 and row.sshd_cpu_s > row.cpu_s
                 else "the cores (mostly the client)" if busy > 0.75 else "the fan-out window (cores idle)")
        ms = 1000 * row.cpu_s / size
        cells = (size, f"{row.wall_s:.1f}", f"{row.cpu_s:.2f}", f"{ms:.2f}", f"{ms / base_ms:.2f}",
                 f"{row.rss_one_mib:.0f}", "-" if row.rss_sum_mib is None else f"{row.rss_sum_mib:.0f}",
                 f"{row.answered}/{size}", f"{row.sshd_cpu_s:.1f}", f"{100 * busy:.0f}", bound)
        print("  ".join(f"{c:>12}" for c in cells))
    last_size, last, _ = rows[-1]
    last_ms = 1000 * last.cpu_s / last_size
    print(f"client CPU per host, {last_size} against {base_size} hosts: {last_ms / base_ms:.2f} (target <= 1.2); "
          f"peak RSS of the client tree at {last_size}: {(last.rss_sum_mib or last.rss_one_mib) / 1024:.2f} GiB "
          f"(target <= 2 at 10,000)")
    print(f"projection, {REAL_NODES:,} real nodes from one controller: {last_ms * REAL_NODES / 1000:.0f} s of client "
          f"CPU ({last_ms:.2f} ms/host), about {1000 / last_ms:.0f} hosts a second per core; with each node's "
          f"collector on its own CPU the wall is the window: {REAL_NODES:,} hosts / --concurrency x the time "
          f"one host takes (sampling, login, collector)")


# -- anywhere: the CLI in this process over the fake transport ------------------------------------
FAKE_STEPS: dict[str, Callable[[Path, int], list[str]]] = {
    "--format json": lambda _w, _n: ["--format", "json"],
    "--format table": lambda _w, _n: ["--format", "table"],
    "--format table --no-fold": lambda _w, _n: ["--format", "table", "--no-fold"],
    "--history (a second run: changes)": lambda w, n: ["--format", "json", "--history", str(w / f"h{n}.sqlite")],
}


def fake(sizes: Sequence[int]) -> None:
    with tempfile.TemporaryDirectory(prefix="gpudiag-growth-fake-") as tmp:
        work = Path(tmp)
        cpu_of_sweep(work, 8, ["--format", "table"])  # imports, the first use of every path
        cpu: dict[str, list[float]] = {}
        for step, args in FAKE_STEPS.items():
            for size in sizes:
                if step.startswith("--history"):  # the first run records; the second compares with it
                    cpu_of_sweep(work, size, args(work, size))
                cpu.setdefault(step, []).append(cpu_of_sweep(work, size, args(work, size))[0])
    print(f"the CLI in this process over the fake transport, one sample; CPU s at {', '.join(map(str, sizes))} hosts")
    linear = sizes[-1] / sizes[0]
    for step, seconds in cpu.items():
        per_host = ", ".join(f"{1000 * s / n:.2f}" for s, n in zip(seconds, sizes, strict=True))
        grew = seconds[-1] / seconds[0]
        print(f"  {step:<36} {', '.join(f'{s:.2f}' for s in seconds)} s ({per_host} ms/host): "
              f"x{grew:.2f} for x{linear:g} the hosts (against linear: {grew / linear:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="300,1000,3000,10000", help="comma-separated host counts")
    parser.add_argument("--fake", action="store_true", help="no sshd: the CLI in this process, fake transport")
    parser.add_argument("--extra", default="", help="more sweep flags for the bed runs, e.g. '--concurrency 512'")
    parser.add_argument("--call-ms", type=float, default=33.0, help="each simulated nvidia-smi call's least ms")
    parser.add_argument("--compare-at", type=int, default=1000,
                        help="at this size also the CLI in one process, JSON and table, against the in-process "
                             "sweep (default 1000; 0: not)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.fake:
        fake(sizes)
        return
    raise_open_files(max(sizes))
    print(f"machine: {CORES} cores ({len(os.sched_getaffinity(0))} usable), Python {sys.version.split()[0]}")
    try:
        on_the_bed(sizes, shlex.split(args.extra), args.call_ms, args.compare_at or None)
    except SshdUnavailable as exc:
        sys.exit(f"cannot run: {exc}")


if __name__ == "__main__":
    main()
