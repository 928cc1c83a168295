"""The fake ``nvidia-smi`` run directly (no SSH): output shapes, N/A rules, failures, node selection."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import make_base

STUB = Path(__file__).resolve().parents[2] / "agent" / "gpudiag" / "demo" / "fake_nvidia_smi"
SCENARIOS = sorted(p.stem for p in (STUB.parent / "scenarios").glob("[!_]*.json"))
DRIVER_ERROR = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n\n"
)
QUERY = "--query-gpu=index,name,uuid,pci.bus_id,compute_cap,utilization.gpu,power.draw,enforced.power.limit"


def smi(tmp_path: Path, *args: str, scenario: str | None = "healthy", server: str | None = None,
        stub: Path = STUB, call_ms: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUDIAG_FAKE", "SSH_"))}
    if call_ms is not None:
        env["GPUDIAG_FAKE_CALL_MS"] = str(call_ms)
    env["GPUDIAG_FAKE_STATE_DIR"] = str(tmp_path / "state")
    if scenario:
        env["GPUDIAG_FAKE_SCENARIO"] = scenario
    if server:
        env["SSH_CONNECTION"] = f"127.0.0.1 40000 {server} 22"
    return subprocess.run([sys.executable, str(stub), *args], capture_output=True, text=True, env=env, timeout=30)


def rows(result: subprocess.CompletedProcess[str]) -> list[list[str]]:
    return [line.split(", ") for line in result.stdout.splitlines()]


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if s != "hang"])  # hang: its own test below
def test_every_scenario_answers_or_fails_as_designed(tmp_path: Path, scenario: str) -> None:
    result = smi(tmp_path, QUERY.replace(",compute_cap", ""), "--format=csv,noheader,nounits", scenario=scenario)
    expected_status = {"driver_error": 9, "no_devices": 6, "one_lost": 15}.get(scenario, 0)
    assert (result.returncode, result.stderr) == (expected_status, "")
    table = [r for r in rows(result) if r[0] and not r[0].startswith(("Unable", "No devices", "NVIDIA-SMI"))]
    assert all(len(r) == 7 for r in table)
    assert len({r[2] for r in table}) == len({r[3] for r in table}) == len(table)  # distinct uuid, bus id


def test_help_lists_fields_in_the_real_layout(tmp_path: Path) -> None:
    text = smi(tmp_path, "--help-query-gpu").stdout
    assert text.startswith('List of valid properties to query for the switch "--query-gpu":\n\n"timestamp"\n')
    assert '\n"name" or "gpu_name"\nThe official product name of the GPU.' in text
    assert '\n"compute_cap"\n' in text and '\n"clocks_event_reasons.active" or ' in text
    assert text.endswith("\n\n")
    base = json.loads((STUB.parent / "scenarios" / "_base_h200_580.json").read_text())
    assert text == make_base.render_help(base["help_header"], base["help"])  # the capture, byte for byte


def test_old_driver_knows_throttle_reasons_and_no_compute_cap(tmp_path: Path) -> None:
    text = smi(tmp_path, "--help-query-gpu", scenario="old_driver").stdout
    assert '\n"clocks_throttle_reasons.active"\nBitmask of active' in text
    assert "clocks_event_reasons" not in text and '"compute_cap"' not in text
    bad = smi(tmp_path, "--query-gpu=name,compute_cap", "--format=csv,noheader", scenario="old_driver")
    assert (bad.returncode, bad.stdout) == (2, 'Field "compute_cap" is not a valid field to query.\n\n')
    good = smi(tmp_path, "--query-gpu=clocks_throttle_reasons.active,clocks_throttle_reasons.sw_power_cap",
               "--format=csv,noheader", "-i", "2", scenario="old_driver")
    assert good.stdout == "0x0000000000000004, Active\n"


def test_units_headers_and_not_supported_values(tmp_path: Path) -> None:
    fields = "--query-gpu=power.draw,fan.speed,fabric.state,module.power.draw.instant,gpu_name,clocks.sm"
    with_units = smi(tmp_path, fields, "--format=csv", "-i", "0", scenario="idle").stdout.splitlines()
    no_units = smi(tmp_path, fields, "--format=csv,nounits", "-i", "0", scenario="idle").stdout.splitlines()
    header = "power.draw [W], fan.speed [%], fabric.state, module.power.draw.instant [W], name, clocks.current.sm [MHz]"
    assert with_units[0] == no_units[0] == header
    assert re.fullmatch(r"\d+\.\d\d W, \[N/A\], N/A, \[N/A\], NVIDIA H200, 405 MHz", with_units[1])
    assert re.fullmatch(r"\d+\.\d\d, \[N/A\], N/A, \[N/A\], NVIDIA H200, 405", no_units[1])


def test_unknown_field_is_refused_like_the_real_tool(tmp_path: Path) -> None:
    result = smi(tmp_path, "--query-gpu=name,bogus.field", "--format=csv,noheader,nounits")
    assert (result.returncode, result.stdout, result.stderr) == (
        2, 'Field "bogus.field" is not a valid field to query.\n\n', "")


def test_gpu_selection(tmp_path: Path) -> None:
    some = smi(tmp_path, "--query-gpu=index,pci.bus_id", "--format=csv,noheader", "-i", "1,00000000:D1:00.0")
    assert some.stdout == "1, 00000000:43:00.0\n6, 00000000:D1:00.0\n"
    beyond = smi(tmp_path, "--query-gpu=index", "--format=csv,noheader", "-i", "8")
    assert (beyond.returncode, beyond.stdout) == (6, "No devices were found\n")


@pytest.mark.parametrize("args", [("--help-query-gpu",), (), ("--query-gpu=name", "--format=csv"), ("-L",)])
def test_driver_error_on_every_call(tmp_path: Path, args: tuple[str, ...]) -> None:
    result = smi(tmp_path, *args, scenario="driver_error")
    assert (result.returncode, result.stdout) == (9, DRIVER_ERROR)


def test_no_devices(tmp_path: Path) -> None:
    for args in ((), ("--query-gpu=name", "--format=csv,noheader")):
        result = smi(tmp_path, *args, scenario="no_devices")
        assert (result.returncode, result.stdout) == (6, "No devices were found\n")


def test_lost_gpu_prints_the_handle_error_in_its_place(tmp_path: Path) -> None:
    result = smi(tmp_path, "--query-gpu=index,name", "--format=csv,noheader,nounits", scenario="one_lost")
    lines = result.stdout.splitlines()
    assert result.returncode == 15
    assert lines[3] == "Unable to determine the device handle for GPU0000:61:00.0: Unknown Error"
    assert [line.split(",")[0] for line in lines[:3] + lines[4:]] == ["0", "1", "2", "4", "5", "6", "7"]


def test_hang_records_its_pid_and_sleeps(tmp_path: Path) -> None:
    assert smi(tmp_path, "--query-gpu=bogus", "--format=csv", scenario="hang").returncode == 2  # fails fast
    assert smi(tmp_path, "--help-query-gpu", scenario="hang").returncode == 0
    env = {**os.environ, "GPUDIAG_FAKE_SCENARIO": "hang", "GPUDIAG_FAKE_STATE_DIR": str(tmp_path / "state"),
           "SSH_CONNECTION": "127.0.0.1 40000 127.0.0.9 22"}
    proc = subprocess.Popen([sys.executable, str(STUB), "--query-gpu=name", "--format=csv"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        pid_file = tmp_path / "state" / "hang-127.0.0.9.pid"
        deadline = time.monotonic() + 10
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert int(pid_file.read_text()) == proc.pid
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=0.5)
    finally:
        proc.kill()
        proc.communicate()


def test_lists_cycle_per_call_and_jitter_stays_in_bounds(tmp_path: Path) -> None:
    calls = [smi(tmp_path, "--query-gpu=utilization.gpu,power.draw", "--format=csv,noheader,nounits", "-i", "0")
             for _ in range(3)]
    assert [rows(c)[0][0] for c in calls] == ["98", "97", "99"]  # healthy's list, one step per call
    assert all(595 <= float(rows(c)[0][1]) <= 645 for c in calls)  # 620 W +/- 25


def test_calls_are_counted_under_concurrency(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=12) as pool:
        list(pool.map(lambda _: smi(tmp_path, "--query-gpu=index", "--format=csv", "-i", "0"), range(24)))
    assert (tmp_path / "state" / "calls-local-healthy").read_text() == "24"


def test_address_picks_the_scenario_through_hosts_json(tmp_path: Path) -> None:
    node = tmp_path / "bin"
    node.mkdir()
    (node / "nvidia-smi").symlink_to(STUB)  # scenarios come from the package, hosts.json from here
    (node / "hosts.json").write_text(json.dumps({"127.0.0.3": "case_study", "*": "idle"}))
    args = ("--query-gpu=name,utilization.gpu,uuid", "--format=csv,noheader,nounits", "-i", "0")
    case = smi(tmp_path, *args, scenario=None, server="127.0.0.3", stub=node / "nvidia-smi")
    other = smi(tmp_path, *args, scenario=None, server="127.0.0.4", stub=node / "nvidia-smi")
    other_again = smi(tmp_path, *args, scenario=None, server="127.0.0.5", stub=node / "nvidia-smi")
    assert rows(case)[0][:2] == ["NVIDIA RTX PRO 6000 Blackwell Server Edition", "100"]
    assert rows(other)[0][:2] == ["NVIDIA H200", "0"]
    assert rows(other)[0][2] != rows(other_again)[0][2]  # another node, other GPUs
    (node / "hosts.json").write_text(json.dumps({"127.0.0.3": "case_study"}))
    unmapped = smi(tmp_path, *args, scenario=None, server="127.0.0.4", stub=node / "nvidia-smi")
    assert (unmapped.returncode, unmapped.stdout) == (255, "")
    assert "no scenario for 127.0.0.4" in unmapped.stderr


def test_plain_table_header_and_rows(tmp_path: Path) -> None:
    lines = smi(tmp_path, scenario="mixed").stdout.splitlines()
    assert lines[2] == "| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |"
    assert all(len(line) == 91 for line in lines[1:] if line)
    assert lines[8].startswith("|   0  NVIDIA B200 ") and lines[12].startswith("|   1  NVIDIA RTX PRO 6000 Blackw...")
    assert re.fullmatch(r"\| N/A   \d\dC    P0 +\d+W / 1000W \| +160112MiB / 183359MiB \| +\d+%      Default \|",
                        lines[9])


def test_a_call_lasts_at_least_the_call_time_a_benchmark_asks_for(tmp_path: Path) -> None:
    started = time.monotonic()
    result = smi(tmp_path, QUERY, "--format=csv,noheader,nounits", call_ms=400)
    assert result.returncode == 0 and len(rows(result)) == 8
    assert time.monotonic() - started >= 0.4  # the stub's own sleep: a lower bound, never a speed claim
