"""A simulated node's process table: the ``/proc`` entries of the processes a scenario puts on its GPUs.

A scenario's ``"processes"`` (the fake nvidia-smi lists them for ``--query-compute-apps``)::

    "processes": [{"pid": 48213, "gpus": [0, 1], "used_memory_mib": 89000, "uid": 1001,
                   "cmdline": ["python3", "-m", "sglang.launch_server", "--tp-size", "8"],
                   "cgroup": "0::/system.slice/slurmstepd.scope/job_81723/step_0",
                   "environ": {"SLURM_JOB_ID": "81723"}, "stdout": "sglang-glm5.log", "cpu_ticks": 0}]

:func:`write_proc_table` lays them out as Linux does (``<pid>/status``, ``cmdline``, ``stat``, ``cgroup``,
``environ``, ``fd/1`` and ``fd/2`` as links to the log), in a folder the node's collector is pointed at
with ``GPUDIAG_PROC_ROOT`` (the demo's and the test cluster's nodes only; a real node reads ``/proc``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

SCENARIOS = Path(__file__).resolve().parent / "scenarios"


def scenario_processes(name: str, folder: Path = SCENARIOS) -> list[dict[str, object]]:
    """The ``processes`` of scenario ``name`` (following ``extends``), or []."""
    path = folder / f"{name}.json"
    if not path.is_file():
        return []
    data = json.loads(path.read_text())
    if "processes" in data:
        return list(data["processes"])
    return scenario_processes(data["extends"], folder) if data.get("extends") else []


def write_proc_table(root: Path, processes: Sequence[Mapping[str, Any]], logs: Path) -> Path:
    """Write ``processes`` under ``root``; a process's ``stdout`` names a file in ``logs``. Returns ``root``."""
    for p in processes:
        folder = root / str(p["pid"])
        (folder / "fd").mkdir(parents=True, exist_ok=True)
        uid = int(p.get("uid", 0))
        argv = [str(a) for a in p.get("cmdline", ["?"])]
        (folder / "status").write_text(f"Name:\t{Path(argv[0]).name[:15]}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")
        (folder / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
        ticks = int(p.get("cpu_ticks", 0))
        stat = ["S"] + ["0"] * 10 + [str(ticks), "0"] + ["0"] * 30
        (folder / "stat").write_text(f"{p['pid']} ({Path(argv[0]).name[:15]}) {' '.join(stat)}\n")
        (folder / "cgroup").write_text(str(p.get("cgroup", "0::/")) + "\n")
        environ = p.get("environ") or {}
        (folder / "environ").write_bytes(b"".join(f"{k}={v}\0".encode() for k, v in environ.items()))
        for fd in ("1", "2"):
            link = folder / "fd" / fd
            if not link.is_symlink():
                link.symlink_to(logs / str(p["stdout"]) if p.get("stdout") else Path("/dev/null"))
    return root
