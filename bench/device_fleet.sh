#!/usr/bin/env bash
# Issue 32 on the `device` tool's machine (16 cores, an H200): the fleet of bench/fleet_tree.py (direct and through a
# two-level ClusterShell tree; clush flat and tree at --peers-at sizes), then the node's collector against the
# peers' query (bench/node_cost.py), idle and beside a busy GPU.
# Needs (carried, see shared/device-ssh.md): .dev/debs (Debian's OpenSSH packages) and .whl (gpudiag's wheel,
# clustershell, asyncssh and their needs for the machine's Python). Writes to $OUT.
#   bash bench/device_fleet.sh                      everything: the fleet (1000, 10,000, 3000) and the node's cost
#   bash bench/device_fleet.sh fleet ARGS...        the fleet step only, with fleet_tree.py's ARGS
#   bash bench/device_fleet.sh node                 the node's cost only (about 80 s)
# The device runs a command for at most 600 s: split the fleet into calls of one size and run each, e.g.
#   fleet --sizes 1000 --peers-at 1000              (~100 s)
#   fleet --sizes 3000 --runs direct,tree           (~150 s)
#   fleet --sizes 10000 --runs direct               (each of these two about 200-350 s)
#   fleet --sizes 10000 --runs tree
# Each call appends its runs to $OUT/fleet_rows.jsonl; `python3 bench/fleet_tree.py --summary FILES...` prints the
# table and ratios of all of them (here, from the files the calls brought back). FLEET_S bounds the fleet step
# (default 540 s: it then reports the sizes that finished).
set -u
OUT=${OUT:-$(mktemp -d)}
step=${1:-all}; [ $# -gt 0 ] && shift
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
python3 -m compileall -q -j 0 /tmp/site >/dev/null 2>&1
R=$(mktemp -d); for f in .dev/debs/*.deb; do dpkg -x "$f" "$R"; done
export LD_LIBRARY_PATH=$R/usr/lib/x86_64-linux-gnu:$R/lib/x86_64-linux-gnu
export PATH=$R/usr/sbin:$R/usr/bin:$PATH
id sshd >/dev/null 2>&1 || useradd -r -M -s /usr/sbin/nologin sshd; mkdir -p /run/sshd
ulimit -n 1048576 2>/dev/null || ulimit -n 65536
{ echo "cores: $(nproc); $(python3 --version); $(command -v python3); $(ssh -V 2>&1); open files: $(ulimit -n)"
  uname -r; date -u; } 2>&1 | tee -a "$OUT/machine.txt"
if [ "$step" = all ] || [ "$step" = fleet ]; then
    [ "$step" = all ] && set -- --sizes 1000,10000,3000 --peers-at 1000
    timeout -s INT "${FLEET_S:-540}" python3 bench/fleet_tree.py "$@" --save "$OUT/fleet_rows.jsonl" 2>&1 \
        | tee -a "$OUT/fleet_tree.txt"
fi
if [ "$step" = all ] || [ "$step" = node ]; then
    timeout 25 python3 bench/node_cost.py --runs 5 2>&1 | tee "$OUT/node_cost_idle.txt"
    /opt/torch/.venv/bin/python3 bench/gpu_workloads.py spin > "$OUT/spin.log" 2>&1 & spin=$!
    sleep 8  # CUDA context up, the kernel resident
    timeout 25 python3 bench/node_cost.py --runs 5 2>&1 | tee "$OUT/node_cost_busy.txt"
    kill "$spin"; wait "$spin" 2>/dev/null
fi
