"""Running a command on the node, for every node-side module (``gpudiag_node.proc``): bounded output,
a bound on each call, failures as exit codes. Standard library only, Python 3.6+.

A call that outlives its bound (a wedged driver leaves nvidia-smi waiting in the kernel for ever) is killed,
with everything it started, and recorded in :data:`HUNG`, so the document can say which call hung and for how
long while the rest of the collection still answers within the host's deadline."""

import _thread
import os
import time

# No subprocess (with signal, threading, selectors, locale...) at all where os.posix_spawnp is (3.8+), and
# signal only to kill a hung call: importing them costs a node more than the calls they make.

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
    ``timeout_s``: then it and its children are killed and the call is added to :data:`HUNG`.

    Through os.posix_spawnp (Python 3.8+) and a poll of its two pipes: the subprocess module's import alone
    (signal, enum, threading, selectors, locale, ...) costs a node 20-30 ms of CPU, more than the nvidia-smi
    call it makes. Older Pythons use subprocess."""
    empty = b"" if raw_stdout else ""
    env = dict(os.environ, LC_ALL="C")
    started = time.monotonic()
    try:
        if hasattr(os, "posix_spawnp"):
            code, out, err = _spawned(argv, env, started + timeout_s)
        else:
            code, out, err = _subprocess(argv, env, timeout_s)
    except FileNotFoundError as exc:
        return 127, empty, str(exc)
    except OSError as exc:
        return 126, empty, str(exc)
    if code is None:
        HUNG.append({"call": call_name(argv), "after_s": round(time.monotonic() - started, 1)})
        return TIMED_OUT, empty, "no answer in %g s: killed" % round(timeout_s, 1)
    out = out if raw_stdout else out[:limit].decode("utf-8", "replace")
    return code, out, err[:limit].decode("utf-8", "replace")


def _spawned(argv, env, deadline):
    """(exit code, stdout, stderr) of argv started by posix_spawnp; exit code None when it outlived
    ``deadline`` (then it and its children were killed)."""
    out_fd, out_w = os.pipe()  # both ends close on exec; the child gets its own copies as 1 and 2
    err_fd, err_w = os.pipe()
    # novermin on each: this runs only where os has posix_spawnp (3.8+); 3.6 and 3.7 take the subprocess path
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),  # novermin
               (os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)]  # novermin
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable_fds()]  # novermin (as subprocess's close_fds)
    try:
        pid = os.posix_spawnp(argv[0], argv, env, file_actions=actions)  # novermin
    except BaseException:
        os.close(out_fd)
        os.close(err_fd)
        raise
    finally:
        os.close(out_w)
        os.close(err_w)
    try:
        chunks, ended = _read_all((out_fd, err_fd), deadline)
        status = _reaped(pid, deadline) if ended else None
        if status is None:
            _kill_tree(pid)
            _read_all((out_fd, err_fd), time.monotonic() + SETTLE_S)  # a child in the kernel may hold them
            _reaped(pid, time.monotonic() + SETTLE_S)
            return None, b"", b""
    finally:
        os.close(out_fd)
        os.close(err_fd)
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    return code, b"".join(chunks[out_fd]), b"".join(chunks[err_fd])


def _inheritable_fds():
    """This process's inheritable descriptors past stderr (Python's own are not inheritable)."""
    found = []
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return found
    for name in names:
        try:
            if int(name) > 2 and os.get_inheritable(int(name)):
                found.append(int(name))
        except (ValueError, OSError):  # the listing's own descriptor, closed by now
            pass
    return found


def _read_all(fds, deadline):
    """Read ``fds`` to their ends or until ``deadline``: ({fd: [chunks]}, whether all ended)."""
    import select

    chunks = {fd: [] for fd in fds}
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    left = set(fds)
    while left:
        wait_ms = int((deadline - time.monotonic()) * 1000) + 1
        if wait_ms <= 0:
            return chunks, False
        for fd, _ in poller.poll(wait_ms):
            data = os.read(fd, 1 << 16)
            if data:
                chunks[fd].append(data)
            else:
                poller.unregister(fd)
                left.discard(fd)
    return chunks, True


def _reaped(pid, deadline):
    """The wait status of ``pid`` once it exits, or None at ``deadline``. It has closed its output by now, so
    this is a few microseconds; polled rather than a blocking wait, which nothing could bound."""
    delay = 0.0005
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() >= deadline:
            return None
        time.sleep(delay)
        delay = min(2 * delay, 0.05)


def _subprocess(argv, env, timeout_s):
    """:func:`_spawned` through the subprocess module, for a Python without os.posix_spawnp (3.6, 3.7)."""
    import subprocess

    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env)
    try:
        out, err = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_tree(child.pid)
        try:
            child.communicate(timeout=SETTLE_S)
        except subprocess.TimeoutExpired:  # still holding its pipes (stuck in the kernel): leave it
            for stream in (child.stdout, child.stderr):
                stream.close()
        return None, b"", b""
    return child.returncode, out, err


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


def in_thread(doc, fn):
    """Run ``fn()`` beside the sampling (a failure goes to the document's problems). The waits are
    subprocesses and sleeps, so threads overlap them instead of adding them up."""
    def run():
        try:
            fn()
        except Exception as exc:  # an extra must not cost the readings
            doc["problems"].append("%s: %s" % (type(exc).__name__, exc))

    return Thread(run).start()
