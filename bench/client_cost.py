"""Client CPU per host of the gpudiag CLI, default install, against its own in-process sweep and against pdsh
and clush with curve25519 forced, in one run on the loopback bed (issue 22's client target). Prints the
ratios.

Run from the repository root (OpenSSH's sshd and ssh; pdsh and clush where installed)::

    python3 bench/client_cost.py --sizes 300               # one round: about 3 minutes on 2 cores
    python3 bench/client_cost.py --sizes 300,1000 --rounds 2

Per size N, the bed of ``bench/sweep_loopback.py`` (N simulated 8-GPU nodes behind real sshds, each
nvidia-smi call lasting ``--call-ms``), and per round, one after the other on the same hosts, one sample each:

- ``gpudiag in-process``: :func:`gpudiag.sweep.runner.sweep` in this process (no start-up, no imports, no
  report): the reference;
- ``gpudiag CLI --format json`` and ``--format table``, the default install (orjson is one of its
  dependencies): ``gpudiag sweep -i INVENTORY --samples 1 --interval 0`` as a child process (``python3 -m
  gpudiag``); with ``--no-orjson`` also the JSON with orjson made unimportable (``sys.modules['orjson'] =
  None``), as where it could not be installed;
- ``pdsh -R ssh`` (its default fan-out, 32) and ``clush`` (64) with ``-o KexAlgorithms=curve25519-sha256``:
  one OpenSSH client per host running the peers' one ``nvidia-smi --query-gpu`` call.

The client CPU is the child's user + system time with everything it reaped (GNU time); for the in-process
sweep, ``getrusage`` deltas. With several rounds the order is reversed each round and each figure is the
median. The ratios printed: CLI / in-process (target at most 1.3) and pdsh or clush / CLI (target at least
3), each from this run. The machine's other load shows in ``other s`` (see sweep_loopback.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the loopback sshd cluster (tests/loopback.py)

from sweep_loopback import (  # noqa: E402
    CLI,
    CLI_NO_ORJSON,
    DEFAULT_FAN_OUT,
    FORCED_KEX,
    H200_CALL_MS,
    Row,
    bed,
    gpudiag_cli,
    gpudiag_in_process,
    peer,
    raise_open_files,
    table,
    write_inventory,
)

from loopback import SshdUnavailable  # noqa: E402

IN_PROCESS = "gpudiag in-process"
ONE = ("--samples", "1", "--interval", "0")


def _median_row(rows: Sequence[Row]) -> Row:
    """One row whose figures are the medians of ``rows`` (the same tool), answered the least of them."""
    if len(rows) == 1:
        return rows[0]
    med = statistics.median
    return dataclasses.replace(rows[0], wall_s=med(r.wall_s for r in rows), cpu_s=med(r.cpu_s for r in rows),
                               rss_one_mib=max(r.rss_one_mib for r in rows), sshd_cpu_s=med(r.sshd_cpu_s for r in rows),
                               other_cpu_s=max(r.other_cpu_s for r in rows), answered=min(r.answered for r in rows),
                               note="; ".join(r.note for r in rows if r.note))


def one_size(size: int, call_ms: float, rounds: int, formats: Sequence[str], without_orjson: bool,
             fan_out: int | None) -> list[str]:
    """The measured rows of one size, printed, and the lines of its ratios."""
    runs: list[tuple[str, tuple[str, Sequence[str]] | str | None]] = [(IN_PROCESS, None)]
    runs += [(f"gpudiag CLI --format {fmt}", (fmt, CLI)) for fmt in formats]
    if without_orjson:
        runs.append(("gpudiag CLI --format json, no orjson", ("json", CLI_NO_ORJSON)))
    runs += [(tool, tool) for tool in ("pdsh", "clush") if shutil.which(tool)]
    measured: dict[str, list[Row]] = {}
    ours = DEFAULT_FAN_OUT["gpudiag"]
    with bed(size, call_ms, prefix="gpudiag-client-") as (cluster, work):
        if cluster is None:
            return []
        hosts = cluster.extra_hosts(size)
        inventory = write_inventory(work / "inventory.yaml", cluster, hosts)
        gpudiag_cli(cluster, write_inventory(work / "warm.yaml", cluster, hosts[:4]), ONE, "warm-up")
        gpudiag_in_process(cluster, hosts[:4], 1, 0.0, "warm-up")
        for n in range(rounds):
            for label, how in (runs if n % 2 == 0 else list(reversed(runs))):
                if how is None:
                    row = gpudiag_in_process(cluster, hosts, 1, 0.0, label, concurrency=fan_out or ours)
                elif isinstance(how, tuple):
                    row = gpudiag_cli(cluster, inventory, ONE, label, fmt=how[0], entry=how[1],
                                      concurrency=fan_out or ours)[0]
                else:
                    row = peer(how, cluster, [h.target for h in hosts], fan_out or DEFAULT_FAN_OUT[how], FORCED_KEX)
                measured.setdefault(label, []).append(row)
    rows = {label: _median_row(found) for label, found in measured.items()}
    reference = rows[IN_PROCESS]
    print(f"\n== {size} hosts, {rounds} round(s), one sample, {call_ms:g} ms nvidia-smi calls " + "=" * 40)
    print(table(list(rows.values()), reference, size))
    ms = {label: 1000 * r.cpu_s / size for label, r in rows.items()}
    lines = [f"{size} hosts: client CPU ms/host: " + ", ".join(f"{label} {v:.2f}" for label, v in ms.items())]
    for label in [label for label in rows if label.startswith("gpudiag CLI")]:
        lines.append(f"  {label} / in-process: {ms[label] / ms[IN_PROCESS]:.2f} (target <= 1.3)")
        for tool in [t for t in rows if t.startswith(("pdsh", "clush"))]:
            lines.append(f"    {tool} / {label}: {ms[tool] / ms[label]:.2f} (target >= 3)")
    print("\n".join(lines))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="300", help="comma-separated host counts (default 300)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds, the order reversed each (default 1)")
    parser.add_argument("--formats", default="json,table", help="the CLI's formats (default json,table)")
    parser.add_argument("--no-orjson", action="store_true",
                        help="also the JSON with orjson unimportable (where it cannot be installed)")
    parser.add_argument("--fan-out", type=int, default=None,
                        help="every tool at this fan-out (default: each its own: gpudiag 256, pdsh 32, clush 64); "
                             "lower it where a loaded machine makes logins time out")
    parser.add_argument("--call-ms", type=float, default=H200_CALL_MS,
                        help=f"how long each simulated nvidia-smi call lasts at least (default {H200_CALL_MS:g})")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    raise_open_files(max(sizes))
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    summary: list[str] = []
    try:
        for size in sizes:
            summary += one_size(size, args.call_ms, args.rounds, formats, args.no_orjson, args.fan_out)
    except SshdUnavailable as exc:
        sys.exit(f"cannot run: {exc}")
    print("\nsummary:\n" + "\n".join(summary))


if __name__ == "__main__":
    main()
