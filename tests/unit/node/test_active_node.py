"""The active test's node side (gpudiag_node.active and active_test) without a GPU: which GPUs the window lets
through, how the test's lines become the section, the PTX text. (The test's own process runs in
tests/integration/test_active_sshd.py and, on a GPU, tests/gpu/test_active_gpu.py.)"""

from __future__ import annotations

import re
import time

from gpudiag_node import active, active_test


def test_only_gpus_the_window_found_idle_are_named() -> None:
    rows = [{"index": "0", "utilization_pct": "0", "pci_bus_id": "00000000:18:00.0"},
            {"index": "0", "utilization_pct": "0"},
            {"index": "1", "utilization_pct": "0"}, {"index": "1", "utilization_pct": "3"},
            {"index": "2", "utilization_pct": "0"},
            {"index": "3", "utilization_pct": "[N/A]"},
            {"index": 4, "utilization_pct": 0.0, "pci_bus_id": "00000000:1c:00.0"}]
    processes = {"gpus": {"2": [{"pid": 4312}]}}
    idle, why = active.idle_gpus(rows, processes)
    assert idle == {0: "00000000:18:00.0", 4: "00000000:1c:00.0"}
    assert why == {1: "in use: busy in the window", 2: "in use: a process on it",
                   3: "its utilization was not read, so it is not known to be idle"}


def test_the_sections_states_from_the_tests_lines() -> None:
    lines = [{"gpu": 0, "part": "compute", "tflops": 60.0}, {"gpu": 0, "part": "memory", "gb_s": 4000.0},
             {"gpu": 0, "done": True}, {"gpu": 1, "skipped": "in use at the re-check: busy"},
             {"gpu": 2, "failed": "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)"},
             {"gpu": 3, "part": "compute", "tflops": 1.0}, {"gpu": 9, "done": True}, "junk"]
    out: dict[str, object] = {"gpus": [{"index": 5, "state": "skipped", "why": "in use: a process on it"}]}
    active._assemble(out, lines, [0, 1, 2, 3], True, 10.0, -9, "")
    states = {g["index"]: (g["state"], g.get("why")) for g in out["gpus"]}  # type: ignore[union-attr]
    assert states == {0: ("tested", None), 1: ("skipped", "in use at the re-check: busy"),
                      2: ("failed", "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)"),
                      3: ("timed_out", "the test did not finish in 10 s and was ended"),
                      5: ("skipped", "in use: a process on it")}
    assert out["gpus"][0]["compute"] == {"tflops": 60.0}  # type: ignore[index]
    ended: dict[str, object] = {"gpus": []}
    active._assemble(ended, [{"gpu": 0, "part": "compute", "tflops": 60.0}], [0], False, 10.0, -11, "Segmentation")
    assert ended["gpus"] == [{"index": 0, "state": "failed", "compute": {"tflops": 60.0},
                              "why": "the test's process ended (exit -11) Segmentation"}]


def test_the_ptx_declares_the_kernel_and_its_work() -> None:
    text = active_test.ptx()
    assert text.startswith(".version 6.0\n.target sm_50\n.address_size 64\n")
    assert ".visible .entry fma_loop(.param .u64 out, .param .u32 rounds)" in text
    assert len(re.findall(r"^\s+fma\.rn\.f32 ", text, re.MULTILINE)) == active_test.CHAINS * active_test.UNROLL
    assert active_test.FLOPS_PER_ROUND == 2 * active_test.CHAINS * active_test.UNROLL
    assert active_test._bus_id("00000000:1B:00.0") == "0000:1b:00.0" and active_test._bus_id(None) is None


def test_no_window_no_test_and_no_time_no_test() -> None:
    assert active.run({}, {}, [{"index": 0, "utilization_pct": "100"}], time.monotonic()) == {
        "budget_s": 10.0, "gpus": [{"index": 0, "state": "skipped", "why": "in use: busy in the window"}]}
    late = active.run({"deadline_s": 4.0}, {}, [{"index": 0, "utilization_pct": "0"}], time.monotonic() - 1.0)
    assert late["error"].startswith("not run: the deadline leaves ")
