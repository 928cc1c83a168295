"""The node side under the oldest CPython CI can get: the real collector bundle, run the way a node runs it.

The node code claims Python 3.6+. The CI machine reaches only PyPI and Debian's mirror, whose oldest suite
still there is bullseye, with Python 3.9: ``.ci/run`` unpacks it into a folder of its own and names it in
``$GPUDIAG_OLD_PYTHON`` (vermin, also in ``.ci/run``, checks the 3.6 floor of syntax and standard library
statically). Here that interpreter is the ``python3`` on the PATH of ``sh -c COMMAND``, where COMMAND is
what :func:`gpudiag.collect.remote.collector_call` sends a node (``timeout … sh -c DISPATCH``, then
``python3 -I -S -c LOADER`` reading the bundle from stdin), and ``nvidia-smi`` is the fake one
(:func:`loopback.install_fake_bin`). The document it prints must parse into GPUs with readings, a log scan
and the node's context. Under CI (``CI=true``) a missing interpreter fails the test; elsewhere it skips.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpudiag.collect.bundle import nvml_binding
from gpudiag.collect.parse import parse_probe_output
from gpudiag.collect.remote import collector_call
from gpudiag.demo.demo_logs import sglang_glm5_lines
from gpudiag.logs import build_plans
from gpudiag.model import Host, SmiStatus
from loopback import install_fake_bin

# Its tests share a module-scoped fixture: one worker runs them all, else each worker builds it again
# (with --dist loadgroup; the default, --dist loadfile, keeps a file on one worker).
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("test_node_old_python")]

OLD_PYTHON_VARIABLE = "GPUDIAG_OLD_PYTHON"


@pytest.fixture(scope="module")
def old_python() -> Path:
    """The old interpreter (``$GPUDIAG_OLD_PYTHON``), checked to be older than the controller's."""
    path = os.environ.get(OLD_PYTHON_VARIABLE, "")
    if not path or not os.access(path, os.X_OK):
        reason = (f"${OLD_PYTHON_VARIABLE} names no interpreter ({path!r}): .ci/run fetches Debian "
                  "bullseye's python3.9 and sets it")
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    version = subprocess.run([path, "-I", "-S", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30, check=True).stdout.split()
    assert version and tuple(map(int, version[0].split("."))) < sys.version_info[:2], version
    return Path(path)


@pytest.fixture
def node_path(old_python: Path, tmp_path: Path) -> str:
    """A node's PATH: the fake nvidia-smi, then ``python3`` = the old interpreter (which notes each start)."""
    install_fake_bin(tmp_path / "bin", {"*": "case_study"}, tmp_path / "state")
    python_dir = tmp_path / "python"
    python_dir.mkdir()
    wrapper = python_dir / "python3"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "python3-calls"}\nexec {old_python} "$@"\n')
    wrapper.chmod(0o755)
    return os.pathsep.join([str(tmp_path / "bin"), str(python_dir), "/usr/bin", "/bin"])


def test_collector_bundle_runs_under_the_old_python(node_path: str, tmp_path: Path) -> None:
    log = tmp_path / "sglang.log"
    log.write_text("\n".join(sglang_glm5_lines(dt.datetime.now())) + "\n")
    host = Host(name="old-node", logs=(str(log),))
    plan = build_plans([host])[host.name]
    call = collector_call(samples=2, interval_s=0.1, deadline_s=60.0, logs=plan.node_config(), context=True)
    env = {"PATH": node_path, "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    # As sshd runs it: stdin held open until the command ends (it ends its process group when stdin ends).
    with subprocess.Popen(["sh", "-c", call.command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, cwd=tmp_path) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(call.stdin)
        proc.stdin.flush()
        stdout, stderr = proc.stdout.read(), proc.stderr.read()
        returncode = proc.wait(90)
    assert returncode == 0, stderr.decode(errors="replace")
    # The Python collector ran, on the old interpreter, started as a node starts it (not the shell fallback).
    (started,) = (tmp_path / "python3-calls").read_text().splitlines()
    assert started.startswith("-I -S -c import os,sys,_thread;b=sys.stdin.buffer.read(")

    readings = parse_probe_output(stdout, log_plan=plan)
    assert readings.smi_status is SmiStatus.OK and readings.problems == ()
    assert len(readings.gpus) == 8
    for gpu in readings.gpus:
        assert gpu.name.startswith("NVIDIA") and gpu.power_w is not None and gpu.utilization_pct == 100.0
        assert len(gpu.samples) == 2
    # The log scan found the server's configuration echo and a signature in the log.
    (scan,) = readings.logs
    assert scan.resolved == str(log) and scan.error is None
    (facts,) = scan.facts
    assert facts.get("tp_size") == 8 and facts.get("moe_runner_backend") == "flashinfer_cutlass"
    assert scan.found("custom_allreduce_disabled")
    # And the node's context: the topology (the fake nvidia-smi's) and the virtualization check.
    assert readings.context is not None and readings.context.interconnect == "pcie"


def test_nvml_binding_loads_under_the_old_python(old_python: Path) -> None:
    """The NVML binding travels in the bundle (cut down from the controller's nvidia-ml-py): it must compile
    and import there too (as the bundle imports it: a module in sys.modules). Without a driver it loads
    nothing until first used."""
    source = nvml_binding()
    assert source is not None
    loaded = subprocess.run([str(old_python), "-I", "-S", "-c",
                             "import sys, types; m = sys.modules['pynvml'] = types.ModuleType('pynvml'); "
                             "exec(compile(sys.stdin.buffer.read(), 'pynvml', 'exec'), m.__dict__); "
                             "print(callable(m.nvmlInit))"],
                            input=source, capture_output=True, timeout=60)
    assert loaded.returncode == 0, loaded.stderr.decode(errors="replace")
    assert loaded.stdout.split() == [b"True"]
