"""Log evidence over a real OpenSSH sshd: the case study end to end, hostile patterns and paths, grep.

The simulated nodes run on this machine, so the logs a test writes into tmp_path are the node's logs; the
probe reads them on the "node" side, in the same round trip as the GPU readings. The case_study node's fake
nvidia-smi answers ``topo -m`` with a PCIe-only matrix; whether the node is a VM is whatever this machine's
``systemd-detect-virt`` (or DMI, or CPU flag) says, which the test reads the same way to know what to expect.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from cli_run import run_cli
from gpudiag.checks import CheckSettings
from gpudiag.collect.parse_logs import parse_context
from gpudiag.demo.demo_logs import sglang_glm5_lines
from gpudiag.logs import LogOptions
from gpudiag.model import HostReport, HostStatus, Severity, SweepReport
from gpudiag.report import ReportView, render
from gpudiag.sweep.runner import SweepOptions, sweep
from gpudiag.transport.ssh import SshOptions, SshTransport
from gpudiag_node import context as node_context

pytestmark = pytest.mark.integration

FAST = SweepOptions(samples=2, interval_s=0.1, deadline_s=30.0, settings=CheckSettings())


def run_sweep(hosts: list, options: SweepOptions = FAST) -> SweepReport:  # type: ignore[type-arg]
    transport = SshTransport(SshOptions(connect_timeout_s=5.0, ssh_config=[]))
    return asyncio.run(sweep(hosts, transport, options))


def only(report: SweepReport) -> HostReport:
    (host,) = report.hosts
    return host


def this_machine_is_a_vm() -> bool | None:
    """What the simulated node will find: it is this machine, with the fixture's PATH."""
    saved = os.environ.get("PATH", "")
    os.environ["PATH"] = "/usr/bin:/bin"
    try:
        raw = node_context.collect(None)
    finally:
        os.environ["PATH"] = saved
    context = parse_context(raw)
    return context.is_vm if context else None


def test_the_case_study_end_to_end(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """8 SM120 GPUs at 100% / 55% power, a GLM-5 SGLang log with the autotuner enabled and no [Autotuner]
    line, PCIe-only topology: BUSY_LOW_POWER with its context, LOG_EXPECTED_ABSENT, the server's facts, and
    no match counted on the server_args line - even for a naive "autotune" signature."""
    log = tmp_path / "sglang-glm5.log"
    log.write_text("\n".join(sglang_glm5_lines(dt.datetime.now())) + "\n")
    naive = tmp_path / "naive.yaml"
    naive.write_text("pack: naive\nsignatures:\n  - {name: naive_autotune, regex: autotun, ignore_case: true, "
                     "severity: warning, meaning: autotune mentioned, action: none}\n")
    (case,) = sshd_cluster.hosts("case_study")
    case = dataclasses.replace(case, logs=(str(log),))
    options = dataclasses.replace(FAST, logs=LogOptions(pack_files=(str(naive),)))
    host = only(run_sweep([case], options))

    assert host.status is HostStatus.OK and host.readings is not None
    codes = [(f.code, f.gpu) for f in host.findings]
    assert codes == [("BUSY_LOW_POWER", i) for i in range(8)] + [("LOG_SIGNATURE", None),
                                                                  ("LOG_EXPECTED_ABSENT", None)]
    busy = host.findings[0]
    assert 50.0 <= busy.evidence["pct_of_limit"] <= 60.0  # type: ignore[operator]
    assert "it reaches the other 7 GPUs over PCIe only (PIX/NODE/SYS, no NVLink)" in busy.summary
    assert "MoE expert parallelism (ep_size=8) sends its all-to-all traffic over PCIe" in busy.summary
    assert ("virtual machine" in busy.summary) is bool(this_machine_is_a_vm())
    assert busy.evidence["interconnect"] == "pcie"

    absent = next(f for f in host.findings if f.code == "LOG_EXPECTED_ABSENT")
    assert absent.severity is Severity.WARNING
    assert "yet no [Autotuner] line followed its start" in absent.summary
    assert "the autotuner never ran, so the MoE path in use (moe_runner_backend=flashinfer_cutlass)" in absent.summary

    signatures = [f.evidence["signature"] for f in host.findings if f.code == "LOG_SIGNATURE"]
    assert signatures == ["custom_allreduce_disabled"]  # not naive_autotune: its only "autotune" is the echo
    (scan,) = host.readings.logs
    assert scan.found("naive_autotune") == () and scan.resolved == str(log)
    (facts,) = scan.facts
    assert {k: facts.get(k) for k in ("tp_size", "ep_size", "moe_runner_backend", "attention_backend",
                                      "disable_flashinfer_autotune")} == {
        "tp_size": 8, "ep_size": 8, "moe_runner_backend": "flashinfer_cutlass", "attention_backend": "trtllm_mla",
        "disable_flashinfer_autotune": False}
    assert host.readings.context is not None and host.readings.context.interconnect == "pcie"

    table = render(SweepReport(started_at="x", duration_s=1.0, hosts=(host,)), "table", ReportView(width=200))
    assert re.search(r"\n +context +8 GPUs over PCIe only \(PIX/NODE/SYS, no NVLink\)", table), table
    assert "moe_runner_backend=flashinfer_cutlass" in table and "LOG_EXPECTED_ABSENT" in table


def test_hostile_patterns_and_paths_find_their_text_and_run_nothing(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    canary = tmp_path / "pwned"
    home = sshd_cluster.state_dir.parent / "home"  # the node's cwd: where a relative `touch pwned` would land
    texts = [f"'; touch {canary}; echo '", f"$(touch {canary})", f"`touch {canary}`", f'"; touch {canary} #',
             "$(touch pwned)", "a; touch pwned"]
    folder = tmp_path / "logs $(touch pwned) `touch pwned`; 'x'"
    folder.mkdir()
    log = folder / "it's \"the\" log; $(id).log"
    log.write_text("".join(f"{i}: {t}\n" for i, t in enumerate(texts)))
    pack = tmp_path / "hostile.yaml"
    pack.write_text("pack: hostile\nsignatures:\n" + "".join(
        f"  - name: h{i}\n    regex: {json.dumps(re.escape(t))}\n    severity: warning\n    meaning: m\n"
        f"    action: a\n" for i, t in enumerate(texts)))
    (host,) = sshd_cluster.hosts("healthy")
    host = dataclasses.replace(host, logs=({"path": str(log), "packs": [str(pack)]},
                                           {"path": str(folder / "missing $(touch pwned).log"),
                                            "packs": [str(pack)]}))
    result = only(run_sweep([host]))
    assert result.status is HostStatus.OK and result.readings is not None
    found, missing = result.readings.logs
    assert found.resolved == str(log)
    assert [(m.signature, m.count, m.first.text if m.first else None) for m in found.matches] == [
        (f"h{i}", 1, f"{i}: {t}") for i, t in enumerate(texts)]
    assert [(f.code, f.severity) for f in result.findings if f.code == "LOG_UNREADABLE"] == [
        ("LOG_UNREADABLE", Severity.UNKNOWN)]
    assert missing.error == "no such file"
    assert not canary.exists() and not (home / "pwned").exists() and not (tmp_path / "pwned").exists()


def test_a_missing_log_is_a_finding_not_a_host_error(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (host,) = sshd_cluster.hosts("healthy")
    result = only(run_sweep([dataclasses.replace(host, logs=("~/no-such.log",))]))
    assert result.status is HostStatus.OK and result.error is None
    (found,) = result.findings
    assert (found.code, found.evidence["status"]) == ("LOG_UNREADABLE", "missing")
    assert found.summary.startswith("~/no-such.log (") and "/no-such.log): no such file" in found.summary


def test_a_node_without_python_says_its_logs_were_not_scanned(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (host,) = sshd_cluster.hosts("no_python")
    result = only(run_sweep([dataclasses.replace(host, logs=(str(tmp_path / "x.log"),))]))
    assert result.status is HostStatus.PARTIAL and result.readings is not None
    assert result.readings.problems == (
        "the logs were not scanned: the log scan needs python3, which this node lacks",)
    assert [f.code for f in result.findings] == ["PROBE_INCOMPLETE"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)  # in this process: the process is not the point


def test_cli_grep_folds_identical_output_and_sweep_reads_inventory_logs(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "glm5.log"
    log.write_text("\n".join(sglang_glm5_lines(dt.datetime.now())) + "\n")
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(sshd_cluster.inventory_defaults() + f"""  logs: ["{log}"]
hosts:
  node1: {{address: 127.0.0.2}}
  node2: {{address: 127.0.0.4}}
  node3: {{address: 127.0.0.5, logs: [{{path: "{tmp_path / 'none.log'}", packs: [sglang]}}]}}
""")
    done = _cli("grep", "-i", str(inventory), "--signature", "sglang_decode_batch", "--lines", "2")
    assert done.returncode == 2, done.stderr  # node3's log is missing: "no match" cannot be trusted there
    out = done.stdout
    assert out.count("node[1-2] (2 hosts)") == 1 and "node3 (1 host)" in out
    assert f"{log}: 60 matching lines" in out and "gen throughput (token/s): 225.37" in out
    assert f"{tmp_path / 'none.log'}: missing (no such file)" in out

    as_json = json.loads(_cli("grep", "-i", str(inventory), "--limit", "node1", "--signature", "sglang_ready",
                              "--format", "json").stdout)
    assert as_json["exit_code"] == 0 and as_json["hosts"][0]["logs"][0]["matches"][0]["count"] == 1

    swept = _cli("sweep", "-i", str(inventory), "--limit", "node1", "--format", "json", "--samples", "1")
    doc = json.loads(swept.stdout)
    assert {f["code"] for f in doc["hosts"][0]["findings"]} == {"LOG_EXPECTED_ABSENT", "LOG_SIGNATURE"}

    broken = tmp_path / "broken.yaml"
    broken.write_text(inventory.read_text().replace("packs: [sglang]", "packs: [sglang], grep: Xid"))
    bad = _cli("sweep", "-i", str(broken))
    assert bad.returncode == 3 and bad.stdout == ""
    assert bad.stderr.strip() == ("gpudiag: host node3: logs[0]: unknown key 'grep' "
                                  "(known: packs, path, since_hours, tail_mib)")
