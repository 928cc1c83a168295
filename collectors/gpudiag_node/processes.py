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
import re
import stat
import time

MAX_ARGS = 64  # arguments kept of one command line
MAX_ARG_CHARS = 256  # characters kept of one argument
MAX_CMDLINE_BYTES = 16 * 1024  # bytes read of /proc/PID/cmdline
MAX_ENVIRON_BYTES = 256 * 1024  # bytes read of /proc/PID/environ
MAX_PROCS = 64  # processes described per node
MAX_LOG_SOURCES = 8  # logs found through processes' stdout/stderr, per node

# Container runtimes by the cgroup path they leave (cgroup v1 and v2, systemd and cgroupfs drivers).
_CONTAINERS = (
    ("k8s pod", re.compile(r"kubepods[^/]*/(?:[^/]*/)?(?:kubepods-[a-z]+-)?pod([0-9a-f_-]{36})")),
    ("containerd", re.compile(r"cri-containerd-([0-9a-f]{12,64})")),
    ("podman", re.compile(r"libpod-(?:conmon-)?([0-9a-f]{12,64})")),
    ("docker", re.compile(r"docker[-/]([0-9a-f]{12,64})")),
)
_SLURM_JOB = re.compile(r"/job_(\d+)(?:/|$)")


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


def container_of(cgroup_text):
    """("docker", "3f2a9c1b0e4d") from a cgroup file's text, or (None, None)."""
    for line in cgroup_text.splitlines():
        path = line.split(":", 2)[-1]
        for kind, pattern in _CONTAINERS:
            match = pattern.search(path)
            if match:
                ident = match.group(1).replace("_", "-")
                return kind, ident if kind == "k8s pod" else ident[:12]
    return None, None


def slurm_job_of(cgroup_text):
    for line in cgroup_text.splitlines():
        match = _SLURM_JOB.search(line.split(":", 2)[-1])
        if match:
            return match.group(1)
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
        if any(pattern.search(line) for _, pattern in patterns):
            procs[str(pid)] = describe(pid, me, root)
            if len(procs) >= MAX_PROCS:
                break
    return {"procs": procs}


def _server_patterns(servers):
    patterns = []
    for s in servers or ():
        try:
            patterns.append((s["server"], re.compile(s["regex"])))
        except (KeyError, TypeError, re.error):
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
        server = next((name for name, pattern in patterns if pattern.search(line)), None)
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
