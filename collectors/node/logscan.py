"""Log evidence, read ON the node: standard library only, Python 3.6+ (imported by the probe as ``gpudiag_logscan``).

The controller sends, as JSON data inside the collector bundle (never through a shell), a list of log
sources, each with the regular expressions to look for::

    {"path": "~/sglang.log",            # "~" expands here, on the node; "@kernel" is the kernel log
     "tail_bytes": 8388608,             # only the last N bytes (of the log and its rotations) are read
     "since_hours": null,               # lines with a time older than this are counted apart ("older")
     "max_files": 4,                    # the log and up to 3 rotations (.1, .2.gz, -20250101.gz, ...)
     "keep": 3,                         # recent matching lines kept per signature
     "signatures": [{"name": "...", "regex": "...", "exclude": "...", "ignore_case": false,
                     "group_by": ["pci", "xid"]}],
     "echoes": [{"name": "sglang_server_args", "regex": "server_args=ServerArgs\\("}]}

The regexes are compiled here with Python's ``re``; nothing is handed to a shell or to grep. A line that
matches an echo (a configuration dump such as SGLang's ``server_args=ServerArgs(...)``) is kept as
configuration and never counted as a signature match. Every matching line is numbered (``seq``, counting
from the oldest line read), so the controller can tell what happened after the last server start.

Bounded everywhere: the tail of the log, the matched lines kept (count, first, last and ``keep`` recent per
signature, each cut to ``LINE_CHARS``), the distinct ``group_by`` keys. Invalid UTF-8 and binary junk are
decoded with replacement characters; a missing or unreadable log is a status, never an exception.
"""

import calendar
import collections
import gzip
import os
import re
import stat
import time
import zlib

try:
    import gpudiag_proc as proc  # inside the collector bundle
except ImportError:  # imported from the installed package (tests, gpudiag local)
    from . import proc

KERNEL = "@kernel"
DEFAULT_TAIL_BYTES = 8 * 1024 * 1024
MAX_LINE_BYTES = 64 * 1024  # a longer line is matched on its first 64 KiB
LINE_CHARS = 400  # text kept of one matching line
ECHO_CHARS = 32 * 1024  # text kept of one configuration echo (SGLang's server_args line is ~10 KiB)
MAX_KEYS = 64  # distinct group_by keys kept per signature
MAX_GZ_BYTES = 256 * 1024 * 1024  # a compressed rotation larger than this is not decompressed
DEFAULT_KERNEL_SINCE_H = 24.0
CHUNK = 1024 * 1024

_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                                        "Nov", "Dec"), start=1)}
_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,]\d+)?\s*(Z|[+-]\d{2}:?\d{2})?")
_SYSLOG = re.compile(r"^(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2})")
_DMESG = re.compile(r"^\[\s*(\d+)\.(\d+)\]")
_BACKREF = re.compile(r"\\[1-9]|\(\?P=")
# journalctl prints these (exit 0, no lines) when the user may not read the system's or the kernel's entries.
_JOURNAL_BLIND = ("No journal files were found", "not seeing messages from other users and the system")


class _Signature(object):
    def __init__(self, spec, keep):
        self.name = str(spec["name"])
        flags = re.IGNORECASE if spec.get("ignore_case") else 0
        self.regex = re.compile(spec["regex"], flags)
        self.exclude = re.compile(spec["exclude"], flags) if spec.get("exclude") else None
        self.group_by = [str(g) for g in spec.get("group_by") or ()]
        self.keep = keep
        self.count = 0
        self.older = 0
        self.first = None
        self.last = None
        self.last_seq = None
        self.values = {}
        self.recent = collections.deque(maxlen=max(0, keep))
        self.keys = collections.OrderedDict()  # group_by values -> [count, first, last]
        self.keys_dropped = 0

    def hit(self, match, seq, text, old):
        self.last_seq = seq
        if old:
            self.older += 1
            return
        line = {"seq": seq, "text": _cut(text, LINE_CHARS)}
        self.count += 1
        if self.first is None:
            self.first = line
        self.last = line
        self.values = {k: v for k, v in match.groupdict().items() if v is not None}
        self.recent.append(line)
        if self.group_by:
            key = tuple(match.groupdict().get(g) or "" for g in self.group_by)
            entry = self.keys.get(key)
            if entry is None:
                if len(self.keys) >= MAX_KEYS:
                    self.keys_dropped += 1
                    return
                entry = self.keys[key] = [0, line, line]
            entry[0] += 1
            entry[2] = line

    def result(self):
        out = {"count": self.count, "older": self.older, "first": self.first, "last": self.last,
               "last_seq": self.last_seq, "values": self.values, "recent": list(self.recent)}
        if self.group_by:
            out["group_by"] = self.group_by
            out["keys"] = [{"key": list(k), "count": v[0], "first": v[1], "last": v[2]}
                           for k, v in self.keys.items()]
            out["keys_dropped"] = self.keys_dropped
        return out


class _Echo(object):
    def __init__(self, spec):
        self.name = str(spec["name"])
        self.regex = re.compile(spec["regex"])
        self.count = 0
        self.seq = None
        self.text = None
        self.start = None

    def result(self):
        # "start": where the match ended in "text", so the controller reads the facts from there without
        # running the regex again on text a node sent (a pack's regex may be slow; here it has a deadline).
        return {"count": self.count, "seq": self.seq, "text": self.text, "start": self.start}


def _cut(text, limit):
    return text if len(text) <= limit else text[:limit] + "..."


def _prefilter(patterns):
    """One regex that finds any of ``patterns`` ((regex, ignore_case) pairs), so most lines cost one search;
    None when they cannot be joined (back-references, clashing group names): then each is tried alone."""
    if not patterns or any(_BACKREF.search(p) for p, _ in patterns):
        return None
    try:
        return re.compile("|".join(("(?i:%s)" if icase else "(?:%s)") % p for p, icase in patterns))
    except (re.error, OverflowError, RecursionError):
        return None


def _line_time(text, now, boot_time=None):
    """Seconds since the epoch of a log line's timestamp (ISO 8601, syslog, dmesg), or None."""
    head = text[:80]
    m = _ISO.search(head)
    if m:
        y, mo, d, h, mi, s = (int(x) for x in m.groups()[:6])
        try:
            offset = m.group(7)
            if offset is None:
                return time.mktime((y, mo, d, h, mi, s, 0, 0, -1))  # the node's local time
            t = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))
            if offset != "Z":
                sign = -1 if offset[0] == "-" else 1
                digits = offset[1:].replace(":", "")
                t -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
            return t
        except (ValueError, OverflowError):
            return None
    m = _SYSLOG.search(head)
    if m:
        year = time.localtime(now).tm_year
        try:
            t = time.mktime((year, _MONTHS[m.group(1)], int(m.group(2)), int(m.group(3)), int(m.group(4)),
                             int(m.group(5)), 0, 0, -1))
            if t > now + 86400:  # syslog lines carry no year: December's lines read in January
                t = time.mktime((year - 1, _MONTHS[m.group(1)], int(m.group(2)), int(m.group(3)),
                                 int(m.group(4)), int(m.group(5)), 0, 0, -1))
            return t
        except (ValueError, OverflowError):
            return None
    if boot_time is not None:
        m = _DMESG.search(head)
        if m:
            return boot_time + int(m.group(1))
    return None


class _Scanner(object):
    """Matches lines (oldest first) against the echoes and signatures of one source."""

    def __init__(self, source, now):
        keep = int(source.get("keep", 3))
        self.signatures = [_Signature(s, keep) for s in source.get("signatures") or ()]
        self.echoes = [_Echo(e) for e in source.get("echoes") or ()]
        self.sig_filter = _prefilter([(s["regex"], bool(s.get("ignore_case")))
                                      for s in source.get("signatures") or ()])
        self.echo_filter = _prefilter([(e["regex"], False) for e in source.get("echoes") or ()])
        since_h = source.get("since_hours")
        self.since = now - float(since_h) * 3600.0 if since_h is not None else None
        self.now = now
        self.boot_time = None
        self.seq = 0

    def feed(self, data, boot_time=None):
        """Scan ``data`` (bytes, whole lines) in order."""
        self.boot_time = boot_time
        for raw in data.split(b"\n"):
            if not raw:
                continue
            self.seq += 1
            if len(raw) > MAX_LINE_BYTES:
                raw = raw[:MAX_LINE_BYTES]
            text = raw.decode("utf-8", "replace").replace("\x00", "").rstrip("\r")
            self.line(text)

    def line(self, text):
        if self.echoes and (self.echo_filter is None or self.echo_filter.search(text)):
            for echo in self.echoes:
                match = echo.regex.search(text)
                if match:
                    echo.count += 1
                    echo.seq = self.seq
                    echo.text = _cut(text, ECHO_CHARS)
                    echo.start = match.end()
                    return  # configuration, not an event: no signature may count it
        if not self.signatures or (self.sig_filter is not None and not self.sig_filter.search(text)):
            return
        old = None
        for sig in self.signatures:
            match = sig.regex.search(text)
            if match is None or (sig.exclude is not None and sig.exclude.search(text)):
                continue
            if old is None:
                when = _line_time(text, self.now, self.boot_time) if self.since is not None else None
                old = when is not None and when < self.since
            sig.hit(match, self.seq, text, old)

    def result(self):
        return {"lines": self.seq,
                "matches": {s.name: s.result() for s in self.signatures},
                "echoes": {e.name: e.result() for e in self.echoes}}


def rotations(path):
    """The rotated copies of ``path``, newest first: ``path.1``, ``path.2.gz``, ... then ``path-YYYYMMDD[.gz]``."""
    folder, base = os.path.split(path)
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return []
    numbered, dated = [], []
    pattern = re.compile(re.escape(base) + r"(?:\.(\d+)|-(\d{8,10}))(?:\.gz)?$")
    for name in names:
        m = pattern.match(name)
        if m and m.group(1) is not None:
            numbered.append((int(m.group(1)), name.endswith(".gz"), name))
        elif m:
            dated.append((m.group(2), name.endswith(".gz"), name))
    numbered.sort()
    dated.sort(reverse=True)
    return [os.path.join(folder, name) for _, _, name in numbered + dated]


def _is_gzip(path):
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _read_tail(path, budget):
    """(bytes, cut, note): the last ``budget`` bytes of ``path`` (decompressed when gzip), from a line start."""
    if _is_gzip(path):
        if os.path.getsize(path) > MAX_GZ_BYTES:
            return b"", True, "%s: compressed file larger than %d MiB, not read" % (path, MAX_GZ_BYTES >> 20)
        kept = bytearray()
        cut = False
        note = None
        try:
            with gzip.open(path, "rb") as f:
                while True:
                    chunk = f.read(CHUNK)
                    if not chunk:
                        break
                    kept += chunk
                    if len(kept) > budget:
                        del kept[:len(kept) - budget]
                        cut = True
        except (OSError, EOFError, zlib.error) as exc:
            note = "%s: damaged gzip (%s); read what could be" % (path, exc)
        data = bytes(kept)
    else:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            start = max(0, size - budget)
            f.seek(start)
            data = f.read(budget)
        cut = start > 0
        note = None
    if cut:
        newline = data.find(b"\n")
        data = data[newline + 1:] if newline >= 0 else b""  # drop the partial first line
    return data, cut, note


def _status_of(exc):
    if isinstance(exc, FileNotFoundError):
        return "missing", "no such file"
    if isinstance(exc, PermissionError):
        return "unreadable", "permission denied"
    if isinstance(exc, IsADirectoryError):
        return "unreadable", "is a directory"
    return "unreadable", exc.strerror or str(exc)


def scan_file(source, now=None):
    """Scan one log file (and its rotations) as ``source`` says; a dict for the probe document."""
    now = time.time() if now is None else now
    path = str(source.get("path", ""))
    resolved = os.path.expanduser(path)
    budget = max(1, int(source.get("tail_bytes") or DEFAULT_TAIL_BYTES))
    out = {"path": path, "resolved": os.path.abspath(resolved), "source": "file", "status": "ok", "error": None,
           "files": [], "bytes": 0, "cut": False, "notes": []}
    try:
        mode = os.stat(resolved).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory")
        if not stat.S_ISREG(mode):  # a FIFO would block the read; a device never ends
            raise OSError(0, "not a regular file")
        chunks = []
        first = _read_tail(resolved, budget)
    except (OSError, ValueError) as exc:
        out["status"], out["error"] = _status_of(exc) if isinstance(exc, OSError) else ("unreadable", str(exc))
        return out
    chunks.append((resolved, first[0]))
    out["cut"] = first[1]
    if first[2]:
        out["notes"].append(first[2])
    remaining = budget - len(first[0])
    for older in rotations(resolved)[:max(0, int(source.get("max_files", 4)) - 1)]:
        if remaining <= 0 or out["cut"]:
            break
        try:
            data, cut, note = _read_tail(older, remaining)
        except OSError as exc:
            out["notes"].append("%s: %s" % (older, _status_of(exc)[1]))
            continue
        chunks.append((older, data))
        out["cut"] = cut
        if note:
            out["notes"].append(note)
        remaining -= len(data)
    scanner = _Scanner(source, now)
    for name, data in reversed(chunks):  # oldest first, so seq grows with time
        scanner.feed(data)
        out["files"].append(name)
        out["bytes"] += len(data)
    out.update(scanner.result())
    return out


def _run(argv, timeout_s):
    code, out, err = proc.run(argv, timeout_s, raw_stdout=True)
    return code, out, err.strip()[-300:]


def scan_kernel(source, timeout_s, now=None):
    """Scan the kernel log: ``journalctl -k`` since the window's start, else ``dmesg`` (times from uptime)."""
    now = time.time() if now is None else now
    since_h = source.get("since_hours")
    since_h = DEFAULT_KERNEL_SINCE_H if since_h is None else float(since_h)
    source = dict(source, since_hours=since_h)
    budget = max(1, int(source.get("tail_bytes") or DEFAULT_TAIL_BYTES))
    out = {"path": KERNEL, "resolved": None, "source": None, "status": "ok", "error": None, "files": [],
           "bytes": 0, "cut": False, "notes": []}
    tried = []
    data, boot_time = None, None
    journalctl = proc.find_tool("journalctl")
    if journalctl:
        start = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now - since_h * 3600.0))
        # No -q: it would also hide the warning that this user cannot read the system's journal.
        code, stdout, err = _run([journalctl, "-k", "--no-pager", "-o", "short-iso", "--since", start], timeout_s)
        entries = any(line and not line.startswith(b"-- ") for line in stdout.splitlines())
        if code == 0 and (entries or not any(b in err for b in _JOURNAL_BLIND)):
            data, out["source"] = stdout, "journalctl"
        else:
            tried.append("journalctl: %s" % (err or "exit %s" % code))
    if data is None:
        dmesg = proc.find_tool("dmesg") or ("/bin/dmesg" if os.path.exists("/bin/dmesg") else None)
        if dmesg:
            code, stdout, err = _run([dmesg], timeout_s)
            if code == 0:
                data, out["source"] = stdout, "dmesg"
                try:
                    with open("/proc/uptime") as f:
                        boot_time = now - float(f.read().split()[0])
                except (OSError, ValueError, IndexError):
                    out["notes"].append("dmesg times are seconds since boot and /proc/uptime is unreadable")
            else:
                tried.append("dmesg: %s" % (err or "exit %s" % code))
        else:
            tried.append("dmesg: not installed")
    if data is None:
        out["status"], out["error"] = "unreadable", "; ".join(tried) or "no journalctl and no dmesg"
        return out
    if len(data) > budget:
        data = data[len(data) - budget:]
        data = data[data.find(b"\n") + 1:]
        out["cut"] = True
    out["files"] = [out["source"]]
    out["bytes"] = len(data)
    scanner = _Scanner(source, now)
    scanner.feed(data, boot_time=boot_time)
    out.update(scanner.result())
    return out


def scan(source, timeout_s=60.0, now=None):
    """One source: a file, or the kernel log (``@kernel``). Never raises for what the node holds."""
    try:
        if source.get("path") == KERNEL:
            return scan_kernel(source, timeout_s, now)
        return scan_file(source, now)
    except (re.error, ValueError, TypeError, KeyError) as exc:  # a pattern this node's Python refuses
        return {"path": source.get("path"), "status": "error", "error": "%s: %s" % (type(exc).__name__, exc)}


def scan_all(sources, timeout_s=60.0):
    return [scan(s, timeout_s) for s in sources]
