"""The probe document parser, on the real H200 capture and on nvidia-smi's recorded failure texts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudiag.collect.parse import ProbeFormatError, parse_probe, parse_probe_output, read_value
from gpudiag.model import GpuReading, SmiStatus, decode_reasons
from gpudiag_node.readings import BY_NAME
from gpudiag_node.smi import choose_fields, known_fields

DATA = Path(__file__).resolve().parents[2] / "data" / "h200_580.159_fields"
HELP = (DATA / "help-query-gpu.txt").read_text()
LINE = (DATA / "query-gpu.csv").read_text().strip()
FIELDS = [[logical, name] for logical, name in choose_fields(known_fields(HELP))]

DRIVER_MSG = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that "
              "the latest NVIDIA driver is installed and running.\n")


def doc(*samples: dict[str, object], fields: list[list[str]] = FIELDS, **extra: object) -> dict[str, object]:
    base: dict[str, object] = {
        "schema": "gpudiag.probe/2", "collector": "python",
        "host": {"hostname": "h200-vm", "kernel": "6.8.0-51-generic"},
        "nvidia_smi": {"path": "/usr/bin/nvidia-smi", "help_exit": 0},
        "fields": fields, "samples": list(samples), "cuda_version": "13.0", "problems": [],
    }
    base.update(extra)
    return base


def sample(stdout: str, exit_code: int = 0, t_s: float = 0.0, stderr: str = "") -> dict[str, object]:
    return {"t_s": t_s, "exit": exit_code, "stdout": stdout, "stderr": stderr}


def test_field_choice_on_real_driver_580_prefers_new_names() -> None:
    names = dict(choose_fields(known_fields(HELP)))
    assert names["clock_event_reasons_mask"] == "clocks_event_reasons.active"
    assert names["compute_capability"] == "compute_cap"
    assert names["enforced_power_limit_w"] == "enforced.power.limit"
    assert names["sm_clock_mhz"] == "clocks.sm"
    assert names["power_instant_w"] == "power.draw.instant"


def test_field_choice_on_old_driver_falls_back_to_throttle_names_and_drops_compute_cap() -> None:
    old_help = '"index"\n\n"clocks_throttle_reasons.active"\n\n"power.limit"\n\n"clocks.current.sm" or "clocks.sm"\n'
    names = dict(choose_fields(known_fields(old_help)))
    assert names == {"index": "index", "clock_event_reasons_mask": "clocks_throttle_reasons.active",
                     "enforced_power_limit_w": "power.limit", "sm_clock_mhz": "clocks.sm"}


def test_real_h200_idle_capture_parses_to_exact_reading() -> None:
    node = parse_probe(doc(sample(LINE + "\n", t_s=0.0), sample(LINE + "\n", t_s=0.5)))
    assert node.smi_status is SmiStatus.OK
    assert node.driver_version == "580.159.04" and node.cuda_version == "13.0"
    assert node.sample_count == 2 and node.window_s == 0.5
    (g,) = node.gpus
    assert g == GpuReading(
        index=0, name="NVIDIA H200", uuid="GPU-3b54600d-ebf7-4feb-27c3-203ad61f6e34",
        pci_bus_id="00000000:00:06.0", compute_capability="9.0", sm="SM90", arch="Hopper",
        utilization_pct=0.0, memory_utilization_pct=0.0, power_w=79.32, power_instant_w=79.4,
        enforced_power_limit_w=700.0, default_power_limit_w=700.0, sm_clock_mhz=405.0, max_sm_clock_mhz=1980.0,
        clock_event_reasons_mask=0x1, temperature_c=33.0, pstate="P0", pcie_gen=5, pcie_gen_max=5,
        pcie_width=16, pcie_width_max=16, ecc_uncorrected=0, memory_used_mib=0.0, memory_total_mib=143771.0,
        # issue 20's readings, as the healthy H200 reports them ([N/A] and N/A: not reported, None)
        memory_temperature_c=36.0, remapped_rows_correctable=0, remapped_rows_uncorrectable=0,
        remapped_rows_pending=False, remapped_rows_failure=False, ecc_mode_enabled=True,
        ecc_mode_pending_enabled=True, ecc_corrected=0, ecc_uncorrected_aggregate=0, ecc_corrected_aggregate=0,
        gpu_recovery_action="none", persistence_mode_enabled=True, compute_mode="default", mig_mode_enabled=False,
        mig_mode_pending_enabled=False, vbios_version="96.00.A5.00.1A", inforom_image_version="G520.0282.02.02",
        lost=False, samples=g.samples)
    assert len(g.samples) == 2 and g.samples[1].t_s == 0.5 and g.samples[0].clock_event_reasons_mask == 1
    assert g.clock_event_reasons == ("gpu_idle",) and g.samples[0].power_instant_w == 79.4


def test_power_draw_instant_is_read_beside_the_average_and_shown_in_the_json() -> None:
    """power.draw.instant (one table entry) on the recorded H200 line: parsed, combined, in the JSON."""
    from builders import host_report, sweep

    from gpudiag.report.json_report import to_document

    lines = [LINE.replace("79.32, 79.40", f"79.32, {p}") for p in ("79.40", "412.70", "80.10")]
    (g,) = parse_probe(doc(*(sample(x + "\n", t_s=i * 0.5) for i, x in enumerate(lines)))).gpus
    assert [s.power_instant_w for s in g.samples] == [79.4, 412.7, 80.1]
    assert g.power_instant_w == 80.1 and g.power_w == 79.32  # medians: the spike shows in the samples
    (gpu_doc,) = to_document(sweep(host_report("h200", gpus=[g])))["hosts"][0]["gpus"]
    assert gpu_doc["power"]["readings"] == {"energy_counter": None, "power_draw": 79.32, "power_draw_instant": 80.1}


@pytest.mark.parametrize("raw", ["[N/A]", "[Not Supported]", "[GPU is lost]", "", "  ",
                                 "N/A", "[Requested functionality has been deprecated]"])
def test_no_value_spellings_are_none_never_zero(raw: str) -> None:
    assert read_value(BY_NAME["power_w"], raw) == (None, None)
    line = LINE.replace("79.32", raw)
    (g,) = parse_probe(doc(sample(line + "\n"))).gpus
    assert g.power_w is None and g.failed_readings == ()


@pytest.mark.parametrize("raw, why", [
    ("[Unknown Error]", "nvidia-smi: [Unknown Error]"),
    ("garbage", "not a number: 'garbage'"),
    ("inf", "not a finite number: inf"),
    ("1e400", "not a finite number: inf"),
])
def test_a_failed_read_is_missing_and_says_why(raw: str, why: str) -> None:
    """An error is not "not applicable": the reading is None and listed as failed, so checks say UNKNOWN."""
    (g,) = parse_probe(doc(sample(LINE.replace("79.32", raw) + "\n"))).gpus
    assert g.power_w is None and g.failed_readings == (("power_w", why),)


def test_one_failed_sample_among_good_ones_is_not_a_missing_reading() -> None:
    lines = [LINE, LINE.replace("79.32", "[Unknown Error]"), LINE]
    (g,) = parse_probe(doc(*(sample(x + "\n", t_s=i * 0.5) for i, x in enumerate(lines)))).gpus
    assert g.power_w == 79.32 and g.failed_readings == ()


def test_medians_over_samples() -> None:
    lines = [LINE.replace(", 79.32,", f", {p},") for p in ("100.0", "300.0", "320.0", "330.0", "900.0")]
    node = parse_probe(doc(*(sample(x + "\n", t_s=i * 0.5) for i, x in enumerate(lines))))
    assert node.gpus[0].power_w == 320.0
    assert [s.power_w for s in node.gpus[0].samples] == [100.0, 300.0, 320.0, 330.0, 900.0]


def test_driver_not_loaded_exit_9_is_data() -> None:
    node = parse_probe(doc(sample(DRIVER_MSG, exit_code=9)))
    assert node.smi_status is SmiStatus.DRIVER_ERROR and node.smi_exit_code == 9
    assert node.smi_message is not None and "couldn't communicate with the NVIDIA driver" in node.smi_message
    assert node.gpus == ()


def test_no_devices_exit_6_is_data() -> None:
    node = parse_probe(doc(sample("No devices were found\n", exit_code=6)))
    assert node.smi_status is SmiStatus.NO_DEVICES and node.smi_message == "No devices were found"


def test_missing_nvidia_smi() -> None:
    node = parse_probe(doc(nvidia_smi={"path": None, "status": "missing"}, fields=[]))
    assert node.smi_status is SmiStatus.MISSING and node.gpus == ()


def test_one_lost_gpu_among_eight_keeps_the_others() -> None:
    rows = []
    for i in range(8):
        if i == 3:
            continue
        rows.append(LINE.replace("0, NVIDIA H200", f"{i}, NVIDIA H200", 1)
                    .replace("00000000:00:06.0", f"00000000:{0x18 + i:02X}:00.0"))
    stdout = "\n".join(rows[:3] + ["Unable to determine the device handle for GPU0000:1B:00.0: Unknown Error"]
                       + rows[3:]) + "\n"
    node = parse_probe(doc(sample(stdout, exit_code=15)))
    assert node.smi_status is SmiStatus.OK
    assert [g.index for g in node.gpus] == list(range(8))
    lost = node.gpus[3]
    assert lost.lost and lost.pci_bus_id == "0000:1B:00.0" and lost.power_w is None
    assert not any(g.lost for g in node.gpus if g.index != 3)
    assert node.smi_message is not None and "Unknown Error" in node.smi_message


def test_gpu_is_lost_values_mark_the_gpu_lost() -> None:
    line = LINE.replace("79.32", "[GPU is lost]")
    (g,) = parse_probe(doc(sample(line + "\n"))).gpus
    assert g.lost


def test_lost_words_split_over_two_values_do_not_mark_the_gpu_lost() -> None:
    # Each value is searched on its own: "[GPU is" in one column and "lost]" in the next is no lost GPU.
    cells = LINE.split(", ")
    at = cells.index("79.32")
    cells[at:at + 2] = ["[GPU is", "lost]"]
    (g,) = parse_probe(doc(sample(", ".join(cells) + "\n"))).gpus
    assert not g.lost


def test_the_same_words_are_typed_by_each_readings_kind() -> None:
    # nvidia-smi's words are typed once per sweep and kind (a cache): a text reading keeps them as they are
    assert read_value(BY_NAME["name"], " 700.00") == ("700.00", None)
    assert read_value(BY_NAME["enforced_power_limit_w"], " 700.00") == (700.0, None)
    assert read_value(BY_NAME["name"], " 700.00") == ("700.00", None)


def test_unknown_exit_without_rows_is_failed() -> None:
    node = parse_probe(doc(sample('Field "bogus.field" is not a valid field to query.\n\n', exit_code=2)))
    assert node.smi_status is SmiStatus.FAILED and node.smi_exit_code == 2


def test_reason_bits_decode_in_order_and_keep_unknown_bits() -> None:
    assert decode_reasons(0x1) == ("gpu_idle",)
    assert decode_reasons(0x44) == ("sw_power_cap", "hw_thermal_slowdown")
    assert decode_reasons(0x1000) == ("0x1000",)
    assert decode_reasons(None) == ()


def test_the_newest_drivers_reason_bits_decode_by_name() -> None:
    """nvml.h's nvmlClocksEventReasonBoardLimit (0x200) and ...Reliability (0x400): before, "0x600"."""
    assert decode_reasons(0x601) == ("gpu_idle", "board_limit", "reliability")
    assert decode_reasons(0x1200) == ("board_limit", "0x1000")


@pytest.mark.parametrize("stdout", [b"", b"not json", b'{"schema": "other/1"}', b"[1, 2]"])
def test_not_a_probe_document(stdout: bytes) -> None:
    with pytest.raises(ProbeFormatError):
        parse_probe_output(stdout)


def test_document_after_noise_lines_is_found() -> None:
    """A login banner or a motd line before the JSON must not hide it."""
    out = b"Welcome to node 7\n" + json.dumps(doc(sample(LINE + "\n"))).encode() + b"\n"
    assert parse_probe_output(out).gpus[0].name == "NVIDIA H200"


def test_the_later_calls_of_the_window_leave_the_once_read_readings_out() -> None:
    """collectors/gpudiag_node/probe.py asks for the readings read once (health, configuration) in the first
    call only; the later samples' rows have the columns of ``later_fields`` and still parse, every sample."""
    from gpudiag_node.readings import ONCE

    once = {r.name for r in ONCE}
    values = dict(zip([logical for logical, _ in FIELDS], [c.strip() for c in LINE.split(",")], strict=True))
    later = [f for f in FIELDS if f[0] not in once]
    short_line = ", ".join(values[logical] for logical, _ in later)
    node = parse_probe(doc(sample(LINE + "\n"), sample(short_line + "\n", t_s=0.5), later_fields=later))
    (g,) = node.gpus
    assert len(g.samples) == 2 and [s.temperature_c for s in g.samples] == [33.0, 33.0]
    assert (g.remapped_rows_pending, g.gpu_recovery_action, g.failed_readings) == (False, "none", ())
    assert len(later) < len(FIELDS) and "remapped_rows_pending" not in dict(later)
