#!/usr/bin/env bash
# Issue 31 on the `device` tool's GPU machine: `gpudiag sweep --active` over real SSH from the built wheel.
#
# Needs (carried, as bench/device_sweep.sh): .dev/debs (Debian's OpenSSH packages) and .whl (asyncssh and its
# needs for the machine's Python, and gpudiag's own wheel: `pip wheel . --no-deps -w .whl`). Writes to
# $OUT/active.tgz: the sweep with and without --active (JSON, raw documents, wall times), the 80-column table,
# the Prometheus file, the HTML page and the history of two runs; the sweep while bench/gpu_workloads.py gemm
# runs (skipped); Ctrl-C in the middle of the test and what was left on the node after it; then
# bench/active_capture.py's cases and tests/gpu/test_active_gpu.py.
#   run: bash bench/device_active.sh
set -uo pipefail
OUT=${OUT:-$(mktemp -d)}
CAP=$(mktemp -d)/active; mkdir -p "$CAP"
source bench/device_sshd.sh
export PYTHONUNBUFFERED=1

nvidia-smi --query-gpu=name,driver_version,pci.bus_id,pcie.link.gen.max,pcie.link.width.max,clocks.max.sm,\
enforced.power.limit,memory.total --format=csv > "$CAP/gpu.csv"
settle() {  # until the GPUs read 0% busy (NVML's utilization averages the last second), at most 10 s
    for _ in $(seq 20); do
        [ "$(nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits | tr -d ' \n')" = 0 ] && return
        sleep 0.5
    done
}
left() {  # the test's processes, the collector's, and the GPU's compute processes
    echo "$(ps -eo args | grep -cE '<gpudiag:active>|_main\(b\[' | tr -d ' ') collector/test processes" \
         "(grep included), $(nvidia-smi --query-compute-apps=pid --format=csv,noheader | wc -l) on the GPU"
}
wall() { python3 -c "import time,sys; print(f'{time.time() - float(sys.argv[1]):.2f}')" "$1"; }

settle
for run in plain active; do
    flag=(); [ "$run" = active ] && flag=(--active)
    t=$(date +%s.%N)
    "${SWEEP[@]}" "${flag[@]}" --format json --save-raw "$CAP/raw_$run" > "$CAP/sweep_$run.json"
    echo "sweep $run: exit $?, wall $(wall "$t") s" | tee -a "$CAP/cases.txt"
    settle
done
COLUMNS=80 "${SWEEP[@]}" --active --history "$CAP/history.sqlite" --prom-file "$CAP/sweep.prom" \
    > "$CAP/sweep_active.txt"; echo "table: exit $?" | tee -a "$CAP/cases.txt"; settle
"${SWEEP[@]}" --active --format html -o "$CAP/sweep_active.html" --history "$CAP/history.sqlite" > /dev/null
settle
python3 -m gpudiag history "$CAP/history.sqlite" --host 127.0.0.1 --gpu 0 > "$CAP/history.txt" 2>&1

python3 bench/gpu_workloads.py gemm & W=$!
sleep 8
"${SWEEP[@]}" --active --format json > "$CAP/sweep_busy.json"; echo "busy: exit $?" | tee -a "$CAP/cases.txt"
kill "$W"; wait "$W" 2>/dev/null; settle

# Ctrl-C in the middle of the test (job control on: a background job's SIGINT is not ignored).
set -m
"${SWEEP[@]}" --active --format json > "$CAP/sweep_ctrlc.json" 2> "$CAP/sweep_ctrlc.err" & G=$!
sleep 5.5
echo "before Ctrl-C: $(left)" | tee -a "$CAP/cases.txt"
kill -INT "$G"; wait "$G"; echo "ctrl-c: exit $?; right after: $(left)" | tee -a "$CAP/cases.txt"
set +m
sleep 2; echo "2 s later: $(left)" | tee -a "$CAP/cases.txt"
settle

python3 bench/active_capture.py "$CAP/capture"
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_active_gpu.py > "$CAP/pytest_gpu.txt" 2>&1
tail -3 "$CAP/pytest_gpu.txt"
kill "$(cat "$S/sshd.pid")"
tar -C "$(dirname "$CAP")" -czf "$OUT/active.tgz" active
