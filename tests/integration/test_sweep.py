"""The whole sweep over a real OpenSSH sshd on loopback: transport, collector, parser, checks, report.

Each simulated node is a 127.0.0.x address of the ``sshd_cluster`` fixture; its fake nvidia-smi replays a
scenario built from real captures. Faults are real too: a port where nothing listens, a listener that
never speaks SSH, a wrong host key, a key the server does not accept, an nvidia-smi that hangs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest

from cli_run import run_cli
from gpudiag.checks import CheckSettings
from gpudiag.collect.remote import call_bound_s
from gpudiag.model import Host, HostReport, HostStatus, Severity, SmiStatus, SweepReport
from gpudiag.sweep.runner import SweepOptions, sweep
from gpudiag.transport.ssh import SshOptions, SshTransport
from gpudiag_node import smi as probe

# Its tests share a module-scoped fixture: one worker runs them all, else each worker builds it again
# (with --dist loadgroup; the default, --dist loadfile, keeps a file on one worker).
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("test_sweep")]

FAST = SweepOptions(samples=3, interval_s=0.1, deadline_s=20.0, settings=CheckSettings())


def run_sweep(hosts: tuple[Host, ...] | list[Host], options: SweepOptions = FAST,
              **ssh: object) -> SweepReport:
    ssh.setdefault("connect_timeout_s", 5.0)
    ssh.setdefault("ssh_config", [])  # the tester's ~/.ssh/config must not change what is tested
    return asyncio.run(sweep(list(hosts), SshTransport(SshOptions(**ssh)), options))  # type: ignore[arg-type]


def only(report: SweepReport) -> HostReport:
    (host,) = report.hosts
    return host


def libcuda_loads() -> bool:
    """Whether this machine (where the simulated nodes' collectors run) has a libcuda that loads."""
    return probe.cuda_version_from_libcuda() is not None


def codes(host: HostReport) -> list[tuple[str, int | None]]:
    return [(f.code, f.gpu) for f in host.findings]


@pytest.fixture(scope="module")
def scenario_sweep(sshd_cluster) -> dict[str, HostReport]:  # type: ignore[no-untyped-def]
    """One sweep of every scenario host at once (the hang host is tested on its own)."""
    names = [s for s in dict.fromkeys(sshd_cluster.scenarios.values()) if s != "hang"]
    hosts = [sshd_cluster.host(sshd_cluster.address_of(s), s) for s in names]
    report = run_sweep(hosts)
    return {h.host: h for h in report.hosts}


def test_healthy_node_has_no_findings(scenario_sweep: dict[str, HostReport]) -> None:
    host = scenario_sweep["healthy"]
    assert host.status is HostStatus.OK and host.error is None and host.findings == ()
    assert host.readings is not None and host.readings.source == "nvidia-smi (python collector)"
    assert host.readings.driver_version == "580.159.04" and host.readings.cuda_version == "13.0"
    assert host.readings.sample_count == 3
    assert len(host.gpus) == 8 and {g.sm for g in host.gpus} == {"SM90"}
    assert all(len(g.samples) == 3 for g in host.gpus)


def test_case_study_node_is_flagged_busy_low_power_on_every_gpu(scenario_sweep: dict[str, HostReport]) -> None:
    host = scenario_sweep["case_study"]
    assert host.status is HostStatus.OK
    assert codes(host) == [("BUSY_LOW_POWER", i) for i in range(8)]
    for gpu, finding in zip(host.gpus, host.findings, strict=True):
        assert (gpu.compute_capability, gpu.sm, gpu.arch) == ("12.0", "SM120", "Blackwell (RTX)")
        assert gpu.enforced_power_limit_w == 600.0 and gpu.utilization_pct == 100.0
        assert 50.0 <= finding.evidence["pct_of_limit"] <= 60.0  # type: ignore[operator]
        assert finding.severity is Severity.WARNING


def test_bandwidth_bound_node_is_not_flagged(scenario_sweep: dict[str, HostReport]) -> None:
    host = scenario_sweep["bandwidth_bound"]
    assert host.findings == ()
    assert all(g.utilization_pct is not None and g.utilization_pct >= 99 for g in host.gpus)
    assert all(g.memory_utilization_pct is not None and g.memory_utilization_pct >= 98 for g in host.gpus)


def test_idle_node_has_no_findings(scenario_sweep: dict[str, HostReport]) -> None:
    host = scenario_sweep["idle"]
    assert host.findings == () and all("gpu_idle" in g.clock_event_reasons for g in host.gpus)


def test_reduced_power_limit(scenario_sweep: dict[str, HostReport]) -> None:
    host = scenario_sweep["power_reduced"]
    assert codes(host) == [("POWER_LIMIT_REDUCED", i) for i in range(8)]
    assert host.findings[0].evidence["enforced_power_limit_w"] == 450.0


def test_driver_failure_is_a_finding_not_a_crash(scenario_sweep: dict[str, HostReport]) -> None:
    host = scenario_sweep["driver_error"]
    assert host.status.answered
    assert host.readings is not None and host.readings.smi_status is SmiStatus.DRIVER_ERROR
    assert "DRIVER_ERROR" in [c for c, _ in codes(host)]
    assert host.readings.smi_exit_code == 9


def test_no_devices(scenario_sweep: dict[str, HostReport]) -> None:
    host = scenario_sweep["no_devices"]
    assert host.readings is not None and host.readings.smi_status is SmiStatus.NO_DEVICES
    assert [c for c, _ in codes(host)] == ["NO_GPUS"]


def test_one_lost_gpu_among_eight(scenario_sweep: dict[str, HostReport]) -> None:
    host = scenario_sweep["one_lost"]
    assert host.status is HostStatus.PARTIAL
    assert [g.index for g in host.gpus] == list(range(8))
    assert [g.index for g in host.gpus if g.lost] == [3]
    assert codes(host) == [("GPU_LOST", 3)]
    assert all(g.power_w is not None for g in host.gpus if not g.lost)


def test_node_without_nvidia_smi(scenario_sweep: dict[str, HostReport]) -> None:
    host = scenario_sweep["no_nvidia_smi"]
    assert host.status is HostStatus.OK
    assert [(f.code, f.severity) for f in host.findings] == [("NVIDIA_SMI_MISSING", Severity.UNKNOWN)]


def test_node_without_python_uses_the_shell_collector(scenario_sweep: dict[str, HostReport]) -> None:
    host = scenario_sweep["no_python"]
    assert host.readings is not None and host.readings.source == "nvidia-smi (sh collector)"
    assert host.status is HostStatus.OK and host.findings == ()
    assert len(host.gpus) == 8 and host.gpus[0].enforced_power_limit_w == 700.0 and len(host.gpus[0].samples) == 3
    assert host.readings.cuda_version == "13.0"


def test_old_driver_without_compute_cap(scenario_sweep: dict[str, HostReport]) -> None:
    host = scenario_sweep["old_driver"]
    assert host.status is HostStatus.OK
    assert all(g.compute_capability is None and g.utilization_pct is not None for g in host.gpus)
    assert host.readings is not None and host.readings.driver_version == "470.256.02"
    # The simulated node has no libcuda (unless this test machine does): the 470 branch's CUDA 11.4, which
    # the node's nvidia-smi header also shows, without calling it.
    assert host.readings.cuda_version == "11.4"
    assert host.readings.cuda_version_from == ("libcuda" if libcuda_loads() else "driver branch")


def test_hardware_scenarios(scenario_sweep: dict[str, HostReport]) -> None:
    assert [c for c, _ in codes(scenario_sweep["mixed"])] == ["MIXED_ARCHITECTURES"]
    assert codes(scenario_sweep["pcie_degraded"]) == [("PCIE_LINK_DEGRADED", 2)]
    thermal = scenario_sweep["thermal"].findings
    assert [(f.code, f.gpu, f.severity) for f in thermal] == [("THERMAL_SLOWDOWN", 5, Severity.CRITICAL)]
    assert codes(scenario_sweep["ecc"]) == [("ECC_UNCORRECTED", 1)]


def test_a_hung_nvidia_smi_is_a_finding_of_a_host_that_answered(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    """The host answered over SSH; its nvidia-smi hung. The call is killed at its own bound (half of what the
    deadline leaves beside the sampling window: 4.3 s here), and the host is ok with a critical finding."""
    (hang,) = sshd_cluster.hosts("hang")
    pid_file = sshd_cluster.hang_pid_file()
    pid_file.unlink(missing_ok=True)
    report = run_sweep([hang], dataclasses.replace(FAST, deadline_s=9.0))
    host = only(report)
    assert pid_file.exists(), "the fake nvidia-smi never hung, so this test proved nothing"
    assert (host.status, host.error) == (HostStatus.OK, None)
    assert host.readings is not None and host.readings.smi_status is SmiStatus.HUNG
    ((call, after_s),) = [(c.call, c.after_s) for c in host.readings.hung_calls]
    assert call == "nvidia-smi --query-gpu" and call_bound_s(9.0, FAST.samples, FAST.interval_s) <= after_s < 9.0
    (finding,) = host.findings
    assert (finding.code, finding.severity, finding.evidence["call"]) == (
        "NVIDIA_SMI_HUNG", Severity.CRITICAL, "nvidia-smi --query-gpu")
    assert finding.summary.startswith(f"nvidia-smi --query-gpu did not answer in {after_s:g} s and was killed (no "
                                      "GPU could be read): the driver is wedged")
    assert sshd_cluster.hung_stub_ended(wait_s=10.0)  # killed with the call, not left behind


def test_the_whole_collector_deadline_is_still_the_last_resort(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    """With a deadline as short as the smallest call bound (1 s), `timeout` ends the collector first: status
    timeout, as before per-call bounds, and the hung stub is ended with the remote process group.

    On a busy machine (load 20 on 2 cores) the collector may not even reach nvidia-smi within its 1 s: the
    outcome is the same, but the hang this test is about never happened. So the sweep is run again until one
    run reached the stub (each run's outcome asserted), rather than failing on the machine's load."""
    (hang,) = sshd_cluster.hosts("hang")
    pid_file = sshd_cluster.hang_pid_file()
    for _ in range(5):
        pid_file.unlink(missing_ok=True)
        host = only(run_sweep([hang], dataclasses.replace(FAST, deadline_s=1.0)))
        assert host.status is HostStatus.TIMEOUT
        assert host.error == ("the collector did not finish within 1 s (nvidia-smi may be hung); "
                              "the remote process was ended")
        assert [f.code for f in host.findings] == ["HOST_UNREACHABLE"]
        if pid_file.exists():
            break
    assert pid_file.exists(), "the fake nvidia-smi never hung in 5 runs, so this test proved nothing"
    assert sshd_cluster.hung_stub_ended(wait_s=10.0)


def test_nothing_listening_is_unreachable(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    host = dataclasses.replace(sshd_cluster.host("127.0.0.2", "dead"), address="127.0.0.250")
    result = only(run_sweep([host]))
    assert result.status is HostStatus.UNREACHABLE
    assert result.error == f"connection refused by 127.0.0.250:{sshd_cluster.port} (host up, nothing listening)"
    assert [(f.code, f.severity) for f in result.findings] == [("HOST_UNREACHABLE", Severity.CRITICAL)]



def test_silent_host_costs_the_connect_timeout_not_the_sweep(sshd_cluster, silent_listener: int) -> None:  # type: ignore[no-untyped-def]
    silent = Host(name="silent", address="127.0.0.1", port=silent_listener, user=sshd_cluster.user,
                  identity_file=str(sshd_cluster.client_key), known_hosts=str(sshd_cluster.known_hosts))
    report = run_sweep([silent, *sshd_cluster.hosts("healthy")], connect_timeout_s=1.0)
    dead, healthy = report.hosts
    assert dead.status is HostStatus.UNREACHABLE
    assert dead.error == (f"no SSH login to 127.0.0.1:{silent_listener} within 1 s (--connect-timeout: TCP connect, "
                          "SSH banner, key exchange, authentication)")
    assert healthy.status is HostStatus.OK


def test_wrong_host_key_is_rejected(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    (host,) = sshd_cluster.hosts("healthy")
    host = dataclasses.replace(host, known_hosts=str(sshd_cluster.wrong_key_known_hosts))
    result = only(run_sweep([host]))
    assert result.status is HostStatus.HOST_KEY_REJECTED
    assert result.error is not None and result.error.startswith("host key of 127.0.0.2 does not match")
    assert "--accept-new-host-keys" not in result.error  # a changed key is never for accept-new
    assert result.readings is None


def test_unknown_host_key_is_rejected_unless_accept_new_then_recorded(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (host,) = sshd_cluster.hosts("healthy")
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    own = tmp_path / "gpudiag_known_hosts"
    host = dataclasses.replace(host, known_hosts=None)
    rejected = only(run_sweep([host], known_hosts=(str(empty),), gpudiag_known_hosts=str(own)))
    assert rejected.status is HostStatus.HOST_KEY_REJECTED and not own.exists()

    accepted = only(run_sweep([host], known_hosts=(str(empty), str(own)), gpudiag_known_hosts=str(own),
                              accept_new_host_keys=True))
    assert accepted.status is HostStatus.OK
    recorded = own.read_text().split()
    server_key = sshd_cluster.known_hosts.read_text().splitlines()[0].split()[1:]
    assert recorded == [f"[127.0.0.2]:{sshd_cluster.port}", *server_key]

    again = only(run_sweep([host], known_hosts=(str(empty), str(own)), gpudiag_known_hosts=str(own)))
    assert again.status is HostStatus.OK  # recorded, so trusted without the flag


def test_accept_new_never_accepts_a_changed_key(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (host,) = sshd_cluster.hosts("healthy")
    own = tmp_path / "gpudiag_known_hosts"
    host = dataclasses.replace(host, known_hosts=None)
    result = only(run_sweep([host], known_hosts=(str(sshd_cluster.wrong_key_known_hosts), str(own)),
                            gpudiag_known_hosts=str(own), accept_new_host_keys=True))
    assert result.status is HostStatus.HOST_KEY_REJECTED
    assert result.error is not None and "CHANGED" in result.error
    assert not own.exists()


def test_failed_login(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    stranger = tmp_path / "stranger_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    (host,) = sshd_cluster.hosts("healthy")
    result = only(run_sweep([dataclasses.replace(host, identity_file=str(stranger))]))
    assert result.status is HostStatus.AUTH_FAILED
    assert result.error is not None and result.error.startswith(f"login refused for user {sshd_cluster.user}")


@pytest.mark.xdist_group("bursts")  # many handshakes at once: see test_signals_handshake.py
def test_fifty_hosts_in_one_sweep(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    hosts = sshd_cluster.extra_hosts(50)
    # Fifty handshakes at once on two shared cores: the connect and login bounds are not this test's point (5 s read
    # as "unreachable" under a parallel run or another developer's suite); every host must still answer.
    report = run_sweep(hosts, dataclasses.replace(FAST, samples=1, interval_s=0.0, concurrency=64),
                       connect_timeout_s=30.0, login_timeout_s=30.0)
    assert [h.host for h in report.hosts] == [h.name for h in hosts]
    assert {h.status for h in report.hosts} == {HostStatus.OK}
    assert sum(len(h.gpus) for h in report.hosts) == 400


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env={**os.environ, **(env or {})})  # in this process: the process is not the point


def test_cli_json_from_an_inventory(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(sshd_cluster.inventory_defaults() + """hosts:
  sick: {address: 127.0.0.3}
  fine: {address: 127.0.0.2}
""")
    done = _cli("sweep", "-i", str(inventory), "--format", "json", "--samples", "2", "--interval", "0.1")
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert doc["schema"] == "gpudiag.sweep/4"
    assert [h["host"] for h in doc["hosts"]] == ["sick", "fine"]
    assert doc["summary"]["findings_by_code"] == {"BUSY_LOW_POWER": 8}
    assert doc["summary"]["exit_code"] == 1
    gpu = doc["hosts"][0]["gpus"][0]
    assert (gpu["compute_capability"], gpu["sm"], gpu["enforced_power_limit_w"]) == ("12.0", "SM120", 600.0)
    assert "samples" not in gpu and doc["hosts"][0]["node"]["sample_count"] == 2  # raw samples: on request
    detailed = json.loads(_cli("sweep", "-i", str(inventory), "--limit", "sick", "--format", "json",
                               "--samples", "2", "--interval", "0.1", "--samples-detail").stdout)
    assert [len(g["samples"]) for g in detailed["hosts"][0]["gpus"]] == [2] * 8

    quiet = _cli("sweep", "-i", str(inventory), "--limit", "fine", "--quiet", "--samples", "1")
    assert (quiet.returncode, quiet.stdout) == (0, "")


def test_cli_broken_inventory_is_one_line_and_exit_3(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("defaults:\n  user: ubuntu\n  usr: typo\n")
    done = _cli("sweep", "-i", str(inventory))
    assert done.returncode == 3 and done.stdout == ""
    assert done.stderr.strip().count("\n") == 0
    assert done.stderr.startswith(f"gpudiag: {inventory}:3:")


def test_cli_demo(sshd_cluster) -> None:  # type: ignore[no-untyped-def]
    done = _cli("sweep", "--demo", "--format", "json", "--samples", "2", "--interval", "0.1")
    assert done.returncode == 2, done.stderr
    doc = json.loads(done.stdout)
    status = {h["host"]: h["status"] for h in doc["hosts"]}
    assert status == {"sglang-glm5": "ok", "train-h200-01": "ok", "infer-h200-02": "ok", "spare-h200-03": "ok",
                      "train-h200-04": "ok", "train-h200-05": "unreachable"}
    found = {h["host"]: sorted({f["code"] for f in h["findings"]}) for h in doc["hosts"]}
    assert found == {"sglang-glm5": ["BUSY_LOW_POWER", "LOG_EXPECTED_ABSENT", "LOG_SIGNATURE"],
                     "train-h200-01": [], "infer-h200-02": [],
                     "spare-h200-03": ["ECC_UNCORRECTED", "ROW_REMAP_PENDING", "XID"],
                     "train-h200-04": ["DRIVER_DRIFT", "POWER_LIMIT_REDUCED"],  # an older driver than its group's
                     "train-h200-05": ["HOST_UNREACHABLE"]}
    actions = {h["host"]: h["action"] for h in doc["hosts"]}
    assert actions["train-h200-04"] == "watch" and actions["train-h200-01"] == "none"  # a drift: maintenance
    assert actions["spare-h200-03"] == "reset_gpu"
    # The case study, as the demo tells it: busy at low power over PCIe in a VM, the autotuner that never
    # ran, the server's configuration as facts, and no match counted on its server_args line.
    glm5 = next(h for h in doc["hosts"] if h["host"] == "sglang-glm5")
    by_code = {f["code"]: f for f in glm5["findings"]}
    busy = by_code["BUSY_LOW_POWER"]["summary"]
    assert "over PCIe only (PIX/NODE/SYS, no NVLink) inside a KVM virtual machine" in busy
    assert "the autotuner never ran" in by_code["LOG_EXPECTED_ABSENT"]["summary"]
    assert by_code["LOG_EXPECTED_ABSENT"]["evidence"]["moe_runner_backend"] == "flashinfer_cutlass"
    assert [f["evidence"]["signature"] for f in glm5["findings"] if f["code"] == "LOG_SIGNATURE"] == [
        "custom_allreduce_disabled"]
    (log,) = glm5["node"]["logs"]
    facts = log["facts"][0]["values"]
    assert (facts["tp_size"], facts["ep_size"], facts["disable_flashinfer_autotune"]) == (8, 8, False)
    assert glm5["node"]["context"]["interconnect"] == "pcie" and glm5["node"]["context"]["is_vm"] is True
    spare = next(h for h in doc["hosts"] if h["host"] == "spare-h200-03")
    # the 4-day-old Xid 79 is out; the Xid 63's row remap is pending on the same GPU (issue 20)
    assert [(f["gpu"], f["evidence"]["xid"]) for f in spare["findings"] if f["code"] == "XID"] == [(4, 63)]
    assert [f["gpu"] for f in spare["findings"] if f["code"] == "ROW_REMAP_PENDING"] == [4]
