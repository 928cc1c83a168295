"""Signature packs, configuration echoes parsed into facts, and the per-host log plans (with their one-line errors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpudiag.demo.demo_logs import SERVER_ARGS
from gpudiag.logs import KERNEL, LogConfigError, LogOptions, PackError, Registry, build_plans, builtin_packs, load_pack
from gpudiag.logs.echo import facts_of, parse_argv, parse_dict, parse_kwargs, same_value, value_of
from gpudiag.logs.packs import BUILTIN, parse_pack
from gpudiag.model import Host

# --------------------------------------------------------------------------------------------- packs


def test_builtin_packs_load_and_every_regex_compiles() -> None:
    packs = builtin_packs()
    assert [p.name for p in packs] == list(BUILTIN)
    registry = Registry(packs)
    assert len(registry.signatures) == sum(len(p.signatures) for p in packs)
    for pack in packs:
        assert pack.origin == "built-in" and pack.description and pack.references
        for sig in pack.signatures:
            re.compile(sig.regex)
            assert sig.meaning, sig.name
            assert sig.severity == "info" or sig.action or sig.report == "xid", sig.name


@pytest.mark.parametrize(("signature", "line"), [
    ("sglang_ready", "[2026-11-30 06:15:52] The server is fired up and ready to roll!"),
    ("sglang_decode_batch", "[2025-07-18 15:32:54 TP0] Decode batch. #running-req: 1, #token: 2266, token usage: "
                            "0.00, cuda graph: True, gen throughput (token/s): 3.13, #queue-req: 0, timestamp: x"),
    ("sglang_decode_batch", "[2026-09-13 16:06:07] Decode batch, #running-req: 66, #token: 87282, token usage: "
                            "1.00, cuda graph: False, gen throughput (token/s): 2529.33, #queue-req: 13"),
    ("sglang_kv_cache_full", "[2026-09-13 16:06:07] KV cache pool is full. Retract requests. #retracted_reqs: 1, "
                             "#new_tokens_gained: 646, #new_token_ratio: 0.0980 -> 0.3487"),
    ("vllm_api_server_start", "(APIServer pid=1) INFO 11-03 05:51:44 [api_server.py:1839] vLLM API server version "
                              "0.11.0"),
    ("vllm_shm_broadcast_stall", "INFO [shm_broadcast.py:501] No available shared memory broadcast block found in "
                                 "60 seconds. This typically happens when some processes are hanging"),
    ("flashinfer_autotune_start", "(Worker_TP1 pid=431) 2026-08-31 13:10:54,089 - INFO - autotuner.py:651 - "
                                  "flashinfer.jit: [Autotuner]: Autotuning process starts ..."),
    ("flashinfer_autotune_end", "2026-04-17 05:52:34,084 - INFO - autotuner.py:268 - flashinfer.jit: [Autotuner]: "
                                "Autotuning process ends"),
    ("flashinfer_tuning_progress", "[AutoTuner]: Tuning fp4_gemm:  77%|###  | 10/13 [00:00<00:00, 97.36profile/s]"),
    ("flashinfer_default_configs", "flashinfer.jit: [Autotuner]: Loading configs for ('fused_moe', 'x') from file "
                                   "failed; Using default configs instead."),
    ("nccl_p2p_transport", "gpu34:34088:34142 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read"),
    ("nccl_p2p_transport", "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"),
    ("nccl_shm_transport", "proxmox:1495819 [0] NCCL INFO Channel 00 : 0[1] -> 1[2] via SHM/direct/direct"),
    ("nccl_socket_transport", "NCCL INFO Channel 00/02 : 0 -> 1 via NET/Socket/0"),
    ("nccl_p2p_disabled", "lab:3038984:3038984 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1"),
    ("custom_allreduce_disabled", "WARNING 06-25 19:03:47 custom_all_reduce.py:158] Custom allreduce is disabled "
                                  "because it's not supported on more than two PCIe-only GPUs."),
    ("cuda_out_of_memory", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."),
    ("cuda_illegal_address", "RuntimeError: CUDA error: an illegal memory access was encountered"),
    ("cuda_nan_inf", "Detected errors during sampling! NaN in the logits."),
    ("cuda_nan_inf", "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0"),
    ("sm120_no_native_fp4", "(Worker_TP0 pid=201) WARNING 10-24 09:50:14 [marlin_utils_fp4.py:137] Your GPU does "
                            "not have native support for FP4 computation but FP4 quantization is being used."),
    ("sm120_no_cutlass_scaled_mm", "No compiled cutlass_scaled_mm for CUDA device capability: 120"),
    ("sm120_device_unsupported", "FlashInfer-CUTLASS MoE kernel does not support current device sm_120"),
    ("kernel_xid", "May 18 19:02:39 host kernel: NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus."),
    ("kernel_xid", "[ 269.517039] NVRM: Xid (0000:01:00): 3, C 00000005 SC 00000007 M 00001ffc Data ffffffff"),
])
def test_builtin_signatures_match_real_lines(signature: str, line: str) -> None:
    sig = Registry(builtin_packs()).signatures[signature]
    assert re.search(sig.regex, line, re.I if sig.ignore_case else 0)
    assert not (sig.exclude and re.search(sig.exclude, line))


def test_no_builtin_signature_matches_a_server_args_line() -> None:
    """The echo is configuration; even so, no built-in signature would count it."""
    line = f"[2026-11-30 06:10:02] server_args={SERVER_ARGS}"
    hits = [s.name for s in Registry(builtin_packs()).signatures.values()
            if re.search(s.regex, line) and not (s.exclude and re.search(s.exclude, line))]
    assert hits == []


def _pack_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "site.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("text", "message"), [
    ("pack: Site\n", "pack: 'Site': use lowercase letters, digits and '_'"),
    ("pack: site\nsignatures:\n  - {name: a, regex: '(x'}\n", "signatures[0] (a): regex does not compile: "),
    ("pack: site\nsignatures:\n  - {name: a, regex: x, severity: fatal}\n",
     "signatures[0] (a): severity: 'fatal' is not one of info, warning, critical"),
    ("pack: site\nsignatures:\n  - {name: a, regex: x, grep: y}\n", "signatures[0]: unknown key 'grep'"),
    ("pack: site\nsignatures:\n  - {name: a, regex: '(?P<n>x)', group_by: [pci]}\n",
     "group_by: the regex has no named group 'pci'"),
    ("pack: site\nexpectations:\n  - {name: e, echo: sglang_server_args, expect: [nope]}\n",
     "expectation 'e': no signature 'nope'"),
    ("pack: sglang\n", "pack 'sglang' is already defined by built-in"),
    ("pack: site\nsignatures:\n  - {name: sglang_ready, regex: x}\n",
     "signature 'sglang_ready' is already defined in pack 'sglang'"),
    ("pack: site\nsignatures: [{name: a\n", "YAML syntax error"),
])
def test_broken_user_packs_fail_in_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = _pack_file(tmp_path, text)
    with pytest.raises(PackError) as info:
        Registry.with_builtins([str(path)])
    assert message in str(info.value) and str(info.value).startswith(str(path))
    assert "\n" not in str(info.value)


def test_a_user_pack(tmp_path: Path) -> None:
    path = _pack_file(tmp_path, """
pack: site
description: our launcher's lines
since_hours: 12
signatures:
  - name: site_restart
    regex: 'watchdog: restarting (?P<what>\\w+)'
    severity: critical
    meaning: the watchdog restarted a server
    action: read why
expectations:
  - name: site_tp8
    echo: sglang_server_args
    when: {tp_size: [4, 8]}
    expect: [site_restart]
""")
    pack = load_pack(path)
    assert (pack.name, pack.origin, pack.since_hours, pack.signatures[0].severity) == ("site", str(path), 12.0,
                                                                                         "critical")
    assert pack.expectations[0].when == (("tp_size", (4, 8)),)


# --------------------------------------------------------------------------------------------- echoes


def test_sglang_server_args_become_facts() -> None:
    line = f"[2026-11-30 06:10:02] server_args={SERVER_ARGS}"
    start = line.index("ServerArgs(") + len("ServerArgs(")
    facts = dict(facts_of("python_kwargs", line, start, ["model_path", "tp_size", "ep_size", "moe_runner_backend",
                                                        "attention_backend", "disable_flashinfer_autotune",
                                                        "not_there"]))
    assert facts == {"model_path": "/models/GLM-5-NVFP4", "tp_size": 8, "ep_size": 8,
                     "moe_runner_backend": "flashinfer_cutlass", "attention_backend": "trtllm_mla",
                     "disable_flashinfer_autotune": False}


def test_kwargs_with_nested_values_quotes_and_a_cut_line() -> None:
    text = "X(a='x, y)', b=LoRARef(n=1, m='(,)'), c=[1, (2, 3)], d={'k': 'v'}, e=None, f=1.5, g=True)"
    assert parse_kwargs(text, 2) == {"a": "x, y)", "b": "LoRARef(n=1, m='(,)')", "c": "[1, (2, 3)]",
                                     "d": "{'k': 'v'}", "e": None, "f": 1.5, "g": True}
    assert parse_kwargs("ServerArgs(tp_size=8, model_path='/very/lo", 11) == {"tp_size": 8,
                                                                              "model_path": "'/very/lo"}


def test_vllm_non_default_args_dict() -> None:
    line = ("(APIServer pid=5) INFO 03-02 11:00:22 [utils.py:253] non-default args: {'model_tag': 'x', 'host': "
            "'0.0.0.0', 'lora_modules': [LoRAModulePath(name='a', path='b:c')], 'tensor_parallel_size': 8, "
            "'enable_expert_parallel': True}")
    assert parse_dict(line, line.index("args:")) == {
        "model_tag": "x", "host": "0.0.0.0", "lora_modules": "[LoRAModulePath(name='a', path='b:c')]",
        "tensor_parallel_size": 8, "enable_expert_parallel": True}


def test_argv_with_aliases() -> None:
    line = ("+ exec python3 -m sglang.launch_server --model-path /models/GLM-5-NVFP4 --tp 8 --ep-size=8 "
            "--moe-runner-backend flashinfer_cutlass --disable-cuda-graph --mem-fraction-static 0.88 --host 0.0.0.0")
    assert parse_argv(line)["disable_cuda_graph"] is True
    assert facts_of("argv", line, line.index("launch_server"), ["model_path", "tp_size", "ep_size",
                                                                 "moe_runner_backend", "disable_cuda_graph",
                                                                 "mem_fraction_static"],
                    {"tp": "tp_size"}) == (("model_path", "/models/GLM-5-NVFP4"), ("tp_size", 8), ("ep_size", 8),
                                           ("moe_runner_backend", "flashinfer_cutlass"),
                                           ("disable_cuda_graph", True), ("mem_fraction_static", 0.88))
    assert parse_argv("--name 'unbalanced") == {"name": "'unbalanced"}


def test_values_are_literals_only() -> None:
    assert value_of("__import__('os').system('touch /tmp/x')") == "__import__('os').system('touch /tmp/x')"
    assert value_of("'a' * 10**9") == "'a' * 10**9"
    assert value_of("x" * 5000).endswith("...")


@pytest.mark.parametrize(("fact", "wanted", "same"), [
    (False, False, True), ("False", False, True), ("false", False, True), (8, 8, True), ("8", 8, True),
    (8.0, 8, True), (None, None, True), (True, False, False), ("flashinfer_cutlass", "flashinfer_trtllm", False)])
def test_same_value_across_spellings(fact: object, wanted: object, same: bool) -> None:
    assert same_value(fact, wanted) is same  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------- plans


def test_plans_from_inventory_entries_and_flags(tmp_path: Path) -> None:
    hosts = [Host(name="a", logs=("~/glm5.log", {"path": KERNEL})),
             Host(name="b", logs=({"path": "/var/log/vllm.log", "packs": ["vllm", "nccl"], "tail_mib": 32,
                                   "since_hours": 6},)),
             Host(name="c")]
    plans = build_plans(hosts, LogOptions(paths=("/var/log/extra.log",), tail_mib=2))
    a, kernel, extra = plans["a"].sources
    assert (a.path, a.tail_bytes, a.since_hours, "xid" in a.packs) == ("~/glm5.log", 2 * 1024 * 1024, None, False)
    assert {"sglang_ready", "flashinfer_autotune_start"} <= {s.name for s in a.signatures}
    assert [e.name for e in a.expectations] == ["flashinfer_autotuner_ran"]
    assert (kernel.packs, kernel.since_hours) == (("xid",), 24.0)
    assert extra.path == "/var/log/extra.log"
    (b, _) = plans["b"].sources
    assert (b.packs, b.tail_bytes, b.since_hours) == (("vllm", "nccl"), 32 * 1024 * 1024, 6.0)
    assert {e.name for e in b.echoes} >= {"sglang_server_args", "vllm_non_default_args"}  # every echo, always
    assert [s.path for s in plans["c"].sources] == ["/var/log/extra.log"]


def test_hosts_with_the_same_logs_share_one_plan_key() -> None:
    plans = build_plans([Host(name="a", logs=("~/x.log",)), Host(name="b", logs=("~/x.log",)), Host(name="c"),
                         Host(name="d")])
    assert plans["a"].key == plans["b"].key != plans["c"].key == plans["d"].key


def test_expectations_pull_in_the_signatures_they_need() -> None:
    (source,) = build_plans([Host(name="a", logs=({"path": "x", "packs": ["flashinfer"]},))])["a"].sources
    assert "sglang_ready" in {s.name for s in source.signatures}  # from the sglang pack, for the "after"


def test_grep_searches_one_signature_and_still_knows_every_echo() -> None:
    (source,) = build_plans([Host(name="a", logs=("x",))], LogOptions(only_signature="sglang_kv_cache_full"))[
        "a"].sources
    assert [s.name for s in source.signatures] == ["sglang_kv_cache_full"] and source.expectations == ()
    assert len(source.echoes) == len(Registry(builtin_packs()).echoes)


@pytest.mark.parametrize(("logs", "options", "message"), [
    (({"path": "/x", "grep": "NVLink|Xid"},), LogOptions(),
     "host h: logs[0]: unknown key 'grep' (known: packs, path, since_hours, tail_mib)"),
    (({"packs": ["xid"]},), LogOptions(), "host h: logs[0]: missing key 'path'"),
    ((42,), LogOptions(), "host h: logs[0]: expected a log path or a mapping, got int"),
    (("@journal",), LogOptions(), "host h: logs[0]: '@journal': the only special source is @kernel"),
    (({"path": "/x", "packs": ["nope"]},), LogOptions(), "host h: logs[0]: packs: no pack 'nope' (known: sglang"),
    (({"path": "/x", "packs": "xid"},), LogOptions(), "packs: expected a list of pack names or pack files"),
    (({"path": "/x", "tail_mib": 0},), LogOptions(), "tail_mib: expected a number above 0 and at most 1024"),
    (({"path": "/x", "since_hours": True},), LogOptions(), "since_hours: expected a number above 0"),
    (("/x\n/y",), LogOptions(), "the path holds a NUL or newline character"),
    ((), LogOptions(only_signature="nope"), "--signature nope: no such signature (known: "),
    ((), LogOptions(pack_files=("/nonexistent/pack.yaml",)), "--pack /nonexistent/pack.yaml: cannot read the pack"),
])
def test_a_broken_log_configuration_is_one_line(logs: tuple[object, ...], options: LogOptions, message: str) -> None:
    with pytest.raises(LogConfigError) as info:
        build_plans([Host(name="h", logs=logs)], options)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_pack_file_named_in_the_inventory(tmp_path: Path) -> None:
    path = _pack_file(tmp_path, "pack: site\nsignatures:\n  - {name: site_oops, regex: oops, meaning: m, action: a}\n")
    plans = build_plans([Host(name="a", logs=({"path": "/x", "packs": ["sglang", str(path)]},)),
                         Host(name="b", logs=({"path": "/x", "packs": [str(path)]},), ), Host(name="c", logs=("/y",))])
    assert plans["a"].sources[0].packs == ("sglang", "site")
    assert plans["b"].sources[0].packs == ("site",)
    assert "site" not in plans["c"].sources[0].packs  # named by other hosts only: not a default
    with_flag = build_plans([Host(name="c", logs=("/y",))], LogOptions(pack_files=(str(path),)))
    assert "site" in with_flag["c"].sources[0].packs  # --pack: used by logs that name no packs


def test_the_shipped_inventory_logs_make_plans() -> None:
    from gpudiag.sources.inventory import load_inventory

    inventory = load_inventory(Path(__file__).resolve().parents[3] / "inventory.yaml")
    plans = build_plans(inventory.hosts)
    sources = plans["rack2-gpu1"].sources
    assert [(s.path, s.since_hours, s.packs[-1]) for s in sources] == [("~/sglang.log", None, "sm120"),
                                                                      (KERNEL, 48.0, "xid")]


def test_parse_pack_needs_a_mapping() -> None:
    with pytest.raises(PackError, match=r"^x: expected a mapping, got list$"):
        parse_pack([], "x")


def test_hosts_without_logs_of_their_own_share_one_plan() -> None:
    # one object: the sweep builds its collector command once for them all (gpudiag.sweep.runner)
    options = LogOptions(paths=(KERNEL,))
    plans = build_plans([Host(name="a"), Host(name="b"), Host(name="c", logs=("/var/log/c.log",))], options)
    assert plans["a"] is plans["b"]
    assert plans["a"] == build_plans([Host(name="b")], options)["b"]
    assert plans["c"] != plans["a"] and plans["c"].key != plans["a"].key
