"""``gpudiag grep`` scans the logs a sweep finds through the inference servers' processes.

A log search reads no GPU, so no GPU lists its processes; the node finds the servers by their command line
instead (``gpudiag_node.processes.servers_running``). Before, ``gpudiag grep --demo --signature
sglang_decode_batch`` answered "no log scanned" for the case-study host, whose SGLang log (60 decode lines)
is configured nowhere and found only as its server's stdout. The command over the demo cluster:
tests/integration/test_grep_demo_servers.py."""

from __future__ import annotations

from pathlib import Path

from gpudiag.demo.proc_table import scenario_processes, write_proc_table
from gpudiag_node.processes import server_logs, servers_running

SGLANG = [{"server": "SGLang", "regex": r"sglang\.launch_server"}]


def test_servers_are_found_by_command_line_without_the_gpus(tmp_path: Path) -> None:
    (tmp_path / "sglang-glm5.log").write_text("Decode batch\n")  # the scenario server's stdout
    processes = scenario_processes("case_study_server")
    root = write_proc_table(tmp_path / "proc", processes, tmp_path)
    (root / "1").mkdir()  # not a server: init
    (root / "1" / "cmdline").write_bytes(b"/sbin/init\0")
    found = servers_running(SGLANG, root=str(root))
    assert set(found["procs"]) == {str(p["pid"]) for p in processes
                                   if "sglang.launch_server" in " ".join(p.get("cmdline") or [])}
    assert [how["server"] for _, how in server_logs(found, SGLANG, root=str(root))] == ["SGLang"]
    assert servers_running([], root=str(root)) == {"procs": {}}
    assert servers_running(SGLANG, root=str(tmp_path / "nowhere")) == {"procs": {}}
