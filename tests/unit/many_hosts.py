"""Many 8-GPU hosts for the CLI without SSH: each answers the bed's recorded collector document
(``tests/data/bed_h200x8/probe.json``) with a power figure of its own on GPU 0, so that no two hosts fold into
one table row, through the shared fake transport; and :func:`cpu_of_sweep`, the CPU seconds of one ``gpudiag
sweep`` of them run through the console entry point in this process. Shared by tests/scale/test_cli_scale.py
and ``bench/growth.py --fake``."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from cpu_cost import cpu_of
from fake_transport import DATA, FakeTransport, answer, override_transport

from gpudiag.model import Host
from gpudiag.transport.base import RemoteCommand

_POWER = b"602.27, 602.27"  # GPU 0's power.draw and power.draw.instant in the recorded document


def host_name(i: int) -> str:
    return f"n{i:05d}"


def handler() -> Callable[[Host, RemoteCommand], object]:
    """A fake node for any :func:`host_name`: the bed's document, GPU 0 drawing ``300 + i % 397`` W."""
    template = (DATA / "bed_h200x8" / "probe.json").read_bytes()
    assert _POWER in template, "the recorded power figure to vary is not in the document"

    def answer_for(host: Host, _command: RemoteCommand) -> object:
        i = int(host.name[1:])
        watts = f"{300 + i % 397}.{i % 100:02d}".encode()
        return answer(template.replace(_POWER, watts + b", " + watts, 1))

    return answer_for


def inventory(folder: Path, count: int) -> Path:
    """An inventory of ``count`` hosts (n00000, n00001, ...) in ``folder``."""
    path = folder / f"inventory-{count}.yaml"
    if not path.exists():
        lines = [f"  {host_name(i)}: {{address: 10.{i // 65536}.{i // 256 % 256}.{i % 256}}}" for i in range(count)]
        path.write_text("hosts:\n" + "\n".join(lines) + "\n")
    return path


def cpu_of_sweep(folder: Path, count: int, args: Sequence[str]) -> tuple[float, str]:
    """CPU seconds (this process) of ``gpudiag sweep -i INVENTORY --samples 1 --interval 0 ARGS`` over ``count``
    fake hosts, through the console entry point, and what it printed on stdout."""
    from gpudiag.cli.entry import main

    transport = FakeTransport(handler())  # type: ignore[arg-type]
    argv = ["gpudiag", "sweep", "-i", str(inventory(folder, count)), "--samples", "1", "--interval", "0", *args]
    saved, sys.argv = sys.argv, argv
    out = io.StringIO()

    def run() -> None:
        with override_transport(lambda _ssh: transport), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(io.StringIO()), contextlib.suppress(SystemExit):
            main()

    try:
        spent, _ = cpu_of(run)  # on its own heap, as a run of the CLI is (tests/unit/cpu_cost.py)
    finally:
        sys.argv = saved
    return spent, out.getvalue()


def least_cpu_of_sweeps(folder: Path, count: int, args: Sequence[str], runs: int = 3) -> tuple[float, str]:
    """The least CPU of ``runs`` sweeps (:func:`cpu_of_sweep`) and the last one's output: noise (another
    test's thread, the scheduler) only ever adds CPU, so the least is the sweep's own cost."""
    measured = [cpu_of_sweep(folder, count, args) for _ in range(runs)]
    return min(cpu for cpu, _ in measured), measured[-1][1]
