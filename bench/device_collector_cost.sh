#!/usr/bin/env bash
# Issue 22, the node side, on the `device` tool's H200: what the one-shot collector costs against the peers'
# one nvidia-smi query (targets: collector <= 2x, a watch round <= 1.2x), on the idle GPU and while
# `bench/gpu_workloads.py spin` runs (a process on the GPU: processes, /proc and GPM are read too), and
# where the collector's own CPU goes (bench/collector_phases.py, with this interpreter's bytecode and as a
# node with another python3 compiles it; bench/nvml_call_cost.py: what NVML itself costs per call).
#   run (carry .dev .whl): bash bench/device_collector_cost.sh   -> $OUT/*.txt and the same on stdout
set -uo pipefail
OUT=${OUT:-$(mktemp -d)}
V=/opt/torch/.venv/bin/python3
source bench/device_sshd.sh  # gpudiag from the carried wheel on PYTHONPATH (its sshd is not needed here)
kill "$(cat "$S/sshd.pid")" 2>/dev/null
run() {  # run NAME COMMAND...: its output to $OUT/NAME.txt and stdout
    echo "== $1"; local name=$1; shift
    "$@" > "$OUT/$name.txt" 2>&1; echo "exit $?" >> "$OUT/$name.txt"; cat "$OUT/$name.txt"
}
{ command -v python3; python3 -c 'import sys; print(sys.version)'; nvidia-smi --version | head -3;
  # one nvidia-smi call for the readings and the processes? (would spare the nvidia-smi path its second call)
  nvidia-smi --query-gpu=index,uuid --query-compute-apps=pid,used_memory --format=csv,noheader; echo "exit $?"
} > "$OUT/node.txt" 2>&1; cat "$OUT/node.txt"

run node_cost_idle python3 bench/node_cost.py --runs 15
run nvml_call_cost $V bench/nvml_call_cost.py --rounds 20  # NVML's own floor, and with NO_ATTACH
run phases_idle python3 bench/collector_phases.py --runs 30
run phases_idle_another_python python3 bench/collector_phases.py --runs 15 --another-python

$V bench/gpu_workloads.py spin > "$OUT/spin.log" 2>&1 & spin=$!
sleep 12  # CUDA context up, the kernel resident
nvidia-smi --query-compute-apps=pid,used_memory --format=csv > "$OUT/spin_apps.txt" 2>&1
run node_cost_spin python3 bench/node_cost.py --runs 15
run phases_spin python3 bench/collector_phases.py --runs 20
kill "$spin"; wait "$spin" 2>/dev/null
echo "files in $OUT"
