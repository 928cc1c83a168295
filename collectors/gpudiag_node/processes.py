"""Who is on the GPU: what /proc says about the processes NVML (or nvidia-smi) lists (``gpudiag_node.processes``).

Standard library only, Python 3.6+. For each pid: its user, its command line (cut to a bound), the CPU it
used over the sampling window (``/proc/PID/stat`` read at both ends), its container (from the cgroup path:
docker, containerd, podman, a Kubernetes pod), its Slurm job (a ``job_NNN`` cgroup, else ``SLURM_JOB_ID``
in ``/proc/PID/environ``) and where its stdout and stderr go (``/proc/PID/fd/1`` and ``2``).

A user who is not root cannot read other users' ``environ`` and ``fd``: such a field is left out and
``unreadable`` says so ("not readable as user alice"), never a guess. Nothing here runs a command.

``GPUDIAG_PROC_ROOT`` (set only by the test cluster's stub) points the reads at a fake process table; the
real ``/proc`` is the default.
"""

import os
import stat
import time

# No ``re`` here: with enum, functools and collections it costs a node 5-10 ms of CPU at every sweep that finds a
# process on a GPU. The cgroup paths are read with str methods (each function says the pattern it reads), and the
# servers' command-line patterns are compiled only for a line that holds one of their words (:class:`_Servers`).

MAX_ARGS = 64  # arguments kept of one command line
MAX_ARG_CHARS = 256  # characters kept of one argument
MAX_CMDLINE_BYTES = 16 * 1024  # bytes read of /proc/PID/cmdline
MAX_ENVIRON_BYTES = 256 * 1024  # bytes read of /proc/PID/environ
MAX_PROCS = 64  # processes described per node
MAX_LOG_SOURCES = 8  # logs found through processes' stdout/stderr, per node

_HEX = frozenset("0123456789abcdef")
_POD_ID = _HEX | frozenset("_-")
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")


def proc_root():
    return os.environ.get("GPUDIAG_PROC_ROOT") or "/proc"


def user_name(uid):
    try:
        import pwd
        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return "uid %d" % uid  # no name for it here (a container's user): the number, never a guess


def _read(path, limit):
    with open(path, "rb") as f:
        return f.read(limit)


def cpu_ticks(pid, root=None):
    """utime + stime of ``pid`` in clock ticks (fields 14 and 15 of /proc/PID/stat), or None."""
    try:
        data = _read(os.path.join(root or proc_root(), str(pid), "stat"), 4096).decode("ascii", "replace")
        fields = data[data.rindex(")") + 2:].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, ValueError, IndexError):
        return None


def _run_of(text, start, allowed, most):
    """How many characters of ``allowed`` follow ``start`` in ``text`` (at most ``most``)."""
    end = start
    while end < len(text) and end - start < most and text[end] in allowed:
        end += 1
    return end - start


def _occurrences(text, word):
    at = text.find(word)
    while at >= 0:
        yield at
        at = text.find(word, at + 1)


def _hex_id(path, prefixes):
    """The first 12 of the 12-64 hex digits right after the leftmost of ``prefixes`` followed by them
    (``re.search(r"(?:p1|p2)([0-9a-f]{12,64})")`` with the prefixes' alternatives in order), or None."""
    found = []
    for prefix in prefixes:
        for at in _occurrences(path, prefix):
            if _run_of(path, at + len(prefix), _HEX, 64) >= 12:
                found.append((at, prefixes.index(prefix), path[at + len(prefix):at + len(prefix) + 12]))
                break
    return min(found)[2] if found else None


def _k8s_pod(path):
    """The pod's uid of ``kubepods[^/]*/(?:[^/]*/)?(?:kubepods-[a-z]+-)?pod([0-9a-f_-]{36})`` (searched), or
    None: the leftmost "kubepods" whose next segment (or the one after it, tried first) is "pod<36>",
    optionally after "kubepods-<class>-"."""
    for at in _occurrences(path, "kubepods"):
        slash = path.find("/", at + len("kubepods"))
        if slash < 0:
            return None  # no later "kubepods" has a slash after it either
        starts = [slash + 1]
        second = path.find("/", slash + 1)
        if second >= 0:
            starts.insert(0, second + 1)  # the optional segment: tried first, as the greedy group is
        for start in starts:
            for pod in _pod_starts(path, start):
                if path.startswith("pod", pod) and _run_of(path, pod + 3, _POD_ID, 36) == 36:
                    return path[pod + 3:pod + 39]
    return None


def _pod_starts(path, start):
    """Where "pod" may start at ``start``: after "kubepods-[a-z]+-" there (tried first), and at ``start``."""
    prefix = "kubepods-"
    if path.startswith(prefix, start):
        letters = _run_of(path, start + len(prefix), _LOWER, len(path))
        end = start + len(prefix) + letters
        if letters and path.startswith("-", end):
            yield end + 1
    yield start


# Container runtimes by the cgroup path they leave (cgroup v1 and v2, systemd and cgroupfs drivers), in the order
# they are tried on each line.
_CONTAINERS = (
    ("k8s pod", _k8s_pod),
    ("containerd", lambda path: _hex_id(path, ("cri-containerd-",))),
    ("podman", lambda path: _hex_id(path, ("libpod-conmon-", "libpod-"))),
    ("docker", lambda path: _hex_id(path, ("docker-", "docker/"))),
)


def container_of(cgroup_text):
    """("docker", "3f2a9c1b0e4d") from a cgroup file's text, or (None, None)."""
    for line in cgroup_text.splitlines():
        path = line.split(":", 2)[-1]
        for kind, find in _CONTAINERS:
            ident = find(path)
            if ident is not None:
                return kind, ident.replace("_", "-") if kind == "k8s pod" else ident
    return None, None


def slurm_job_of(cgroup_text):
    """The job of ``/job_(\\d+)(?:/|$)`` in a line's cgroup path, or None."""
    for line in cgroup_text.splitlines():
        path = line.split(":", 2)[-1]
        for at in _occurrences(path, "/job_"):
            start = at + len("/job_")
            end = start
            while end < len(path) and path[end].isdecimal():
                end += 1
            if end > start and (end == len(path) or path[end] == "/"):
                return path[start:end]
    return None


def _argv(raw):
    args = [a.decode("utf-8", "replace") for a in raw.rstrip(b"\0").split(b"\0")]
    cut = len(args) > MAX_ARGS or any(len(a) > MAX_ARG_CHARS for a in args)
    return [a[:MAX_ARG_CHARS] for a in args[:MAX_ARGS]], cut


class _Why(object):
    """The ``unreadable`` part of a process: field -> why."""

    def __init__(self, me):
        self.me = me
        self.fields = {}

    def denied(self, field, exc):
        if isinstance(exc, PermissionError):
            self.fields[field] = "not readable as user %s" % self.me
        elif isinstance(exc, FileNotFoundError):
            self.fields[field] = "the process ended"
        else:
            self.fields[field] = "%s: %s" % (type(exc).__name__, exc)


def describe(pid, me, root=None):
    """What /proc tells about ``pid`` (never its CPU use: see :class:`Watcher`)."""
    root = root or proc_root()
    base = os.path.join(root, str(pid))
    out = {"pid": pid}
    why = _Why(me)
    try:
        for line in _read(os.path.join(base, "status"), 8192).decode("utf-8", "replace").splitlines():
            if line.startswith("Uid:"):
                uid = int(line.split()[1])
                out["uid"], out["user"] = uid, user_name(uid)
                break
    except (OSError, ValueError, IndexError) as exc:
        why.denied("user", exc)
    try:
        raw = _read(os.path.join(base, "cmdline"), MAX_CMDLINE_BYTES)
        out["cmdline"], cut = _argv(raw)
        if cut or len(raw) >= MAX_CMDLINE_BYTES:
            out["cmdline_cut"] = True
    except OSError as exc:
        why.denied("cmdline", exc)
    try:
        cgroup = _read(os.path.join(base, "cgroup"), 16384).decode("utf-8", "replace")
        out["cgroup"] = cgroup.strip().splitlines()[-1][:300] if cgroup.strip() else ""
        kind, ident = container_of(cgroup)
        if kind:
            out["container"] = {"runtime": kind, "id": ident}
        job = slurm_job_of(cgroup)
        if job:
            out["job_id"], out["job_id_from"] = job, "cgroup"
    except OSError as exc:
        why.denied("cgroup", exc)
    if "job_id" not in out:
        try:
            environ = _read(os.path.join(base, "environ"), MAX_ENVIRON_BYTES)
            for entry in environ.split(b"\0"):
                if entry.startswith(b"SLURM_JOB_ID="):
                    out["job_id"], out["job_id_from"] = entry[13:].decode("ascii", "replace")[:32], "environ"
                    break
        except OSError as exc:
            why.denied("job_id", exc)
    for fd, name in (("1", "stdout"), ("2", "stderr")):
        try:
            out[name] = _stream(os.path.join(base, "fd", fd))
        except OSError as exc:
            why.denied(name, exc)
    if why.fields:
        out["unreadable"] = why.fields
    return out


def _stream(link):
    """Where a file descriptor points: {"path", "file": a regular file} (a pipe, socket or tty is no log)."""
    target = os.readlink(link)
    info = {"path": target[:1024], "file": False}
    try:
        seen = os.stat(link)
        info["file"] = stat.S_ISREG(seen.st_mode)
        # The same file under its name here? Not when the process lives in another mount namespace (a
        # container): then only the /proc link reaches it.
        here = os.stat(target)
        info["same_here"] = (here.st_dev, here.st_ino) == (seen.st_dev, seen.st_ino)
    except OSError:
        info["same_here"] = False
    return info


class Watcher(object):
    """The processes on the GPUs over one sampling window: :meth:`start` when the window opens (their CPU
    counters), :meth:`finish` when it closes (the counters again, and the rest of /proc)."""

    def __init__(self, root=None):
        self.root = root or proc_root()
        self.me = user_name(os.geteuid())
        self.gpus = {}  # index -> [{"pid", "used_memory_mib", ...}]
        self.ticks = {}
        self.t0 = None
        self.cut = 0

    def start(self, per_gpu):
        """``per_gpu``: {GPU index: [process dicts with "pid"]}, from NVML or nvidia-smi."""
        pids = []
        for index in sorted(per_gpu):
            self.gpus[index] = per_gpu[index]
            for p in per_gpu[index]:
                if p["pid"] not in pids:
                    pids.append(p["pid"])
        self.cut = max(0, len(pids) - MAX_PROCS)
        self.t0 = time.monotonic()
        for pid in pids[:MAX_PROCS]:
            self.ticks[pid] = cpu_ticks(pid, self.root)

    def finish(self):
        window = time.monotonic() - self.t0 if self.t0 is not None else None
        hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        procs = {}
        for pid, begin in self.ticks.items():
            info = describe(pid, self.me, self.root)
            end = cpu_ticks(pid, self.root)
            if begin is not None and end is not None and window:
                info["cpu_pct"] = round(100.0 * (end - begin) / hz / window, 1)
            elif begin is None:
                info.setdefault("unreadable", {})["cpu_pct"] = "/proc/%s/stat not readable" % pid
            procs[str(pid)] = info
        out = {"user": self.me, "window_s": round(window, 3) if window else None,
               "gpus": {str(i): p for i, p in self.gpus.items()}, "procs": procs}
        if self.cut:
            out["cut"] = self.cut
        return out


def servers_running(servers, root=None):
    """Without the GPUs (a log search reads none): every process whose command line matches a known server
    (``servers`` as for :func:`server_logs`), described as :meth:`Watcher.finish` lists them ({"procs"}),
    so that a search scans the logs a sweep finds through the GPUs' processes. At most MAX_PROCS."""
    patterns = _server_patterns(servers)
    root = root or proc_root()
    me = user_name(os.geteuid())
    procs = {}
    if not patterns:
        return {"procs": procs}
    try:
        pids = sorted(int(name) for name in os.listdir(root) if name.isdigit())
    except OSError:
        return {"procs": procs}
    for pid in pids:
        try:
            args, _ = _argv(_read(os.path.join(root, str(pid), "cmdline"), MAX_CMDLINE_BYTES))
        except OSError:  # ended, or not ours to read
            continue
        line = " ".join(args) + " "
        if any(pattern.search(line) for pattern in patterns):
            procs[str(pid)] = describe(pid, me, root)
            if len(procs) >= MAX_PROCS:
                break
    return {"procs": procs}


class _Server(object):
    """A server's command-line pattern, compiled (``re``) only for a line that holds one of its ``words``: the
    controller's literals, one of which every match holds (gpudiag.logs.words); without them, for every line."""

    def __init__(self, name, regex, words):
        self.name, self.regex, self.compiled = name, regex, None
        self.words = [w for w in words if isinstance(w, str) and w] if isinstance(words, list) else []
        if not isinstance(regex, str):
            raise TypeError("regex")

    def search(self, line):
        if self.words and not any(word in line for word in self.words):
            return False
        if self.compiled is None:
            import re

            try:
                self.compiled = re.compile(self.regex)
            except re.error:  # never matches, as a pattern that does not compile was never tried
                self.compiled = False
        return bool(self.compiled and self.compiled.search(line))


def _server_patterns(servers):
    patterns = []
    for s in servers or ():
        try:
            patterns.append(_Server(s["server"], s["regex"], s.get("words")))
        except (KeyError, TypeError, AttributeError):
            continue
    return patterns


def server_logs(found, servers, root=None):
    """Log sources found through the processes: a process whose command line matches a known server
    (``servers``: [{"server": "SGLang", "regex": ...}], from the packs' command-line echoes) and whose
    stdout or stderr is a regular file. [(path, {"pid", "server", "fds": [1, 2]})], each path once."""
    patterns = _server_patterns(servers)
    paths = {}
    for pid, info in sorted((found or {}).get("procs", {}).items()):
        line = " ".join(info.get("cmdline") or ()) + " "
        server = next((pattern.name for pattern in patterns if pattern.search(line)), None)
        if server is None:
            continue
        for fd, name in ((1, "stdout"), (2, "stderr")):
            stream = info.get(name) or {}
            path = stream.get("path") or ""
            if not stream.get("file") or not path.startswith("/"):
                continue
            link = os.path.join(root or proc_root(), str(pid), "fd", str(fd))
            if not stream.get("same_here"):
                path = link  # deleted, or another mount namespace's file: read it through the process
            entry = paths.setdefault(path, {"pid": int(pid), "server": server, "fds": [], "via": link})
            if entry["pid"] == int(pid):
                entry["fds"].append(fd)
    return sorted(paths.items())[:MAX_LOG_SOURCES]
