"""Node-side DCGM profiling reader (``gpudiag_node.dcgm``; runs on the node's python3).

Where DCGM is installed and its host engine runs, ``dcgmi dmon`` gives what utilization.gpu cannot: the
share of SMs actually active (1002), SM occupancy (1003), tensor-pipe activity (1004) and DRAM activity
(1005). They turn "100% busy at low power" into "one SM in a hundred is working". Never required: when
dcgmi is missing or refuses (no host engine, no profiling module, e.g. on many RTX PRO 6000 boards), the
reason is returned and the sweep goes on. Fields: https://docs.nvidia.com/datacenter/dcgm/latest/
user-guide/feature-overview.html (profiling metrics).
"""

from . import proc

FIELD_IDS = "1002,1003,1004,1005"


def collect(samples, interval_s, timeout_s):
    """{"available": True, "stdout": dmon's text} or {"available": False, "why": a sentence}."""
    dcgmi = proc.find_tool("dcgmi")
    if dcgmi is None:
        return {"available": False, "why": "dcgmi is not installed"}
    delay_ms = str(max(100, int(interval_s * 1000)))
    argv = [dcgmi, "dmon", "-e", FIELD_IDS, "-c", str(max(1, samples)), "-d", delay_ms]
    code, out, err = proc.run(argv, timeout_s)
    if code == 124:
        return {"available": False, "why": "dcgmi dmon did not answer within %.0f s" % timeout_s}
    if code in (126, 127) and not out:
        return {"available": False, "why": "dcgmi could not run: %s" % err}
    text = out + err
    has_rows = any(line.split()[:1] == ["GPU"] for line in text.splitlines())
    if code != 0 or not has_rows:
        first = next((line.strip() for line in text.splitlines() if line.strip()), "no output")
        return {"available": False, "why": "dcgmi dmon exit %d: %s" % (code, first[:300])}
    return {"available": True, "stdout": text}
