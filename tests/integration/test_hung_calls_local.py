"""A hung nvidia-smi is a finding of a host that answered, not a host timeout: each call on the node has its own
bound, well inside the deadline; past it the call (and what it started) is killed and the document says which
call hung and for how long. The real collectors (Python and POSIX sh) run here with the fake nvidia-smi in its
``hang`` scenario on PATH, through the local transport (the real command line, no SSH). Split from
tests/unit/checks/test_hung_calls.py (the bound's arithmetic and the finding: there)."""

from __future__ import annotations

import asyncio
import json
import shlex
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpudiag.collect.bundle import fallback_source
from gpudiag.collect.parse import parse_probe
from gpudiag.collect.remote import CollectorCall, call_bound_s, collector_call
from gpudiag.model import Host, HungCall, SmiStatus
from gpudiag.model.choices import Source
from gpudiag.transport.base import RemoteCommand
from gpudiag.transport.local import LocalTransport
from gpudiag_node import proc

STUB = Path(__file__).resolve().parents[2] / "agent" / "gpudiag" / "demo" / "fake_nvidia_smi"


def _ended(pid: int, wait_s: float = 5.0) -> bool:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def test_a_call_past_its_bound_is_killed_with_its_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    del proc.HUNG[:]
    code, out, err = proc.run(["sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait"], 0.5)
    assert (code, out, err) == (124, "", "no answer in 0.5 s: killed")
    assert [h["call"] for h in proc.HUNG] == ["sh -c"] and 0.5 <= proc.HUNG[0]["after_s"] < 5
    assert _ended(int(pid_file.read_text()))  # the child it started holds no pipe and burns no slot
    del proc.HUNG[:]


@pytest.fixture
def hung_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This machine as a node whose nvidia-smi hangs on --query-gpu (and answers --help-query-gpu)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    body = STUB.read_text().split("\n", 1)[1]
    (bin_dir / "nvidia-smi").write_text(f"#!{sys.executable}\n{body}")
    (bin_dir / "nvidia-smi").chmod(0o755 | stat.S_IXUSR)
    (bin_dir / "scenarios").symlink_to(STUB.parent / "scenarios")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("GPUDIAG_FAKE_SCENARIO", "hang")
    monkeypatch.setenv("GPUDIAG_FAKE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("SSH_CONNECTION", "127.0.0.1 40000 127.0.0.9 22")
    return tmp_path / "state" / "hang-127.0.0.9.pid"


def _collect(call: CollectorCall, deadline_s: float) -> dict[str, object]:
    command = RemoteCommand(command=call.command, stdin=call.stdin, deadline_s=deadline_s,
                            ends_with_stdin=call.ends_with_stdin)
    result = asyncio.run(LocalTransport().run(Host(name="localhost"), command))
    assert result.exit_status == 0, result.stderr
    return dict(json.loads(result.stdout))


def test_the_python_collector_reports_the_hung_call_and_answers(hung_node: Path) -> None:
    call = collector_call(samples=2, interval_s=0.1, deadline_s=6.0, source=Source.NVIDIA_SMI)
    doc = _collect(call, 6.0)
    bound = call_bound_s(6.0, 2, 0.1)
    (hung,) = doc["hung"]  # type: ignore[misc]
    assert hung["call"] == "nvidia-smi --query-gpu" and bound <= hung["after_s"] < 6.0
    assert [s["exit"] for s in doc["samples"]] == [124]  # type: ignore[union-attr]  # not asked again
    assert _ended(int(hung_node.read_text()))
    node = parse_probe(doc)
    assert node.smi_status is SmiStatus.HUNG and node.hung_calls == (HungCall(call=hung["call"],
                                                                               after_s=hung["after_s"]),)


def test_the_shell_collector_bounds_each_call_too(hung_node: Path) -> None:
    """The POSIX sh collector (nodes without python3) as the dispatcher runs it: its arguments from the same
    command line (``@bound=S`` among them), each nvidia-smi call wrapped in `timeout`."""
    call = collector_call(samples=2, interval_s=0.1, deadline_s=6.0, source=Source.NVIDIA_SMI)
    args = shlex.split(call.command)
    script_args = args[args.index(fallback_source()) + 1:]  # samples, interval, @bound=, the field table
    assert f"@bound={call_bound_s(6.0, 2, 0.1):g}" in script_args
    done = subprocess.run(["sh", "-c", fallback_source(), "gpudiag", *script_args], capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=30, check=True)
    doc = json.loads(done.stdout)
    assert doc["collector"] == "sh"
    assert doc["hung"] == [{"call": "nvidia-smi --query-gpu", "after_s": call_bound_s(6.0, 2, 0.1)}]
    assert [s["exit"] for s in doc["samples"]] == [124] and doc["cuda_version"] is None  # not asked again
    assert parse_probe(doc).smi_status is SmiStatus.HUNG
    assert _ended(int(hung_node.read_text()))
