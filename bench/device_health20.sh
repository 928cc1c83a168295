#!/usr/bin/env bash
# Issue 20 on the `device` tool's H200 (one GPU, no NVLink, no NVSwitch): the new health readings read by the
# real collector over the real sshd through both paths, and the node's cost of the collector before and after.
#  - sweeps of the idle GPU with --save-raw, NVML path and nvidia-smi path: the raw documents show every new
#    reading (remapped rows, ECC mode, recovery action, fabric: the NVML fabric getter must not crash, NVLink:
#    one link-count field value and nothing more) and the JSON reports show no new finding;
#  - bench/node_cost.py --runs 15 with this tree's collector, then (when the tree has git history) with the
#    collector of the commit before issue 20 (d08db16), in the same run: the CPU ratio is the issue's cost.
#   run (carry .dev .whl): bash bench/device_health20.sh     -> $OUT/health20.tar.gz and a summary on stdout
set -uo pipefail
OUT=${OUT:-$(mktemp -d)}
W=$(mktemp -d)/health20; mkdir -p "$W"
source bench/device_sshd.sh

"${SWEEP[@]}" --format json --save-raw "$W/idle_nvml" > "$W/idle_nvml_sweep.json"; echo "nvml sweep exit $?"
"${SWEEP[@]}" --format json --source nvidia-smi --save-raw "$W/idle_smi" > "$W/idle_smi_sweep.json"
echo "smi sweep exit $?"
python3 - "$W" <<'PY'
import json, sys
w = sys.argv[1]
keys = ("remapped_rows_pending", "remapped_rows_failure", "ecc_mode_enabled", "ecc_uncorrected_aggregate",
        "gpu_recovery_action", "persistence_mode_enabled", "compute_mode", "mig_mode_enabled", "vbios_version",
        "inforom_image_version", "fabric_state", "fabric_health", "memory_temperature_c", "nvlinks")
for name in ("idle_nvml_sweep", "idle_smi_sweep"):
    doc = json.load(open("%s/%s.json" % (w, name)))
    for h in doc["hosts"]:
        print(name, h["status"], h["node"]["source"] if h.get("node") else None,
              [f["code"] for f in h["findings"]], h["node"].get("problems") if h.get("node") else None)
        for g in h["gpus"]:
            print("  ", {k: g.get(k) for k in keys}, "failed:", g.get("failed_readings"))
PY
COLUMNS=120 "${SWEEP[@]}" > "$W/idle_table.txt" 2>&1; tail -5 "$W/idle_table.txt"

python3 bench/node_cost.py --runs 15 > "$W/node_cost_after.txt" 2>&1; cat "$W/node_cost_after.txt"
if [ -d .before ] || git rev-parse -q --verify d08db16 >/dev/null 2>&1; then
    # .before: `git archive d08db16 agent collectors bench | tar -x -C .before`, carried where there is no history
    if [ -d .before ]; then B=$PWD/.before; else B=$(mktemp -d); git archive d08db16 agent collectors bench | tar -x -C "$B"; fi
    PYTHONPATH=$B/agent:$B/collectors:$PWD/tests python3 "$B/bench/node_cost.py" --runs 15 \
        > "$W/node_cost_before.txt" 2>&1
    cat "$W/node_cost_before.txt"
else
    echo "no git history here: compare with tests/data/h200_580.159_processes and the issue-20 capture's" \
         "node_cost_idle.txt (collector 121.2 ms CPU, --source nvidia-smi 126.4 ms on 2026-12-02)"
fi
tar -C "$(dirname "$W")" -czf "$OUT/health20.tar.gz" health20
