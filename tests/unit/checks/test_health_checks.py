"""Issue 20's findings on hand-built readings, compared whole: memory health, the driver's recovery action,
ECC mode, NVLink counters and states, the fabric, persistence mode. The values of the faults are the ones
NVIDIA documents (nvidia-smi's remapped_rows.pending "Yes", gpu_recovery_action "GPU Reset", a link
"<inactive>", fabric state "in progress")."""

from __future__ import annotations

import dataclasses

import pytest
from builders import gpu

from gpudiag.checks import CheckSettings, evaluate
from gpudiag.checks.fabric import fabric_manager_down, nvlink_down
from gpudiag.checks.health import (
    ecc_mode,
    fabric_not_ready,
    nvlink_errors,
    persistence_off,
    recovery_action,
    retired_pages_pending,
    row_remap_failed,
    row_remap_pending,
)
from gpudiag.model import Finding, HostStatus, NodeReadings, NvLink, Severity

S = CheckSettings()
# The healthy H200 of tests/data/h200_580.159_fields (fields.tsv): what a GPU with none of the faults reads.
HEALTHY: dict[str, object] = {
    "remapped_rows_correctable": 0, "remapped_rows_uncorrectable": 0, "remapped_rows_pending": False,
    "remapped_rows_failure": False, "ecc_mode_enabled": True, "ecc_mode_pending_enabled": True, "ecc_corrected": 0,
    "ecc_uncorrected_aggregate": 0, "ecc_corrected_aggregate": 0, "gpu_recovery_action": "none",
    "persistence_mode_enabled": True, "compute_mode": "default", "mig_mode_enabled": False,
    "mig_mode_pending_enabled": False, "fabric_state": "not_supported"}
MEMORY = {"remapped_rows_correctable": 0, "remapped_rows_uncorrectable": 1, "remapped_rows_pending": True,
          "remapped_rows_failure": False, "ecc_uncorrected": 1, "ecc_uncorrected_aggregate": 1}


def healthy(**over: object):  # type: ignore[no-untyped-def]
    return gpu(**{**HEALTHY, **over})


def test_a_pending_row_remap_says_a_reset_applies_it() -> None:
    g = healthy(remapped_rows_pending=True, remapped_rows_uncorrectable=1, ecc_uncorrected=1,
                ecc_uncorrected_aggregate=1)
    assert row_remap_pending("n1", g, S) == (Finding(
        code="ROW_REMAP_PENDING", severity=Severity.WARNING, host="n1", gpu=0,
        summary="a memory row remap is pending (rows remapped so far: 1 for uncorrectable errors, 0 for correctable "
                "errors): it takes effect at the next GPU reset - drain the GPU's work and reset it (nvidia-smi -r) "
                "or reboot", evidence=MEMORY),)


def test_a_failed_row_remap_says_replace() -> None:
    g = healthy(remapped_rows_failure=True, remapped_rows_uncorrectable=512, remapped_rows_correctable=3)
    (f,) = row_remap_failed("n1", g, S)
    assert (f.code, f.severity) == ("ROW_REMAP_FAILED", Severity.CRITICAL)
    assert f.summary.startswith("a memory row remap failed (rows remapped so far: 512 for uncorrectable errors, "
                                "3 for correctable errors)") and "replace the GPU" in f.summary
    assert f.evidence["remapped_rows_failure"] is True and f.evidence["remapped_rows_uncorrectable"] == 512


def test_a_pending_page_retirement_before_ampere() -> None:
    g = healthy(retired_pages_pending=True, retired_pages_dbe=2, retired_pages_sbe=5)
    assert retired_pages_pending("n1", g, S) == (Finding(
        code="RETIRED_PAGES_PENDING", severity=Severity.WARNING, host="n1", gpu=0,
        summary="a memory page retirement is pending (retired so far: 2 for double-bit errors, 5 for single-bit "
                "errors): it takes effect at the next GPU reset or driver reload - drain the GPU and reset it",
        evidence={"retired_pages_sbe": 5, "retired_pages_dbe": 2, "retired_pages_pending": True,
                  "ecc_uncorrected_aggregate": 0}),)


@pytest.mark.parametrize(("current", "pending", "codes"), [
    (True, True, []), (None, None, []), (False, False, ["ECC_DISABLED"]), (True, False, ["ECC_MODE_PENDING"]),
    (False, True, ["ECC_DISABLED", "ECC_MODE_PENDING"]),
])
def test_ecc_mode_only_on_a_gpu_that_has_ecc(current: bool | None, pending: bool | None, codes: list[str]) -> None:
    found = ecc_mode("n1", healthy(ecc_mode_enabled=current, ecc_mode_pending_enabled=pending), S)
    assert [f.code for f in found] == codes
    assert all(f.evidence == {"ecc_mode_enabled": current, "ecc_mode_pending_enabled": pending} for f in found)


def test_ecc_mode_pending_names_both_modes() -> None:
    (f,) = ecc_mode("n1", healthy(ecc_mode_enabled=True, ecc_mode_pending_enabled=False), S)
    assert f.summary.startswith("ECC is enabled now and becomes disabled at the next GPU reset")


@pytest.mark.parametrize(("action", "words", "severity"), [
    ("gpu_reset", "a GPU reset: stop its processes and reset it (nvidia-smi -r)", Severity.CRITICAL),
    ("node_reboot", "a node reboot: the fault may have left the OS inconsistent", Severity.CRITICAL),
    ("drain_p2p", "draining peer-to-peer traffic: stop the processes that use P2P, then read the action again",
     Severity.CRITICAL),
    ("drain_and_reset", "draining peer-to-peer traffic, then a GPU reset", Severity.CRITICAL),
    ("unknown_9", "a recovery this tool does not know (unknown_9)", Severity.WARNING),
])
def test_the_recovery_action_says_which(action: str, words: str, severity: Severity) -> None:
    (f,) = recovery_action("n1", healthy(gpu_recovery_action=action), S)
    assert (f.code, f.severity) == ("RECOVERY_ACTION", severity)
    assert f.summary == f"the driver asks for {words} (gpu_recovery_action {action}); drain the GPU's work first"
    assert f.evidence["gpu_recovery_action"] == action


def test_nvlink_errors_rising_give_the_rise_and_the_rate() -> None:
    links = (NvLink(link=0, active=True, crc_errors=5, crc_errors_rise=0, replay_errors=0, replay_errors_rise=0),
             NvLink(link=3, active=True, crc_errors=140, crc_errors_rise=40, replay_errors=9, replay_errors_rise=4,
                    recovery_errors=1, recovery_errors_rise=0))
    g = healthy(nvlinks=links, nvlink_window_s=2.0)
    assert nvlink_errors("n1", g, S) == (Finding(
        code="NVLINK_ERRORS", severity=Severity.WARNING, host="n1", gpu=0,
        summary="NVLink errors rose within the window on link 3: 40 crc (20/s), 4 replay (2/s) over 2.0 s - the "
                "link is degrading now; check the Xid 74 lines in the kernel log, reseat or replace the "
                "NVLink/NVSwitch path",
        evidence={"links": "3", "window_s": 2.0, "crc_errors_rise": 40, "replay_errors_rise": 4,
                  "recovery_errors_rise": 0, "crc_errors_per_s": 20.0, "replay_errors_per_s": 2.0,
                  "recovery_errors_per_s": 0.0}),)


def test_errors_from_before_the_window_are_quiet() -> None:
    """Counters since boot that did not move: history, not a link degrading now."""
    g = healthy(nvlinks=(NvLink(link=0, active=True, crc_errors=900, crc_errors_rise=0),), nvlink_window_s=2.0)
    assert nvlink_errors("n1", g, S) == ()


def _node(*gpus, **over):  # type: ignore[no-untyped-def]
    return NodeReadings(gpus=tuple(gpus), driver_version="580.159.04", **over)


def _links(*active: bool) -> tuple[NvLink, ...]:
    return tuple(NvLink(link=i, active=a, crc_errors=0, crc_errors_rise=0) for i, a in enumerate(active))


def test_a_link_down_that_its_peers_have_up() -> None:
    node = _node(healthy(index=0, nvlinks=_links(True, True, True)),
                 healthy(index=1, nvlinks=_links(True, False, True)),
                 healthy(index=2, nvlinks=_links(True, True, True)))
    assert nvlink_down("n1", node, S) == (Finding(
        code="NVLINK_DOWN", severity=Severity.CRITICAL, host="n1", gpu=1,
        summary="NVLink link 1 is inactive while GPUs 0,2 have it active (2 of 3 links up): GPU-to-GPU traffic "
                "loses bandwidth or falls back to PCIe - look for Xid 74 in the kernel log; reset the GPU, else "
                "inspect the board",
        evidence={"links_down": "1", "links_active": 2, "links": 3, "peers_with_link_active": "0,2"}),)


def test_links_down_on_every_gpu_are_how_the_board_is_built() -> None:
    node = _node(healthy(index=0, nvlinks=_links(True, False)), healthy(index=1, nvlinks=_links(True, False)))
    assert nvlink_down("n1", node, S) == ()


@pytest.mark.parametrize(("state", "status", "health", "severity", "why"), [
    ("in_progress", None, None, Severity.CRITICAL, "its fabric registration is in progress"),
    ("not_started", None, None, Severity.CRITICAL, "its fabric registration is not started"),
    ("completed", "NVML error 999", "healthy", Severity.CRITICAL,
     "its fabric registration completed with an error (NVML error 999)"),
    ("completed", "Success", "unhealthy", Severity.CRITICAL, "the fabric reports it unhealthy"),
    ("completed", "Success", "limited_capacity", Severity.WARNING, "the fabric reports it at limited capacity"),
])
def test_fabric_not_ready(state: str, status: str | None, health: str | None, severity: Severity, why: str) -> None:
    (f,) = fabric_not_ready("n1", healthy(fabric_state=state, fabric_status=status, fabric_health=health), S)
    assert (f.code, f.severity, f.gpu) == ("FABRIC_NOT_READY", severity, 0)
    assert f.summary.startswith(f"the GPU is not ready on the NVLink fabric: {why} - ")
    assert f.evidence == {"fabric_state": state, "fabric_status": status, "fabric_health": health}


@pytest.mark.parametrize("state", ["not_supported", None])
def test_a_gpu_without_fabric_is_quiet(state: str | None) -> None:
    assert fabric_not_ready("n1", healthy(fabric_state=state), S) == ()
    assert fabric_not_ready("n1", healthy(fabric_state="completed", fabric_status="Success",
                                          fabric_health="healthy"), S) == ()


def test_nvswitches_without_a_fabric_manager() -> None:
    node = _node(healthy(), nvswitch_count=4, fabric_manager_running=False)
    assert fabric_manager_down("n1", node, S) == (Finding(
        code="FABRIC_NOT_READY", severity=Severity.CRITICAL, host="n1", gpu=None,
        summary="4 NVSwitches present but nv-fabricmanager is not running: the GPUs cannot join the NVLink fabric - "
                "start nvidia-fabricmanager (its version must match the driver's)",
        evidence={"nvswitch_count": 4, "fabric_manager_running": False, "driver_version": "580.159.04"}),)
    assert fabric_manager_down("n1", dataclasses.replace(node, fabric_manager_running=True), S) == ()
    assert fabric_manager_down("n1", _node(healthy()), S) == ()


def test_persistence_off_is_information() -> None:
    assert persistence_off("n1", healthy(persistence_mode_enabled=False), S) == (Finding(
        code="PERSISTENCE_OFF", severity=Severity.OK, host="n1", gpu=0,
        summary="persistence mode is off: each new CUDA client pays the GPU's initialisation - run "
                "nvidia-persistenced", evidence={"persistence_mode_enabled": False}),)
    assert persistence_off("n1", healthy(persistence_mode_enabled=None), S) == ()


def test_the_healthy_gpu_raises_none_of_them_and_not_reported_is_not_applicable() -> None:
    new = {"ROW_REMAP_PENDING", "ROW_REMAP_FAILED", "RETIRED_PAGES_PENDING", "ECC_DISABLED", "ECC_MODE_PENDING",
           "RECOVERY_ACTION", "NVLINK_DOWN", "NVLINK_ERRORS", "FABRIC_NOT_READY", "PERSISTENCE_OFF"}
    for g in (healthy(), gpu()):  # gpu(): every issue-20 reading None, "not reported"
        found = evaluate("n1", HostStatus.OK, None, _node(g), S)
        assert not {f.code for f in found} & new
