#!/usr/bin/env bash
# Raw captures for issue 28 on the `device` tool's H200, in one run, each swept over the real sshd with gpudiag's
# own SSH transport and the raw collector document kept (--save-raw):
#  - moe_dispatch (the case study's launch-bound MoE dispatch) at 3, 5 and 10 samples, twice over, and once
#    through nvidia-smi (no GPM: the power share decides);
#  - hold20 (a 20 GiB idle holder) at 5 and 3 samples, and context (a bare CUDA context: the holder floor);
#  - partly_busy (large GEMMs half the time, no spinning host thread) at 3, 5 and 10 samples, and through
#    nvidia-smi.
# Needs (carried): .dev/debs (OpenSSH, see shared/device-ssh.md) and the wheels of gpudiag and its needs in
# $WHL (default .whl). Run from the checkout's root:
#   WHL=DIR bash bench/device_moe.sh          -> $OUT/moe.tar.gz, and a line per sweep on stdout
set -uo pipefail
OUT=${OUT:-$(mktemp -d)}
V=/opt/torch/.venv/bin/python3; [ -x $V ] || V=python3
HERE=$(cd "$(dirname "$0")" && pwd)
C=$(mktemp -d)/moe; mkdir -p "$C"
source "$HERE/device_sshd.sh"
nvidia-smi -L; nvidia-smi --query-gpu=driver_version,power.limit,memory.total --format=csv

start() { $V "$HERE/gpu_workloads.py" "$1" > "$C/$1.log" 2>&1 & echo $!; }
sweep() {  # sweep NAME [ARGS]: the raw document as NAME_nvml.json (NAME_smi.json with --source nvidia-smi)
    local n=$1; shift
    "${SWEEP[@]}" --format json --save-raw "$C/raw" "$@" > "$C/$n.json"; echo "exit $?" >> "$C/$n.exit"
    mv "$C/raw/127.0.0.1.json" "$C/$n.raw.json"
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv > "$C/$n.apps.txt"
    $V - "$C/$n.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for h in doc["hosts"]:
    for g in h["gpus"]:
        print(sys.argv[1].rsplit("/", 1)[-1], "util", g["utilization_pct"], "power", (g["power"] or {}).get("watts"), "mem",
              g["memory_used_mib"], "sm", g.get("sm_active_pct"), "samples", len(g.get("samples") or []))
    for f in h["findings"]:
        print("  ", f["code"], f["summary"][:200])
    for p in ((h["node"] or {}).get("processes") or []):
        print("   process", p["pid"], p["cpu_pct"], p["sm_utilization_pct"], p.get("used_memory_mib"),
              " ".join(p["command"])[-30:])
PY
}
a=$(start moe_dispatch); sleep 15; head -3 "$C/moe_dispatch.log"
for r in a b; do for n in 3 5 10; do sweep moe_dispatch_s${n}$r --samples $n; done; done
sweep moe_dispatch_smi_s5 --samples 5 --source nvidia-smi
top -b -n 1 -p "$a" | tail -2 > "$C/moe_dispatch.top.txt"; cat "$C/moe_dispatch.top.txt"
kill $a; wait $a 2>/dev/null
a=$(start hold20); sleep 10; sweep hold20_s5 --samples 5; sweep hold20_s3 --samples 3; kill $a; wait $a 2>/dev/null
a=$(start context); sleep 8; sweep context_s5 --samples 5; kill $a; wait $a 2>/dev/null
a=$(start partly_busy); sleep 10; head -3 "$C/partly_busy.log"
for n in 3 5 10; do sweep partly_busy_s$n --samples $n; done
sweep partly_busy_smi_s5 --samples 5 --source nvidia-smi
kill $a; wait $a 2>/dev/null
kill "$(cat "$S/sshd.pid")"
rm -rf "$C/raw"; tar -C "$(dirname "$C")" -czf "$OUT/moe.tar.gz" moe
