"""How much CPU ``gpudiag --version``, ``gpudiag sweep -h`` and ``gpudiag --help`` cost to start, against their
targets (issue 22: under 0.1 s and 0.25 s) and against the interpreter alone. Prints numbers only.

Run from the repository root::

    python3 bench/startup.py              # 15 runs of each, median user + system CPU
    python3 bench/startup.py --runs 31

Each command runs ``--runs`` times, interleaved (one of each in turn, so that a change in the machine's load
falls on all of them alike), as the console script starts it (``python3 -c 'from gpudiag.cli.entry import
main; main()'``: what pip's ``gpudiag`` script runs), with the user and system CPU of the child from
``os.wait4``. Bytecode is compiled first (a pip install writes it; ``PYTHONDONTWRITEBYTECODE`` is ignored here
so that a source tree measures the same). Also printed: the gpudiag and third-party modules each command
loads (``-X importtime``), the number that tests/unit/cli/test_cli_imports.py bounds by name; and what a sweep's
start-up is made of: the libraries it imports alone, and a whole ``gpudiag sweep`` of one host that refuses
the connection at once (its fixed cost: what the CLI adds to a sweep besides its per-host work).
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "agent"), str(REPO / "collectors"),
                                                  os.environ.get("PYTHONPATH")]))
ENTRY = "import sys; sys.argv[0] = 'gpudiag'; from gpudiag.cli.entry import main; main()"
# A sweep's fixed cost: one host whose port refuses at once (the inventory is written in main()).
REFUSED = Path(tempfile.gettempdir()) / f"gpudiag-startup-{os.getpid()}.yaml"
COMMANDS: dict[str, tuple[tuple[str, ...], float | None]] = {  # label: (argv, target CPU s)
    "python3 -c pass": (("-c", "pass"), None),
    "python3 -I -S -c pass": (("-I", "-S", "-c", "pass"), None),
    "gpudiag --version": (("-c", ENTRY, "--version"), 0.1),
    "gpudiag sweep -h": (("-c", ENTRY, "sweep", "-h"), 0.25),
    "gpudiag --help": (("-c", ENTRY, "--help"), None),
    # what a sweep's start-up is made of: the libraries it imports, then the whole command for one host
    "import asyncssh": (("-c", "import asyncssh"), None),
    "import asyncssh typer yaml": (("-c", "import asyncssh, typer, yaml"), None),
    # typer 0.29 and later import pydantic for every option (docs/benchmarks.md): its cost, where it is installed
    **({"... and pydantic (typer's)": (("-c", "import asyncssh, typer, yaml, pydantic"), None)}
       if importlib.util.find_spec("pydantic") else {}),
    "gpudiag sweep, 1 host": (("-c", ENTRY, "sweep", "-i", str(REFUSED), "--format", "json"), None),
}


def cpu_s(argv: Sequence[str]) -> float:
    """User + system CPU of one run of ``argv`` (and anything it waited for)."""
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=ENV)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 2):  # 2: the refused host is a critical finding
        raise SystemExit(f"{' '.join(argv)} exited {os.waitstatus_to_exitcode(status)}")
    return usage.ru_utime + usage.ru_stime


def loaded(argv: Sequence[str]) -> tuple[int, int]:
    """(gpudiag modules, other non-stdlib-looking modules) that ``argv`` imports, from ``-X importtime``."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], capture_output=True, text=True, env=ENV,
                          check=False)
    names = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    names = [n for n in names if n and n != "package"]
    ours = [n for n in names if n.split(".")[0] in ("gpudiag", "gpudiag_node")]
    third = {n.split(".")[0] for n in names if n.split(".")[0] not in sys.stdlib_module_names} - {
        "gpudiag", "gpudiag_node", "__editable___gpudiag_0_1_0_finder"}
    return len(ours), len(third)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=15, help="runs of each command (default 15)")
    args = parser.parse_args()
    REFUSED.write_text("hosts:\n  refused: {address: 127.0.0.1, port: 9}\n")  # the discard port: nothing listens
    compileall.compile_dir(REPO / "agent", quiet=1)
    compileall.compile_dir(REPO / "collectors", quiet=1)
    for argv, _ in COMMANDS.values():  # warm-up: the page cache, any bytecode left to write
        cpu_s([sys.executable, *argv])
    samples: dict[str, list[float]] = {label: [] for label in COMMANDS}
    for _ in range(args.runs):
        for label, (argv, _) in COMMANDS.items():
            samples[label].append(cpu_s([sys.executable, *argv]))
    base = statistics.median(samples["python3 -c pass"])
    print(f"start-up CPU (user + system), median of {args.runs} interleaved runs; Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} cores, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"  {'command':<28} {'median s':>9} {'min s':>7} {'above python':>13} {'target s':>9} {'ratio':>6} "
          f"{'gpudiag/other modules':>22}")
    for label, (argv, target) in COMMANDS.items():
        median = statistics.median(samples[label])
        ours, third = loaded(argv)
        ratio = f"{median / target:.2f}" if target else "-"
        print(f"  {label:<28} {median:9.3f} {min(samples[label]):7.3f} {median - base:13.3f} "
              f"{target if target else '-':>9} {ratio:>6} {f'{ours}/{third}':>22}")
    print("  (ratio: median / target, at most 1.00 meets it)")
    REFUSED.unlink()


if __name__ == "__main__":
    main()
