#!/usr/bin/env bash
# The second half of bench/device_capture.sh's recording, after its first run lost two parts: NVML's raw
# health answers section by section (the fabric call crashed the whole dump once), and which nvidia-smi calls
# the collector makes (the one-shot collector needs its stdin held open: bench/node_cost.py's _run_held).
#   run (carry .dev .whl): bash bench/device_capture2.sh       -> $OUT/capture2.tar.gz
set -uo pipefail
OUT=${OUT:-$(mktemp -d)}
V=/opt/torch/.venv/bin/python3
C=$(mktemp -d)/capture; mkdir -p "$C/health" "$C/cost/shim"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || exit 1
export PYTHONPATH=/tmp/site
$V bench/nvml_health_dump.py > "$C/health/nvml_health.json" 2> "$C/health/nvml_health.err"
$V -c 'import pynvml, json; print(json.dumps(sorted(n for n in dir(pynvml) if "Fabric" in n or "NVLINK" in n or "Recovery" in n.title() or "RECOVERY" in n)))' > "$C/health/binding_names.json" 2>&1
K=$C/cost
REAL=$(command -v nvidia-smi)
cat > "$K/shim/nvidia-smi" <<SH
#!/bin/sh
t=\$(date +%s%N); "$REAL" "\$@"; rc=\$?
echo "\$(( (\$(date +%s%N) - t) / 1000000 )) ms rc \$rc: \$*" >> "$K/smi_calls.txt"; exit \$rc
SH
chmod +x "$K/shim/nvidia-smi"
PATH=$K/shim:$PATH python3 - "$K" <<'PY' > "$K/runs.txt" 2>&1
import os, resource, sys, time
sys.path.insert(0, "bench")
from node_cost import _run_held
from gpudiag.collect.remote import collector_call
k = sys.argv[1]
for v in ("nvml", "smi"):
    c = collector_call(samples=1, interval_s=0.0, deadline_s=30, source="nvidia-smi" if v == "smi" else "auto",
                       context=True, topology_if={"busy_pct": 90.0, "low_power_pct": 60.0})
    for i in range(3):
        with open(k + "/smi_calls.txt", "a") as f:
            f.write("== %s run %d\n" % (v, i))
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN); t = time.monotonic()
        p = _run_held(["sh", "-c", c.command], stdin=c.stdin, env=dict(os.environ))
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(v, "run", i, "wall %.1f ms cpu %.1f ms" % (1000 * (time.monotonic() - t),
              1000 * (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)), "rc", p.returncode, len(p.stdout))
    open(k + "/doc_" + v + ".json", "wb").write(p.stdout)
PY
cat "$K/runs.txt" "$K/smi_calls.txt"; head -c 3000 "$C/health/nvml_health.json"; cat "$C/health/nvml_health.err" | tail -5
tar -C "$(dirname "$C")" -czf "$OUT/capture2.tar.gz" capture
