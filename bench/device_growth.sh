#!/usr/bin/env bash
# Issue 22's growth and memory figures on the `device` tool's machine (16 cores): client CPU per host of one
# `gpudiag sweep --workers auto --samples 1` at 300, 1000, 3000 and 10,000 simulated hosts of the loopback
# bed, the wall and what bounds it, peak RSS of the controller (largest process and the whole tree), and the
# projection for 10,000 real nodes, and at 1000 hosts the CLI in one process (JSON, table) against the in-process
# sweep (bench/growth.py); then the start-up CPU (bench/startup.py, 3 runs).
# About 5 minutes: one sweep per size (three more at 1000), one sample; the 10,000-host bed alone takes ~3.
#
# Needs (carried, see shared/device-ssh.md): .dev/debs (Debian's OpenSSH packages) and .whl (asyncssh and its
# needs for the machine's Python, orjson if it can travel, and gpudiag's own wheel: `pip wheel . --no-deps -w
# .whl`). Writes to $OUT.
#   run: bash bench/device_growth.sh [SIZES] [EXTRA SWEEP FLAGS]     (default: 300,1000,3000,10000 '')
set -uo pipefail
OUT=${OUT:-$(mktemp -d)}
SIZES=${1:-300,1000,3000,10000}; EXTRA=${2:-}

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || exit 1
export PYTHONPATH=/tmp/site
python3 -m compileall -q -j 0 /tmp/site >/dev/null 2>&1  # a pip install writes bytecode; --no-compile did not
# OpenSSH unpacked into a private folder (never into /); the harness finds sshd, ssh and ssh-keygen on PATH.
R=$(mktemp -d); for f in .dev/debs/*.deb; do dpkg -x "$f" "$R"; done
export LD_LIBRARY_PATH=$R/usr/lib/x86_64-linux-gnu:$R/lib/x86_64-linux-gnu
export PATH=$R/usr/sbin:$R/usr/bin:$PATH
id sshd >/dev/null 2>&1 || useradd -r -M -s /usr/sbin/nologin sshd; mkdir -p /run/sshd
ulimit -n 1048576 2>/dev/null || ulimit -n 65536
{ echo "cores: $(nproc); python: $(python3 --version); $(sshd -V 2>&1 | head -1); GNU time: $(command -v /usr/bin/time || echo none)"
  uname -r; python3 -c 'import orjson; print("orjson", orjson.__version__)' 2>&1 | tail -1; } | tee "$OUT/machine.txt"
PYTHONUNBUFFERED=1 timeout 420 python3 bench/growth.py --sizes "$SIZES" --extra "$EXTRA" 2>&1 | tee "$OUT/growth.txt"
PYTHONUNBUFFERED=1 timeout 60 python3 bench/startup.py --runs 3 2>&1 | tee "$OUT/startup.txt"
