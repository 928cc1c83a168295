#!/usr/bin/env bash
# Raw captures for issues 20-22 on the `device` tool's H200, with today's gpudiag, in one run:
#  - health readings (issue 20): every --query-gpu field the driver knows, nvidia-smi -q and its sections,
#    nvlink -s/-e/-c, topo -m, fabric manager, and NVML's raw answers (bench/nvml_health_dump.py);
#  - culprits (issue 21): a spinner beside a 60 GiB idle holder, a 100 GiB idle holder, eager decode at
#    3, 5 and 10 samples, a world-size-1 NCCL job's RAS answer (bench/nccl_ras_probe.py), each swept over
#    the real sshd with the raw collector document kept;
#  - node cost (issue 22): which nvidia-smi calls the collector makes (a logging shim on PATH) and
#    bench/node_cost.py on the idle GPU.
#   run (carry .dev .whl): bash bench/device_capture.sh       -> $OUT/capture.tar.gz and a log on stdout
set -uo pipefail
OUT=${OUT:-$(mktemp -d)}
V=/opt/torch/.venv/bin/python3
C=$(mktemp -d)/capture; mkdir -p "$C/health" "$C/culprit" "$C/cost"
source bench/device_sshd.sh

# ---- health readings
H=$C/health
nvidia-smi --help-query-gpu > "$H/help-query-gpu.txt"
nvidia-smi -q > "$H/q.txt"
for d in MEMORY ECC TEMPERATURE POWER CLOCK PERFORMANCE PAGE_RETIREMENT ROW_REMAPPER; do
    nvidia-smi -q -d "$d" > "$H/q_$d.txt" 2>&1
done
for a in "nvlink -s" "nvlink -e" "nvlink -c" "nvlink --status" "topo -m" "-q -x"; do
    f=$(echo "$a" | tr ' -' '__'); timeout 20 nvidia-smi $a > "$H/smi$f.txt" 2>&1; echo "exit $?" >> "$H/smi$f.txt"
done
python3 - "$H" <<'PY'
import re, subprocess, sys
h = sys.argv[1]
names = []
for line in open(h + "/help-query-gpu.txt"):
    if line.startswith('"'):
        names.append(re.findall(r'"([^"]+)"', line)[0])
with open(h + "/every_field.csv", "w") as out:
    for n in names:
        p = subprocess.run(["nvidia-smi", "--query-gpu=" + n, "--format=csv,noheader"], capture_output=True, text=True)
        out.write("%s\t%d\t%s\n" % (n, p.returncode, (p.stdout or p.stderr).strip().replace("\n", " | ")))
PY
{ systemctl is-active nvidia-fabricmanager; ls -l /usr/bin/nv-fabricmanager /usr/bin/nvidia-fabricmanager;
  pgrep -a fabric; ls /dev/nvidia*; ls /proc/driver/nvidia/gpus; cat /proc/driver/nvidia/version; } > "$H/fabricmanager.txt" 2>&1
$V bench/nvml_health_dump.py > "$H/nvml_health.json" 2> "$H/nvml_health.err"
$V -c 'import torch, pynvml; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version(), pynvml.__version__ if hasattr(pynvml,"__version__") else "")' > "$H/versions.txt" 2>&1
"${SWEEP[@]}" --format json --save-raw "$H/idle_nvml" > "$H/idle.json"
"${SWEEP[@]}" --format json --source nvidia-smi --save-raw "$H/idle_smi" > "$H/idle_smi.json"
echo "health done"; head -c 600 "$H/nvml_health.err"

# ---- culprits
U=$C/culprit
start() { $V bench/gpu_workloads.py "$1" > "$U/$1.log" 2>&1 & echo $!; }
sweep() {  # sweep NAME [ARGS]
    local n=$1; shift
    "${SWEEP[@]}" --format json --save-raw "$U/$n" "$@" > "$U/$n.json"; echo "exit $?" >> "$U/$n.exit"
    COLUMNS=80 "${SWEEP[@]}" "$@" > "$U/$n.txt" 2>&1
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv > "$U/$n.apps.txt"
    $V - "$U/$n.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for h in doc["hosts"]:
    for g in h["gpus"]:
        print(sys.argv[1].rsplit("/", 1)[-1], "util", g["utilization_pct"], "power", (g["power"] or {}).get("watts"), "mem", g["memory_used_mib"])
    for f in h["findings"]:
        print("  ", f["code"], f["summary"][:300])
    for p in ((h["node"] or {}).get("processes") or []):
        print("   process", p["pid"], p["cpu_pct"], p["sm_utilization_pct"], p.get("used_memory_mib"), " ".join(p["command"])[:60])
PY
}
a=$(start spin); b=$(start hold60); sleep 12
sweep two_processes; sweep two_processes_s10 --samples 10
kill $a $b; wait $a $b 2>/dev/null
a=$(start hold100); sleep 10; sweep hold100; sweep hold100_s3 --samples 3; kill $a; wait $a 2>/dev/null
a=$(start eager_decode); sleep 10
for n in 3 5 10; do sweep eager_decode_s$n --samples $n; done
kill $a; wait $a 2>/dev/null
a=$(start nccl1); sleep 15
cat "$U/nccl1.log" | head -5
timeout 60 python3 bench/nccl_ras_probe.py 28028 > "$U/ras_28028.json" 2>&1
ss -ltnp 2>/dev/null | grep -i python > "$U/nccl1_listen.txt"
sweep nccl1
kill $a; wait $a 2>/dev/null
NCCL_RAS_ENABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=RAS,INIT $V bench/gpu_workloads.py nccl1 > "$U/nccl1_debug.log" 2>&1 & a=$!
sleep 15; timeout 60 python3 bench/nccl_ras_probe.py 28028 > "$U/ras_28028_debug.json" 2>&1
ss -ltnp 2>/dev/null > "$U/listen_all.txt"; kill $a; wait $a 2>/dev/null
head -c 1500 "$U/ras_28028.json"; echo
echo "culprit done"

# ---- node cost, and which nvidia-smi calls the collector makes
K=$C/cost; mkdir -p "$K/shim"
REAL=$(command -v nvidia-smi)
cat > "$K/shim/nvidia-smi" <<SH
#!/bin/sh
t=\$(date +%s%N); "$REAL" "\$@"; rc=\$?
echo "\$(( (\$(date +%s%N) - t) / 1000000 )) ms rc \$rc: \$*" >> "$K/smi_calls.txt"; exit \$rc
SH
chmod +x "$K/shim/nvidia-smi"
for v in nvml smi; do
    echo "== sweep --samples 1 ($v)" >> "$K/smi_calls.txt"
    extra=(); [ $v = smi ] && extra=(--source nvidia-smi)
    "${SSH[@]}" "true" >/dev/null
    PATH=$K/shim:$PATH python3 - "$K" $v <<'PY'
import os, subprocess, sys, time, resource
from gpudiag.collect.remote import collector_call
k, v = sys.argv[1], sys.argv[2]
c = collector_call(samples=1, interval_s=0.0, deadline_s=30, source="nvidia-smi" if v == "smi" else "auto",
                   context=True, topology_if={"busy_pct": 90.0, "low_power_pct": 60.0})
for i in range(3):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN); t = time.monotonic()
    p = subprocess.run(["sh", "-c", c.command], input=c.stdin, capture_output=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(v, "run", i, "wall %.1f ms cpu %.1f ms" % (1000 * (time.monotonic() - t), 1000 * (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)), "rc", p.returncode)
open(k + "/doc_" + v + ".json", "wb").write(p.stdout)
PY
done >> "$K/runs.txt" 2>&1
cat "$K/runs.txt" "$K/smi_calls.txt"
python3 bench/node_cost.py --runs 15 > "$K/node_cost_idle.txt" 2>&1; cat "$K/node_cost_idle.txt"
kill "$(cat "$S/sshd.pid")"
tar -C "$(dirname "$C")" -czf "$OUT/capture.tar.gz" capture
