"""``--active`` over the stub bed (a real OpenSSH sshd on loopback; the bundled collector over real SSH): a node
without libcuda, one whose cuInit fails, one whose test hangs, one whose GPUs are busy. Each is one line in the
report and the sweep goes on; the hung test's process is ended at its budget and nothing of it is left.

The failing and hanging libcuda is ``tests/fake_libcuda.c``, built here with the C compiler (skipped without
one) and found by the node through LD_LIBRARY_PATH, as a driver's would be.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpudiag.checks import CheckSettings
from gpudiag.model import Severity, SweepReport
from gpudiag.model.active import ActiveState
from gpudiag.report.table import render_table
from gpudiag.sweep.runner import SweepOptions, sweep
from gpudiag.transport.ssh import SshOptions, SshTransport
from loopback import SshdCluster, SshdUnavailable, running_cluster

pytestmark = pytest.mark.integration

FAKE_LIBCUDA = Path(__file__).resolve().parents[1] / "fake_libcuda.c"
SCENARIOS = {"127.0.0.2": "idle", "127.0.0.3": "idle", "127.0.0.4": "idle", "127.0.0.5": "healthy"}
NO_LIBCUDA, CUINIT_FAILS, HANGS, BUSY = SCENARIOS
DEADLINE_S = 12.0


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdCluster]:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build the stand-in libcuda.so.1")
    work = tmp_path_factory.mktemp("active_bed")
    lib = work / "cuda"
    lib.mkdir()
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(lib / "libcuda.so.1"), str(FAKE_LIBCUDA)], check=True)
    env = {CUINIT_FAILS: f"LD_LIBRARY_PATH={lib} GPUDIAG_FAKE_CUDA=fail",
           HANGS: f"LD_LIBRARY_PATH={lib} GPUDIAG_FAKE_CUDA=hang"}
    (work / "cluster").mkdir()
    try:
        with running_cluster(work / "cluster", extra_healthy=0, scenarios=SCENARIOS, env=env) as cluster:
            yield cluster
    except SshdUnavailable as exc:
        pytest.skip(str(exc))


def _test_processes() -> set[int]:
    """This machine's processes running the active test (its command line names <gpudiag:active>)."""
    found = set()
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            if b"<gpudiag:active>" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.add(int(pid))
        except OSError:
            continue
    return found


NAMES = {NO_LIBCUDA: "nolib", CUINIT_FAILS: "cuinit", HANGS: "hang", BUSY: "busy"}


def _sweep(bed: SshdCluster) -> tuple[SweepReport, float]:
    hosts = [bed.host(address, name) for address, name in NAMES.items()]
    options = SweepOptions(samples=2, interval_s=0.2, deadline_s=DEADLINE_S, active=True, settings=CheckSettings())
    transport = SshTransport(SshOptions(connect_timeout_s=5.0, ssh_config=[]))  # type: ignore[arg-type]
    started = time.monotonic()
    report = asyncio.run(sweep(hosts, transport, options))
    return report, time.monotonic() - started


def test_each_node_that_cannot_run_the_test_is_one_line_and_the_sweep_goes_on(bed: SshdCluster) -> None:
    before = _test_processes()
    report, wall_s = _sweep(bed)
    by_name = {h.host: h for h in report.hosts}
    assert [h.status.value for h in report.hosts] == ["ok"] * 4  # every node answered, the hung one too
    assert wall_s < DEADLINE_S + 5  # the hung test cost its budget, inside the deadline

    def codes(name: str) -> list[tuple[str, Severity, int | None]]:
        return [(f.code, f.severity, f.gpu) for f in by_name[name].findings if f.code.startswith(("ACTIVE", "CUDA"))]

    assert codes("nolib") == [("ACTIVE_TEST_NOT_RUN", Severity.UNKNOWN, None)]
    assert "libcuda.so.1" in by_name["nolib"].findings[0].summary
    assert codes("cuinit") == [("CUDA_INIT_FAILED", Severity.CRITICAL, None)]
    assert "cuInit: CUDA_ERROR_UNKNOWN (999)" in next(f.summary for f in by_name["cuinit"].findings
                                                       if f.code == "CUDA_INIT_FAILED")
    assert codes("hang") == [("ACTIVE_TEST_TIMEOUT", Severity.CRITICAL, i) for i in range(8)]
    hung = by_name["hang"].readings
    assert hung is not None and hung.active is not None
    assert {g.state for g in hung.active.gpus} == {ActiveState.TIMED_OUT}
    assert hung.active.budget_s is not None and hung.active.elapsed_s is not None
    assert hung.active.elapsed_s < hung.active.budget_s + 2
    busy = by_name["busy"].readings
    assert busy is not None and busy.active is not None and codes("busy") == []
    assert {(g.state, (g.why or "").split(":")[0]) for g in busy.active.gpus} == {(ActiveState.SKIPPED, "in use")}

    text = render_table(report, width=80, fold=True)
    section = text[text.index("Active test"):].split("\n\n")[0].splitlines()[1:]
    heads = [line.split(":")[0] for line in section if not line.startswith(" ")]  # a long line wraps indented
    assert heads == ["nolib", "cuinit", "hang GPU 0-7", "busy GPU 0-7"], text
    assert all(len(line) <= 80 for line in text.splitlines())
    # The hung test's process was ended with its CUDA call (a stand-in that never returns), and nothing is left.
    assert _test_processes() - before == set()
