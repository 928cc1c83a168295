#!/usr/bin/env bash
# Sweep a real GPU through gpudiag's real SSH path, once per workload, on the `device` tool's machine.
#
# Needs (carried, see shared/device-ssh.md): .dev/debs (Debian's OpenSSH packages) and .whl (asyncssh and
# its needs for the machine's Python, and gpudiag's own wheel: `pip wheel . --no-deps -w .whl`). Writes to $OUT: captures.tar.gz (for each workload: the raw
# collector document read with the plain ssh client, gpudiag's JSON report and its table; plus the plain
# nvidia-smi, its --help-query-gpu and nvidia-smi -q of the machine) and a log.
#   run: bash bench/device_sweep.sh [WORKLOAD ...]      (default: every workload of gpu_workloads.py)
# Then (issue 12): an SGLang look-alike (bench/fake_server: the eager decode under `python3 -m
# sglang.launch_server`, stdout to a file) swept with no logs configured, as root and as a non-root user;
# and bench/node_cost.py while it runs and while the GPU is idle. EXTRAS=0 skips the watch and tests/gpu runs.
set -uo pipefail
OUT=${OUT:-$(mktemp -d)}
WORKLOADS=${*:-idle spin tiny_graph gemv copy small_gemm gemm eager_decode}
EXTRAS=${EXTRAS:-1}
CAP=$(mktemp -d)/captures; mkdir -p "$CAP"

source bench/device_sshd.sh

"${SSH[@]}" 'command -v python3 nvidia-smi; python3 --version; nvidia-smi -L' 2>&1 | tee "$CAP/node.txt"
nvidia-smi > "$CAP/nvidia-smi.txt"; nvidia-smi --help-query-gpu > "$CAP/help-query-gpu.txt"
nvidia-smi -q > "$CAP/nvidia-smi-q.txt"

command -v dcgmi > "$CAP/dcgm.txt" 2>&1 && timeout 20 dcgmi dmon -e 1002,1003,1004,1005 -c 3 >> "$CAP/dcgm.txt" 2>&1
echo "dcgmi exit $?" >> "$CAP/dcgm.txt"

for w in $WORKLOADS; do
    echo "== $w"
    python3 bench/gpu_workloads.py "$w" & pid=$!
    sleep 6  # allocation, warm-up, clocks settle
    d="$CAP/$w"; mkdir -p "$d"
    # Each path, through gpudiag's own SSH transport, its raw document kept: NVML (auto) and nvidia-smi.
    "${SWEEP[@]}" --format json --save-raw "$d/nvml" > "$d/sweep.json"; echo "exit $?" > "$d/sweep.exit"
    "${SWEEP[@]}" --format json --source nvidia-smi --save-raw "$d/smi" > "$d/sweep_smi.json"
    "${SWEEP[@]}" --samples 3 --interval 0.3 > "$d/sweep.txt"
    case $EXTRAS$w in 1spin|1gemm)
        python3 -m gpudiag local --samples 3 --interval 0.3 > "$d/local.txt"
        # watch over the same SSH: one collector process answers the three refreshes (NVML kept loaded)
        WATCH=("${SWEEP[@]}"); WATCH[3]=watch
        "${WATCH[@]}" --count 3 --every 0.5 --samples 2 --interval 0.3 --plain > "$d/watch.txt" 2>&1
        echo "watch exit $?" >> "$d/watch.txt"; grep -E "^refresh|BUSY|exit" "$d/watch.txt"
        GPUDIAG_PARITY_OUT="$d/parity.json" python3 -m pytest -q -p no:cacheprovider tests/gpu > "$d/pytest_gpu.txt" 2>&1
        tail -3 "$d/pytest_gpu.txt";;
    esac
    python3 - "$d/sweep.json" "$d/sweep_smi.json" <<'EOF2'
import json, sys
for path in sys.argv[1:]:
    doc = json.load(open(path))
    for h in doc["hosts"]:
        node = h["node"] or {}
        print(path.rsplit("/", 1)[-1], h["status"], h["error"], "source", node.get("source"))
        for g in h["gpus"]:
            raw = (g["power"] or {}).get("readings", {})
            print(f"  util {g['utilization_pct']} mem {g['memory_utilization_pct']} power {raw.get('power_draw')} "
                  f"instant {raw.get('power_draw_instant')} energy {raw.get('energy_counter')} /{g['enforced_power_limit_w']} "
                  f"shown {g['power']} sm {g['sm_clock_mhz']}/{g['max_sm_clock_mhz']} "
                  f"reasons {g['clock_event_reasons']} failed {g['failed_readings']}")
        print("  findings", [f["code"] for f in h["findings"]], "exit", doc["summary"]["exit_code"])
        for f in h["findings"]:
            print("   ", f["code"], f["summary"][:400])
        for p in (node.get("processes") or []):
            print("   process", p["gpu"], p["pid"], p["user"], p["cpu_pct"], p["sm_utilization_pct"], p["job_id"],
                  " ".join(p["command"])[:80], p["unreadable"])
        for log in (node.get("logs") or []):
            print("   log", log["path"], log["status"], log.get("found_from"), [m["signature"] for m in log["matches"]])
EOF2
    kill $pid; wait $pid 2>/dev/null
done

# An inference server the packs know, its log found by itself (no logs configured): as root, then as a user.
d="$CAP/server"; mkdir -p "$d"
id alice >/dev/null 2>&1 || useradd -m -s /bin/sh alice
usermod -p '*' alice  # not locked (sshd refuses a locked account), no password: the key logs in
mkdir -p ~alice/.ssh && cp /root/.ssh/authorized_keys ~alice/.ssh/ && chown -R alice ~alice/.ssh
PYTHONPATH=bench/fake_server:$PYTHONPATH python3 -m sglang.launch_server --model-path /models/demo --tp-size 1 \
    > /tmp/sglang_server.log 2>&1 & pid=$!
sleep 8
"${SWEEP[@]}" --format json --save-raw "$d/nvml" > "$d/sweep.json"
"${SWEEP[@]}" --samples 3 --interval 0.3 > "$d/sweep.txt"
USER_SWEEP=("${SWEEP[@]}"); USER_SWEEP[8]=alice
"${USER_SWEEP[@]}" --format json --save-raw "$d/as_alice" > "$d/sweep_alice.json"
COLUMNS=80 "${USER_SWEEP[@]}" > "$d/sweep_alice.txt"
cat "$d/sweep.txt" "$d/sweep_alice.txt"
python3 bench/node_cost.py --runs 15 > "$d/node_cost_busy.txt" 2>&1; cat "$d/node_cost_busy.txt"
kill $pid; wait $pid 2>/dev/null
sleep 2
python3 bench/node_cost.py --runs 15 > "$d/node_cost_idle.txt" 2>&1; cat "$d/node_cost_idle.txt"
kill "$(cat "$S/sshd.pid")"
tar -C "$(dirname "$CAP")" -czf "$OUT/captures.tar.gz" captures
