"""Running a command on the node, for every node-side module (``gpudiag_node.proc``): bounded output,
a bound on each call, failures as exit codes. Standard library only, Python 3.6+.

A call that outlives its bound (a wedged driver leaves nvidia-smi waiting in the kernel for ever) is killed,
with everything it started, and recorded in :data:`HUNG`, so the document can say which call hung and for how
long while the rest of the collection still answers within the host's deadline."""

import _thread
import os
import time

# subprocess (with signal, threading, selectors, locale...) and signal are imported where a command runs: a
# collector that reads NVML starts no command at all, and importing them costs a node more than NVML does.

MAX_TEXT = 64 * 1024  # bound every captured stream: a runaway tool must not flood the channel
TIMED_OUT = 124  # the exit status of a call killed at its bound, as `timeout` reports one
SETTLE_S = 2.0  # once killed: how long its pipes are awaited (a child in the kernel may not die at once)

# The calls that were killed at their bound, in order: {"call": "nvidia-smi --query-gpu", "after_s": 9.2}.
# The collector moves them into its document (collect_round); threads append, which is atomic in CPython.
HUNG = []


def call_name(argv):
    """``nvidia-smi --query-gpu`` for ``[/usr/bin/nvidia-smi, --query-gpu=..., ...]``: the tool and what it
    was asked, without the node's paths or the field list."""
    words = [os.path.basename(argv[0])] if argv else []
    if len(argv) > 1:
        words.append(argv[1].split("=", 1)[0])
    return " ".join(words)


def _descendants(pid):
    """Every process below ``pid`` (through /proc; empty where there is none), children before theirs."""
    children = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read().decode("ascii", "replace")
            ppid = int(stat.rsplit(")", 1)[1].split()[1])  # the name in () may hold spaces
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(0), ()):
            found.append(child)
            queue.append(child)
    return found


def _kill_tree(pid):
    """SIGKILL ``pid`` and what it started. Not a process group of its own: the call stays in the collector's
    group, so the group kills that end the collector (`timeout`, a closed channel) still reach it."""
    import signal

    for target in [pid] + _descendants(pid):  # listed before any dies: an orphan is re-parented to init
        try:
            os.kill(target, signal.SIGKILL)
        except OSError:
            pass


def run(argv, timeout_s, limit=MAX_TEXT, raw_stdout=False):
    """Run argv with LC_ALL=C and no stdin; (exit code, stdout, stderr) as text cut to ``limit`` bytes
    (``raw_stdout``: stdout as the bytes it printed, whole: the log scan keeps only its tail itself).
    Exit 127 when it cannot be found, 126 when it cannot start, 124 (:data:`TIMED_OUT`) when it outlived
    ``timeout_s``: then it and its children are killed and the call is added to :data:`HUNG`."""
    import subprocess

    empty = b"" if raw_stdout else ""
    try:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 env=dict(os.environ, LC_ALL="C"))
    except FileNotFoundError as exc:
        return 127, empty, str(exc)
    except OSError as exc:
        return 126, empty, str(exc)
    started = time.monotonic()
    try:
        out, err = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_tree(child.pid)
        try:
            child.communicate(timeout=SETTLE_S)
        except subprocess.TimeoutExpired:  # still holding its pipes (stuck in the kernel): leave it
            for stream in (child.stdout, child.stderr):
                stream.close()
        HUNG.append({"call": call_name(argv), "after_s": round(time.monotonic() - started, 1)})
        return TIMED_OUT, empty, "no answer in %g s: killed" % round(timeout_s, 1)
    out = out if raw_stdout else out[:limit].decode("utf-8", "replace")
    return child.returncode, out, err[:limit].decode("utf-8", "replace")


def find_tool(name, extra_dirs=()):
    """``name`` on PATH, else in ``extra_dirs`` (shutil.which without importing shutil), or None."""
    folders = [f for f in os.environ.get("PATH", os.defpath).split(os.pathsep) if f]
    for folder in folders + list(extra_dirs):
        candidate = os.path.join(folder, name)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


class Thread(object):
    """A daemon thread with what the collector asks of ``threading.Thread``: start, join with a timeout,
    is_alive. On ``_thread`` alone, as threading's own threads are: the threading module (and functools and
    collections, which it imports) costs a collector 3-5 ms that needs nothing else of it."""

    def __init__(self, target):
        self._target = target
        self._running = _thread.allocate_lock()

    def start(self):
        self._running.acquire()
        _thread.start_new_thread(self._run, ())
        return self

    def _run(self):
        try:
            self._target()
        finally:
            self._running.release()

    def join(self, timeout=None):
        if self._running.acquire(True, -1 if timeout is None else max(0.0, timeout)):
            self._running.release()

    def is_alive(self):
        if self._running.acquire(False):
            self._running.release()
            return False
        return True
