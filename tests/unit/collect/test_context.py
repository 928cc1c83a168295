

def test_a_single_gpu_node_has_no_pairs_and_nothing_missing() -> None:
    """The real one-H200 capture (shared/captures/h200-580.159/topo.txt, copied in tests/data)."""
    from pathlib import Path

    from gpudiag.collect.parse_logs import parse_context
    from gpudiag.report.evidence import context_line

    topo = (Path(__file__).resolve().parents[2] / "data" / "h200_580.159_fields" / "topo.txt").read_text()
    context = parse_context({"topology": {"exit": 0, "stdout": topo, "stderr": ""}, "hypervisor_flag": True})
    assert context is not None and context.links == () and context.topology_error is None
    assert context_line(context, 1) == "1 GPU (no GPU pairs); a virtual machine (the CPU has the hypervisor flag)"
