"""Log files for the demo cluster's nodes, written fresh (times relative to now) into the demo's temp folder.

* ``sglang_glm5_log``: the case study's server log - SGLang serving GLM-5-NVFP4 on 8 RTX PRO 6000
  Blackwell GPUs with ``tp_size=8, ep_size=8, moe_runner_backend='flashinfer_cutlass'`` and the FlashInfer
  autotuner enabled (``disable_flashinfer_autotune=False``), ready and decoding ~225 tok/s with 64 requests,
  and not a single ``[Autotuner]`` line. Its ``server_args=`` line mentions "autotune"; it is
  configuration, not an event. Line formats as SGLang prints them (see ``agent/gpudiag/logs/packs/sglang.yaml``).
* ``spare_kernel_log``: a syslog-style kernel log of a spare H200 node: an Xid 63 (row remapping pending)
  on GPU 4 an hour ago, and an Xid 79 from four days ago that the 24 h window leaves out.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

# The GLM-5 server's arguments, in ServerArgs' own order and repr (abridged: SGLang prints ~300 of them).
SERVER_ARGS = (
    "ServerArgs(model_path='/models/GLM-5-NVFP4', tokenizer_path='/models/GLM-5-NVFP4', tokenizer_mode='auto', "
    "skip_tokenizer_init=False, load_format='auto', model_loader_extra_config='{}', trust_remote_code=True, "
    "context_length=None, is_embedding=False, enable_multimodal=None, revision=None, model_impl='auto', "
    "host='0.0.0.0', port=30000, skip_server_warmup=False, warmups=None, nccl_port=None, dtype='auto', "
    "quantization='modelopt_fp4', quantization_param_path=None, kv_cache_dtype='fp8_e4m3', "
    "mem_fraction_static=0.88, max_running_requests=64, max_queued_requests=None, max_total_tokens=None, "
    "chunked_prefill_size=8192, max_prefill_tokens=16384, schedule_policy='fcfs', "
    "schedule_conservativeness=1.0, page_size=64, hybrid_kvcache_ratio=None, swa_full_tokens_ratio=0.8, "
    "disable_hybrid_swa_memory=False, device='cuda', tp_size=8, pp_size=1, max_micro_batch_size=None, "
    "stream_interval=1, stream_output=False, random_seed=331473611, constrained_json_whitespace_pattern=None, "
    "watchdog_timeout=300, dist_timeout=None, download_dir=None, base_gpu_id=0, gpu_id_step=1, sleep_on_idle=False, "
    "log_level='debug', log_level_http=None, log_requests=False, log_requests_level=2, crash_dump_folder=None, "
    "show_time_cost=False, enable_metrics=False, enable_metrics_for_all_schedulers=False, "
    "bucket_time_to_first_token=None, decode_log_interval=40, enable_request_time_stats_logging=False, "
    "kv_events_config=None, api_key=None, served_model_name='/models/GLM-5-NVFP4', weight_version='default', "
    "chat_template=None, completion_template=None, file_storage_path='sglang_storage', enable_cache_report=False, "
    "reasoning_parser='glm45', tool_call_parser='glm45', tool_server=None, dp_size=1, "
    "load_balance_method='round_robin', "
    "dist_init_addr=None, nnodes=1, node_rank=0, json_model_override_args='{}', preferred_sampling_params=None, "
    "enable_lora=None, max_lora_rank=None, lora_target_modules=None, lora_paths=None, max_loaded_loras=None, "
    "max_loras_per_batch=8, lora_backend='triton', attention_backend='trtllm_mla', decode_attention_backend=None, "
    "prefill_attention_backend=None, sampling_backend='flashinfer', grammar_backend='xgrammar', "
    "mm_attention_backend=None, nsa_prefill_backend='trtllm', nsa_decode_backend='trtllm', "
    "speculative_algorithm=None, speculative_draft_model_path=None, speculative_num_steps=None, ep_size=8, "
    "moe_a2a_backend='none', moe_runner_backend='flashinfer_cutlass', flashinfer_mxfp4_moe_precision='default', "
    "enable_flashinfer_allreduce_fusion=False, deepep_mode='auto', ep_num_redundant_experts=0, "
    "ep_dispatch_algorithm='static', init_expert_location='trivial', enable_eplb=False, eplb_algorithm='auto', "
    "enable_expert_distribution_metrics=False, enable_hierarchical_cache=False, hicache_ratio=2.0, "
    "cuda_graph_max_bs=64, cuda_graph_bs=None, disable_cuda_graph=False, disable_cuda_graph_padding=False, "
    "enable_profile_cuda_graph=False, enable_cudagraph_gc=False, enable_nccl_nvls=False, "
    "enable_symm_mem=False, disable_flashinfer_cutlass_moe_fp4_allgather=False, enable_tokenizer_batch_encode=False, "
    "disable_outlines_disk_cache=False, disable_custom_all_reduce=False, enable_mscclpp=False, "
    "disable_overlap_schedule=False, enable_mixed_chunk=False, enable_dp_attention=False, enable_dp_lm_head=False, "
    "enable_two_batch_overlap=False, enable_torch_compile=False, torch_compile_max_bs=32, "
    "torchao_config='', enable_nan_detection=False, enable_p2p_check=False, triton_attention_reduce_in_fp32=False, "
    "triton_attention_num_kv_splits=8, num_continuous_decode_steps=1, delete_ckpt_after_loading=False, "
    "enable_memory_saver=False, allow_auto_truncate=False, enable_custom_logit_processor=False, "
    "flashinfer_mla_disable_ragged=False, disable_shared_experts_fusion=False, disable_chunked_prefix_cache=False, "
    "disable_fast_image_processor=False, enable_return_hidden_states=False, disable_flashinfer_autotune=False, "
    "warmup_steps=1, debug_tensor_dump_output_folder=None, disaggregation_mode='null')"
)


def _stamp(t: dt.datetime, rank: int | None = None) -> str:
    return f"[{t:%Y-%m-%d %H:%M:%S}{f' TP{rank}' if rank is not None else ''}]"


def sglang_glm5_lines(now: dt.datetime) -> list[str]:
    """The case-study server's log, ending at ``now``."""
    t = now - dt.timedelta(minutes=52)
    lines = [f"{_stamp(t)} server_args={SERVER_ARGS}"]

    def at(seconds: float, text: str, rank: int | None = None) -> None:
        lines.append(f"{_stamp(t + dt.timedelta(seconds=seconds), rank)} {text}")

    for rank in range(8):
        at(4, "Init torch distributed begin.", rank)
    for rank in range(8):
        at(7, "Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs. To "
              "silence this warning, specify disable_custom_all_reduce=True explicitly.", rank)
    at(9, "Init torch distributed ends. mem usage=0.58 GB", 0)
    at(10, "Load weight begin. avail mem=93.41 GB", 0)
    at(292, "Load weight end. type=GlmMoeDsaForCausalLM, dtype=torch.bfloat16, avail mem=38.12 GB, "
            "mem usage=55.29 GB.", 0)
    at(295, "KV Cache is allocated. #tokens: 412160, KV size: 27.31 GB", 0)
    at(295, "Memory pool end. avail mem=9.88 GB", 0)
    at(297, "Capture cuda graph begin. This can take up to several minutes. avail mem=9.41 GB", 0)
    at(341, "Capture cuda graph end. Time elapsed: 44.12 s. mem usage=1.38 GB. avail mem=8.03 GB.", 0)
    at(343, "max_total_num_tokens=412160, chunked_prefill_size=8192, max_prefill_tokens=16384, "
            "max_running_requests=64, context_len=202752, available_gpu_mem=8.03 GB", 0)
    at(344, "INFO:     Started server process [41873]")
    at(344, "INFO:     Waiting for application startup.")
    at(344, "INFO:     Application startup complete.")
    at(344, "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
    at(345, 'INFO:     127.0.0.1:53412 - "GET /get_model_info HTTP/1.1" 200 OK')
    at(346, "Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, #running-req: 0, "
            "#queue-req: 0,", 0)
    at(352, 'INFO:     127.0.0.1:53418 - "POST /generate HTTP/1.1" 200 OK')
    at(352, "The server is fired up and ready to roll!")
    second = 600.0
    for step in range(60):  # 64 requests decoding at ~225 tok/s, one line every 40 decode steps
        running = 64
        tokens = 51234 + step * 2560
        throughput = 225.37 + ((step * 7) % 11 - 5) * 0.83 if step < 59 else 225.37
        if step % 15 == 0:
            at(second, f"Prefill batch. #new-seq: 8, #new-token: 9872, #cached-token: 1536, token usage: "
                       f"{tokens / 412160:.2f}, #running-req: 56, #queue-req: 0,", 0)
        at(second, f"Decode batch. #running-req: {running}, #token: {tokens}, token usage: {tokens / 412160:.2f}, "
                   f"cuda graph: True, gen throughput (token/s): {throughput:.2f}, #queue-req: 0", 0)
        second += 11.4
    return lines


def spare_kernel_lines(now: dt.datetime, host: str = "spare-h200-03") -> list[str]:
    """A kernel log (syslog format) with a recent Xid 63 on the GPU at 0000:9d:00 (GPU 4) and an old Xid 79."""
    def at(t: dt.datetime, text: str) -> str:
        return f"{t:%b} {t.day:2d} {t:%H:%M:%S} {host} kernel: {text}"

    old = now - dt.timedelta(days=4, hours=3)
    recent = now - dt.timedelta(minutes=61)
    return [
        at(old, "NVRM: GPU at PCI:0000:c3:00: GPU-5f3a0c1e-6b2d-4e8a-9c71-2d4b8e6f1a93"),
        at(old, "NVRM: Xid (PCI:0000:c3:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
        at(old + dt.timedelta(minutes=9), "Linux version 6.8.0-60-generic (buildd@lcy02-amd64-098) #63-Ubuntu SMP"),
        at(recent - dt.timedelta(seconds=2), "nvidia-nvswitch: probe of 0000:05:00.0 failed with error -1"),
        at(recent, "NVRM: Xid (PCI:0000:9d:00): 63, pid=1896, name=python3, Row Remapper: New row (0x0000000000001e4f) "
                   "marked for remapping, reset gpu to activate."),
    ]


def write_demo_logs(folder: Path, now: dt.datetime | None = None) -> dict[str, tuple[object, ...]]:
    """Write the demo's logs into ``folder``; each demo host's ``logs`` (inventory-style entries). The case
    study's server log is configured nowhere: its node finds it as its SGLang process's stdout (the
    scenario's ``processes``)."""
    now = now or dt.datetime.now()
    glm5 = folder / "sglang-glm5.log"
    glm5.write_text("\n".join(sglang_glm5_lines(now)) + "\n")
    kernel = folder / "spare-kern.log"
    kernel.write_text("\n".join(spare_kernel_lines(now)) + "\n")
    return {"spare-h200-03": ({"path": str(kernel), "packs": ["xid"]},)}
