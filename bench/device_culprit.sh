#!/usr/bin/env bash
# Issue 21 with its own code on the device's H200, over the real sshd (about 2 minutes): a spinner beside a
# 60 GiB holder (BUSY_LOW_POWER must name the spinner), a 100 GiB holder (GPU_HELD_IDLE), eager decode at 3
# samples (HOST_BOUND), and the world-size-1 NCCL job read by the collector's own RAS reader, at the default
# port and at the port NCCL_RAS_ADDR names (28031), with the raw collector documents.
#   run (carry .dev .whl): bash bench/device_culprit.sh   -> $OUT/culprit21.tar.gz and a summary on stdout
set -uo pipefail
OUT=${OUT:-$(mktemp -d)}
V=/opt/torch/.venv/bin/python3
U=$(mktemp -d)/culprit21; mkdir -p "$U"
source bench/device_sshd.sh
start() { local n=$1; shift; env "$@" $V bench/gpu_workloads.py "$n" > "$U/$n.log" 2>&1 & echo $!; }
sweep() {  # sweep NAME [ARGS]
    local n=$1; shift
    "${SWEEP[@]}" --format json --save-raw "$U/$n" "$@" > "$U/$n.json"; echo "exit $?" >> "$U/$n.exit"
    COLUMNS=100 "${SWEEP[@]}" "$@" > "$U/$n.txt" 2>&1
    python3 - "$U/$n.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for h in doc["hosts"]:
    for f in h["findings"]:
        e = f["evidence"]
        print(sys.argv[1].rsplit("/", 1)[-1], f["code"], e.get("process_chosen_by"), e.get("pid"), f["summary"][-260:])
    ras = (h["node"] or {}).get("nccl_ras")
    if ras:
        print("   nccl_ras", {k: ras[k] for k in ("port", "asked_from", "answered", "error", "answer_format", "ranks", "nodes")})
PY
}
a=$(start spin); b=$(start hold60); sleep 12; sweep two_processes; kill $a $b; wait $a $b 2>/dev/null
a=$(start hold100); sleep 10; sweep hold100 --samples 3; kill $a; wait $a 2>/dev/null
a=$(start eager_decode); sleep 10; sweep eager_decode_s3 --samples 3; kill $a; wait $a 2>/dev/null
a=$(start nccl1); sleep 15; sweep nccl1; kill $a; wait $a 2>/dev/null
a=$(start nccl1 NCCL_RAS_ADDR=127.0.0.1:28031 MASTER_PORT=29512); sleep 15; sweep nccl1_addr; kill $a; wait $a 2>/dev/null
kill "$(cat "$S/sshd.pid")"
tar -C "$(dirname "$U")" -czf "$OUT/culprit21.tar.gz" culprit21
