#!/usr/bin/env bash
# Issue 32 on the `device` tool's machine (16 cores, an H200): the fleet of bench/fleet_tree.py (1000, 10,000 and
# 3000 hosts, direct and through a two-level ClusterShell tree; clush flat and tree at 1000), then the node's
# collector against the peers' query (bench/node_cost.py), idle and beside a busy GPU.
# Needs (carried, see shared/device-ssh.md): .dev/debs (Debian's OpenSSH packages) and .whl (gpudiag's wheel,
# clustershell, asyncssh and their needs for the machine's Python). Writes to $OUT. FLEET_S bounds the fleet step
# (default 245 s: it reports the sizes that finished); the 10,000-host size needs about 200 s more than that.
# SIZES and PEERS pick the fleet sizes and where clush runs too; NODE_COST=0 skips the node's side, so that the
# whole bench fits in calls of the device's 600 s limit:
#   run: bash bench/device_fleet.sh
#   run: FLEET_S=560 SIZES=10000 PEERS=0 NODE_COST=0 bash bench/device_fleet.sh
set -u
OUT=${OUT:-$(mktemp -d)}
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
  uname -r; date -u; } 2>&1 | tee "$OUT/machine.txt"
timeout -s INT "${FLEET_S:-245}" python3 bench/fleet_tree.py --sizes "${SIZES:-1000,10000,3000}" --peers-at "${PEERS:-1000}" 2>&1 \
    | tee "$OUT/fleet_tree.txt"
[ "${NODE_COST:-1}" = 0 ] && exit 0
timeout 25 python3 bench/node_cost.py --runs 5 2>&1 | tee "$OUT/node_cost_idle.txt"
/opt/torch/.venv/bin/python3 bench/gpu_workloads.py spin > "$OUT/spin.log" 2>&1 & spin=$!
sleep 8  # CUDA context up, the kernel resident
timeout 25 python3 bench/node_cost.py --runs 5 2>&1 | tee "$OUT/node_cost_busy.txt"
kill "$spin"; wait "$spin" 2>/dev/null
