"""The simulated cluster itself, through the plain OpenSSH client: the harness the other integration tests trust."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # the fixture's type; tests get the object from the fixture, not by importing conftest
    from conftest import SshdCluster

pytestmark = pytest.mark.integration

QUERY = "nvidia-smi --query-gpu=index,name,compute_cap,power.default_limit --format=csv,noheader,nounits"


def ssh(cluster: SshdCluster, address: str, command: str, *, known_hosts: Path | None = None,
        timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cluster.ssh_argv(address, command, known_hosts=known_hosts),
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(
    ("scenario", "rows"),
    [
        ("healthy", [f"{i}, NVIDIA H200, 9.0, 700.00" for i in range(8)]),
        ("case_study", [f"{i}, NVIDIA RTX PRO 6000 Blackwell Server Edition, 12.0, 600.00" for i in range(8)]),
        ("mixed", ["0, NVIDIA B200, 10.0, 1000.00", "1, NVIDIA RTX PRO 6000 Blackwell Server Edition, 12.0, 600.00"]),
    ],
)
def test_each_address_answers_as_its_scenario(sshd_cluster: SshdCluster, scenario: str, rows: list[str]) -> None:
    result = ssh(sshd_cluster, sshd_cluster.address_of(scenario), QUERY)
    assert (result.returncode, result.stdout.splitlines(), result.stderr) == (0, rows, "")


def test_the_node_sees_its_own_address(sshd_cluster: SshdCluster) -> None:
    address = sshd_cluster.address_of("idle")
    result = ssh(sshd_cluster, address, 'echo "$SSH_CONNECTION"; nvidia-smi --query-gpu=clocks_event_reasons.active '
                 "--format=csv,noheader -i 0")
    connection, reason = result.stdout.splitlines()
    assert connection.split()[2:] == [address, str(sshd_cluster.port)]
    assert reason == "0x0000000000000001"


def test_plain_nvidia_smi_prints_the_driver_header(sshd_cluster: SshdCluster) -> None:
    result = ssh(sshd_cluster, sshd_cluster.address_of("old_driver"), "nvidia-smi")
    assert result.returncode == 0
    assert "Driver Version: 470.256.02     CUDA Version: 11.4" in result.stdout


def test_missing_nvidia_smi_host_has_none(sshd_cluster: SshdCluster) -> None:
    address = sshd_cluster.address_of("no_nvidia_smi")
    result = ssh(sshd_cluster, address, "command -v nvidia-smi; echo rc=$?; command -v python3 >/dev/null && echo py")
    assert result.stdout.splitlines() == ["rc=1", "py"]
    result = ssh(sshd_cluster, address, "nvidia-smi")
    assert result.returncode == 127


def test_no_python_host_has_no_python_but_a_working_stub(sshd_cluster: SshdCluster) -> None:
    address = sshd_cluster.address_of("no_python")
    probe = ssh(sshd_cluster, address, "for c in python3 python sh timeout cat awk; do command -v $c >/dev/null "
                "&& echo has $c || echo lacks $c; done")
    assert probe.stdout.splitlines() == ["lacks python3", "lacks python", "has sh", "has timeout", "has cat",
                                         "has awk"]
    result = ssh(sshd_cluster, address, QUERY)
    assert (result.returncode, len(result.stdout.splitlines())) == (0, 8)


def test_driver_error_exits_9_with_the_real_message(sshd_cluster: SshdCluster) -> None:
    result = ssh(sshd_cluster, sshd_cluster.address_of("driver_error"), QUERY)
    assert result.returncode == 9
    assert result.stdout == (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n\n"
    )


def test_no_devices_and_lost_gpu_exit_codes(sshd_cluster: SshdCluster) -> None:
    none = ssh(sshd_cluster, sshd_cluster.address_of("no_devices"), QUERY)
    lost = ssh(sshd_cluster, sshd_cluster.address_of("one_lost"), QUERY)
    assert (none.returncode, none.stdout) == (6, "No devices were found\n")
    assert lost.returncode == 15
    assert lost.stdout.splitlines()[3] == "Unable to determine the device handle for GPU0000:61:00.0: Unknown Error"


def test_hang_writes_its_pid_and_can_be_ended(sshd_cluster: SshdCluster) -> None:
    pid_file = sshd_cluster.hang_pid_file("hang")
    pid_file.unlink(missing_ok=True)
    started = time.monotonic()
    result = ssh(sshd_cluster, sshd_cluster.address_of("hang"), f"timeout 1 {QUERY}")
    assert result.returncode == 124  # timeout(1) had to end it
    assert 1 <= time.monotonic() - started < 20
    assert pid_file.exists() and sshd_cluster.hung_stub_ended("hang")


def test_a_dropped_connection_leaves_the_hung_stub_running(sshd_cluster: SshdCluster) -> None:
    """Why the collector needs ``timeout`` on the node: closing the SSH channel does not end nvidia-smi."""
    pid_file = sshd_cluster.hang_pid_file("hang")
    pid_file.unlink(missing_ok=True)
    client = subprocess.Popen(sshd_cluster.ssh_argv(sshd_cluster.address_of("hang"), QUERY),
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        client.kill()
        client.wait()
    assert not sshd_cluster.hung_stub_ended("hang", wait_s=1.0)
    os.kill(int(pid_file.read_text()), signal.SIGTERM)  # our own stub, started by our sshd
    assert sshd_cluster.hung_stub_ended("hang")


def test_wrong_host_key_is_rejected(sshd_cluster: SshdCluster) -> None:
    result = ssh(sshd_cluster, sshd_cluster.address_of("healthy"), "true",
                 known_hosts=sshd_cluster.wrong_key_known_hosts)
    assert result.returncode == 255
    assert "Host key verification failed" in result.stderr


@pytest.mark.xdist_group("bursts")  # many handshakes at once: see test_signals_handshake.py
def test_every_extra_host_answers_at_once(sshd_cluster: SshdCluster) -> None:
    hosts = sshd_cluster.extra_hosts()
    with ThreadPoolExecutor(max_workers=max(1, len(hosts))) as pool:
        results = list(pool.map(lambda h: ssh(sshd_cluster, h.target, QUERY + " -i 0"), hosts))
    assert [r.stdout for r in results] == ["0, NVIDIA H200, 9.0, 700.00\n"] * len(hosts)


def test_hosts_helper_builds_gpudiag_hosts(sshd_cluster: SshdCluster) -> None:
    healthy, lost = sshd_cluster.hosts("healthy", "one_lost")
    assert (healthy.name, healthy.address, healthy.port) == ("healthy", "127.0.0.2", sshd_cluster.port)
    assert (lost.identity_file, lost.known_hosts) == (str(sshd_cluster.client_key), str(sshd_cluster.known_hosts))
