#!/usr/bin/env bash
# Issue 32 item 5 on the `device` tool's H200: the one-shot collector's CPU against the peers' one nvidia-smi query
# (bench/node_cost.py), idle and beside a busy GPU (bench/gpu_workloads.py spin), from THIS checkout's collector
# (agent/ and collectors/ ahead of the carried wheels); then where the collector's CPU goes beside the busy GPU
# (bench/collector_phases.py) and what NVML's shutdown and systemd-detect-virt cost there.
#   run (carry .whl): bash bench/device_node_cost.sh   -> $OUT/*.txt and the same on stdout
set -u
OUT=${OUT:-$(mktemp -d)}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/agent:$PWD/collectors:/tmp/site PYTHONUNBUFFERED=1
V=/opt/torch/.venv/bin/python3
{ echo "cores: $(nproc); $(python3 --version); $(command -v python3)"; uname -r; date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } 2>&1 | tee "$OUT/machine.txt"
echo "== node cost, idle GPU"
timeout 40 python3 bench/node_cost.py --runs "${RUNS:-5}" 2>&1 | tee "$OUT/node_cost_idle.txt"
$V bench/gpu_workloads.py spin > "$OUT/spin.log" 2>&1 & spin=$!
sleep 8  # CUDA context up, the kernel resident
echo "== node cost, beside a busy GPU (bench/gpu_workloads.py spin)"
timeout 40 python3 bench/node_cost.py --runs "${RUNS:-5}" 2>&1 | tee "$OUT/node_cost_busy.txt"
if [ -n "${PHASES:-}" ]; then
    echo "== collector phases, beside the busy GPU"
    timeout 30 python3 bench/collector_phases.py --runs 10 2>&1 | tee "$OUT/phases_busy.txt"
    echo "== NVML init to shutdown vs init and out, systemd-detect-virt (median CPU ms of 10 fresh processes)"
    timeout 30 python3 - <<'PY' 2>&1 | tee "$OUT/extras_busy.txt"
import resource, shutil, statistics, subprocess
def cost(argv, n=10):
    xs = []
    for _ in range(n):
        b = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        a = resource.getrusage(resource.RUSAGE_CHILDREN)
        xs.append(1000 * (a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime))
    return statistics.median(xs)
init = "import ctypes,os;l=ctypes.CDLL('libnvidia-ml.so.1');l.nvmlInit_v2();"
for label, code in (("python3, ctypes, dlopen", "import ctypes,os;l=ctypes.CDLL('libnvidia-ml.so.1')"),
                    ("+ nvmlInit, nvmlShutdown", init + "l.nvmlShutdown()"),
                    ("+ nvmlInit, os._exit", init + "os._exit(0)"),
                    ("+ nvmlInit, nvmlShutdown, os._exit", init + "l.nvmlShutdown();os._exit(0)")):
    print("%-40s %6.1f" % (label, cost(["python3", "-I", "-S", "-c", code])))
virt = shutil.which("systemd-detect-virt")
print("%-40s %s" % ("systemd-detect-virt --vm", "%6.1f" % cost([virt, "--vm"]) if virt else "not installed"))
PY
fi
kill "$spin"; wait "$spin" 2>/dev/null
echo "files in $OUT"
