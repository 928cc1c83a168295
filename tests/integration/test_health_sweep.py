"""Issue 20's findings over a real OpenSSH sshd on loopback: each fault scenario of the stub nvidia-smi (values
built from NVIDIA's documentation: remapped_rows.pending "Yes", gpu_recovery_action "GPU Reset", a link
"<inactive>", CRC errors rising between the two ``nvidia-smi nvlink -e`` reads, fabric.state "In Progress")
runs through the real collector, parser and checks, and its finding fires on its GPU; the healthy node and
the "not supported" fabric stay quiet."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from gpudiag.checks import CheckSettings
from gpudiag.model import HostReport, Severity
from gpudiag.sweep.runner import SweepOptions, sweep
from gpudiag.transport.ssh import SshOptions, SshTransport
from loopback import SshdUnavailable, running_cluster

# Its tests share a module-scoped fixture: one worker runs them all, else each worker builds it again
# (with --dist loadgroup; the default, --dist loadfile, keeps a file on one worker).
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("test_health_sweep")]

SCENARIOS = {"127.0.0.2": "healthy", "127.0.0.3": "row_remap_pending", "127.0.0.4": "row_remap_failed",
             "127.0.0.5": "recovery_action", "127.0.0.6": "ecc_off", "127.0.0.7": "nvlink_down",
             "127.0.0.8": "nvlink_errors", "127.0.0.9": "fabric_in_progress", "127.0.0.10": "fabric_not_supported"}
NEW_CODES = {"ROW_REMAP_PENDING", "ROW_REMAP_FAILED", "RETIRED_PAGES_PENDING", "ECC_DISABLED", "ECC_MODE_PENDING",
             "RECOVERY_ACTION", "NVLINK_DOWN", "NVLINK_ERRORS", "FABRIC_NOT_READY", "PERSISTENCE_OFF"}


@pytest.fixture(scope="module")
def health_sweep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, HostReport]]:
    """One sweep (nvidia-smi path: this machine has no NVML) of a loopback cluster playing the scenarios."""
    try:
        with running_cluster(tmp_path_factory.mktemp("health"), extra_healthy=0, scenarios=SCENARIOS) as cluster:
            hosts = [cluster.host(address, name) for address, name in SCENARIOS.items()]
            options = SweepOptions(samples=3, interval_s=0.1, deadline_s=20.0, settings=CheckSettings())
            transport = SshTransport(SshOptions(connect_timeout_s=5.0, ssh_config=[]))
            report = asyncio.run(sweep(hosts, transport, options))
            calls = {path.name: int(path.read_text() or 0) for path in cluster.state_dir.glob("nvlink-*")}
            yield {**{h.host: h for h in report.hosts}, "nvlink calls": calls}  # type: ignore[dict-item]
    except SshdUnavailable as exc:
        pytest.skip(str(exc))


def new(host: HostReport) -> list[tuple[str, int | None, Severity]]:
    return [(f.code, f.gpu, f.severity) for f in host.findings if f.code in NEW_CODES]


@pytest.mark.parametrize(("scenario", "expected"), [
    ("healthy", []),
    ("fabric_not_supported", []),
    ("row_remap_pending", [("ROW_REMAP_PENDING", 2, Severity.WARNING)]),
    ("row_remap_failed", [("ROW_REMAP_FAILED", 5, Severity.CRITICAL)]),
    ("recovery_action", [("RECOVERY_ACTION", 3, Severity.CRITICAL)]),
    ("ecc_off", [("ECC_DISABLED", 1, Severity.WARNING), ("ECC_MODE_PENDING", 4, Severity.WARNING),
                 ("PERSISTENCE_OFF", 7, Severity.OK)]),
    ("nvlink_down", [("NVLINK_DOWN", 4, Severity.CRITICAL)]),
    ("nvlink_errors", [("NVLINK_ERRORS", 6, Severity.WARNING)]),
    ("fabric_in_progress", [("FABRIC_NOT_READY", 0, Severity.CRITICAL)]),
])
def test_each_finding_fires_on_its_scenario(health_sweep: dict[str, HostReport], scenario: str,
                                            expected: list[tuple[str, int | None, Severity]]) -> None:
    host = health_sweep[scenario]
    assert host.readings is not None and len(host.gpus) == 8, host.error
    assert new(host) == expected


def test_nvidia_smi_reads_nvlink_only_on_the_fabric_nodes(health_sweep: dict[str, HostReport]) -> None:
    """Each call costs the node ~25 ms of CPU: the NVLink-fabric nodes (fabric.state reported) make one
    nvlink -e at each end of the window and one nvlink -s; the 8-GPU nodes without a fabric make none."""
    calls: dict[str, int] = health_sweep["nvlink calls"]  # type: ignore[assignment]
    assert calls == {"nvlink-e-127.0.0.7-nvlink_down": 2, "nvlink-s-127.0.0.7-nvlink_down": 1,
                     "nvlink-e-127.0.0.8-nvlink_errors": 2, "nvlink-s-127.0.0.8-nvlink_errors": 1,
                     "nvlink-e-127.0.0.9-fabric_in_progress": 1}


def test_the_findings_carry_the_documented_values(health_sweep: dict[str, HostReport]) -> None:
    (remap,) = [f for f in health_sweep["row_remap_pending"].findings if f.code == "ROW_REMAP_PENDING"]
    assert remap.evidence["remapped_rows_uncorrectable"] == 1 and remap.evidence["remapped_rows_pending"] is True
    (action,) = [f for f in health_sweep["recovery_action"].findings if f.code == "RECOVERY_ACTION"]
    assert action.evidence["gpu_recovery_action"] == "gpu_reset" and "a GPU reset" in action.summary
    (down,) = [f for f in health_sweep["nvlink_down"].findings if f.code == "NVLINK_DOWN"]
    assert down.evidence == {"links_down": "7", "links_active": 17, "links": 18,
                             "peers_with_link_active": "0,1,2,3,5,6,7"}
    (rising,) = [f for f in health_sweep["nvlink_errors"].findings if f.code == "NVLINK_ERRORS"]
    # One -e read at each end of the window: +40 CRC and +3 replay per read (the scenario's rates); link 0 of
    # GPU 1 carries 17 old CRC errors that do not move, and raises nothing.
    assert (rising.evidence["links"], rising.evidence["crc_errors_rise"], rising.evidence["replay_errors_rise"]) == (
        "2", 40, 3)
    assert rising.evidence["crc_errors_per_s"] is not None and rising.evidence["crc_errors_per_s"] > 0
    nvlink_gpu = health_sweep["nvlink_errors"].gpus[6]
    assert len(nvlink_gpu.nvlinks) == 18 and all(link.active for link in nvlink_gpu.nvlinks)
    assert health_sweep["healthy"].gpus[0].nvlinks == ()
