"""The node's fabric-manager check (collectors/gpudiag_node/links.py) on made-up /dev and /proc trees: it reads
nothing where no NVSwitch is present, and where some are, whether an nv-fabricmanager process runs."""

from __future__ import annotations

from pathlib import Path

from gpudiag.collect.parse import parse_probe
from gpudiag_node.links import fabric_manager


def tree(tmp_path: Path, nvswitches: int, processes: dict[int, str]) -> tuple[str, str]:
    dev, proc = tmp_path / "dev", tmp_path / "proc"
    dev.mkdir()
    for name in ["nvidia0", "nvidiactl", "nvidia-uvm", "nvidia-nvswitchctl",
                 *(f"nvidia-nvswitch{i}" for i in range(nvswitches))]:
        (dev / name).touch()
    for pid, comm in processes.items():
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "comm").write_text(comm + "\n")
    (proc / "self").mkdir(parents=True, exist_ok=True)
    return str(dev), str(proc)


def test_no_nvswitch_reads_nothing(tmp_path: Path) -> None:
    """The H200 VM's /dev (tests/data/h200_580.159_health: nvidia0, nvidiactl, nvidia-uvm): not applicable."""
    assert fabric_manager(*tree(tmp_path, 0, {1: "nv-fabricmanager"})) is None


def test_nvswitches_with_and_without_the_fabric_manager(tmp_path: Path) -> None:
    dev, proc = tree(tmp_path, 4, {1: "systemd", 812: "nv-fabricmanager"})
    assert fabric_manager(dev, proc) == {"nvswitches": 4, "running": True}
    (Path(proc) / "812" / "comm").write_text("nvidia-persiste\n")
    found = fabric_manager(dev, proc)
    assert found == {"nvswitches": 4, "running": False}
    node = parse_probe({"schema": "gpudiag.probe/2", "fabric_manager": found,
                        "nvidia_smi": {"path": "/usr/bin/nvidia-smi"}, "samples": []})
    assert (node.nvswitch_count, node.fabric_manager_running) == (4, False)
