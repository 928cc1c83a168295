"""What a hostile webhook receiver costs the controller (issue 23 #1): one ``notify.send`` per receiver kind of
``tests/webhook.py`` (endless body, a byte every 2 s, more than 100 headers, a reset, an accept that never
comes), each in a child process that is killed after ``--cap`` seconds. Prints per kind: the wall seconds,
the child's peak RSS (``wait4``) and what ``send`` returned.

    python3 bench/notify_receivers.py [--cap 30] [KIND ...]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the receivers (tests/webhook.py)

from webhook import HOSTILE, hostile_webhook  # noqa: E402

CHILD = """
import sys
from gpudiag.audit.notify import send, targets
print(send({"schema": "gpudiag.audit.changes/1"}, targets((sys.argv[1],), None)), flush=True)
"""


def one(kind: str, cap_s: float) -> str:
    with hostile_webhook(kind) as receiver:
        url = receiver.url
        began = time.monotonic()
        child = subprocess.Popen([sys.executable, "-c", CHILD, url], stdout=subprocess.PIPE, text=True)
        killer = threading.Timer(cap_s, os.kill, (child.pid, signal.SIGKILL))
        killer.start()
        assert child.stdout is not None
        out = child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)  # the child's own peak RSS, which Popen.wait does not give
        killer.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - began
        ended = f"killed after {cap_s:g} s" if child.returncode == -signal.SIGKILL else "returned"
    rss = f"{usage.ru_maxrss / 1024:.0f} MiB"
    return f"{kind:13s} {wall:6.1f} s  peak RSS {rss:>8s}  {ended}: {out.strip()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=float, default=30.0, help="kill the child after this many seconds")
    parser.add_argument("kinds", nargs="*", default=list(HOSTILE))
    args = parser.parse_args()
    for kind in args.kinds:
        print(one(kind, args.cap), flush=True)


if __name__ == "__main__":
    main()
