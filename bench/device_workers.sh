#!/usr/bin/env bash
# The loopback benchmark (bench/sweep_loopback.py --workers-ab) on the `device` tool's machine, which has more
# cores than a laptop: does `--workers N` speed a 1000-host sweep up where cores are there to use?
#
# Needs (carried, see shared/device-ssh.md): .dev/debs (Debian's OpenSSH packages) and .whl (asyncssh and its
# needs for the machine's Python, and gpudiag's own wheel: `pip wheel . --no-deps -w .whl`). Writes to $OUT.
#   run: bash bench/device_workers.sh [SIZE] [VARIANTS] [ROUNDS]     (default: 1000 '1,2,4' 2)
set -uo pipefail
OUT=${OUT:-$(mktemp -d)}
SIZE=${1:-1000}; VARIANTS=${2:-1,2,4}; ROUNDS=${3:-2}

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || exit 1
export PYTHONPATH=/tmp/site
# OpenSSH unpacked into a private folder (never into /); the harness finds sshd, ssh and ssh-keygen on PATH.
R=$(mktemp -d); for f in .dev/debs/*.deb; do dpkg -x "$f" "$R"; done
export LD_LIBRARY_PATH=$R/usr/lib/x86_64-linux-gnu:$R/lib/x86_64-linux-gnu
export PATH=$R/usr/sbin:$R/usr/bin:$PATH
id sshd >/dev/null 2>&1 || useradd -r -M -s /usr/sbin/nologin sshd; mkdir -p /run/sshd
ulimit -n 1048576 2>/dev/null || ulimit -n 65536
{ echo "cores: $(nproc); python: $(python3 --version); $(sshd -V 2>&1 | head -1)"; uname -r; } | tee "$OUT/machine.txt"
PYTHONUNBUFFERED=1 python3 bench/sweep_loopback.py --sizes "$SIZE" --workers-ab "$VARIANTS" --rounds "$ROUNDS" \
    2>&1 | tee "$OUT/workers_ab.txt"
