"""Log evidence, read ON the node: standard library only, Python 3.6+ (``gpudiag_node.logscan``).

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
import io
import os
import re
import stat
import time
import zlib

from . import proc

KERNEL = "@kernel"
DEFAULT_TAIL_BYTES = 8 * 1024 * 1024
MAX_LINE_BYTES = 64 * 1024  # a longer line is matched on its first 64 KiB
LINE_CHARS = 400  # text kept of one matching line
ECHO_CHARS = 32 * 1024  # text kept of one configuration echo (SGLang's server_args line is ~10 KiB)
MAX_KEYS = 64  # distinct group_by keys kept per signature
MAX_GZ_BYTES = 256 * 1024 * 1024  # a compressed rotation larger than this is not decompressed
MAX_INFLATE_BYTES = 1024 * 1024 * 1024  # decompressed bytes read of one rotation, at most
GZ_KEEP_BYTES = 64 * 1024 * 1024  # the tail of a compressed rotation held in memory, at most
# Decompressed bytes of a rotation, at most this many times its compressed size: text logs inflate 5-20 times,
# a gzip bomb (a .1.gz of 1 MiB that is 1 GiB of one line) far more and would take the whole scan's time.
MAX_INFLATE_RATIO = 100
# The share of a source's time left that its rotations may use (decompressing and scanning): the rest is the
# live log's, so a costly rotation never leaves the live log unread (it got 0 lines behind a gzip bomb).
ROTATIONS_TIME_SHARE = 0.5
CHECK_EVERY = 1024  # lines between two looks at the deadline
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
        self.deadline = source.get("_deadline")  # time.monotonic() past which the scan stops (cut)

    def feed(self, data, boot_time=None):
        """Scan ``data`` (bytes, whole lines) in order; raises :class:`OutOfTime` past the deadline."""
        self.boot_time = boot_time
        for raw in data.split(b"\n"):
            if not raw:
                continue
            self.seq += 1
            if len(raw) > MAX_LINE_BYTES:
                raw = raw[:MAX_LINE_BYTES]
            if self.deadline is not None and self.seq % CHECK_EVERY == 0 and time.monotonic() > self.deadline:
                raise OutOfTime()
            text = raw.decode("utf-8", "replace").replace("\x00", "").rstrip("\r")
            self.line(text)

    def feed_file(self, f, start):
        """Scan an open file from byte ``start`` to its end, a chunk at a time (memory: one chunk and one
        line, whatever the tail); the partial line at ``start`` is skipped when ``start`` is not 0."""
        f.seek(start)
        carry = b""
        skip = start > 0
        while True:
            chunk = f.read(CHUNK)
            if not chunk:
                break
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise OutOfTime()
            if skip:
                newline = chunk.find(b"\n")
                if newline < 0:
                    continue
                chunk, skip = chunk[newline + 1:], False
            data = carry + chunk
            end = data.rfind(b"\n")
            if end < 0:
                carry = data[:MAX_LINE_BYTES]  # a line longer than this is matched on its start
                continue
            carry = data[end + 1:][:MAX_LINE_BYTES]
            self.feed(data[:end])
        if carry:
            self.feed(carry)

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


class OutOfTime(Exception):
    """The scan ran past its share of the collector's deadline."""


def refusal(path, mode):
    """Why ``path`` (of stat mode ``mode``) is not read as a log, or None. A character device never ends; a
    FIFO blocks; a /proc or /sys file may block, and reading /proc/kmsg takes the kernel's messages away
    from the system's logger."""
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISCHR(mode):
        return "a character device, not a log file (for the kernel log use @kernel)"
    if stat.S_ISFIFO(mode):
        return "a FIFO, not a log file: reading it would block"
    if not stat.S_ISREG(mode):
        return "not a regular file"
    real = os.path.realpath(path)
    if real == "/proc" or real.startswith(("/proc/", "/sys/")):
        return "a /proc or /sys file, not a log file: reading it may block or take messages from the " \
               "system's logger (for the kernel log use @kernel)"
    return None


def _open_log(path):
    """``path`` opened for reading, checked on the open file (no FIFO swapped in after a stat)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        why = refusal(path, os.fstat(fd).st_mode)
        if why:
            raise OSError(0, why)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _inflate_tail(f, path, budget, deadline, compressed):
    """(bytes, cut, note): the last ``budget`` bytes of the gzip file ``f`` (at most GZ_KEEP_BYTES held,
    at most MAX_INFLATE_BYTES, and MAX_INFLATE_RATIO times its ``compressed`` size, decompressed), from a line
    start."""
    budget = min(budget, GZ_KEEP_BYTES)
    limit = min(MAX_INFLATE_BYTES, max(compressed, 1) * MAX_INFLATE_RATIO)
    kept = bytearray()
    cut, note, inflated = False, None, 0
    try:
        with gzip.GzipFile(fileobj=f, mode="rb") as z:
            while True:
                chunk = z.read(CHUNK)
                if not chunk:
                    break
                inflated += len(chunk)
                kept += chunk
                if len(kept) > budget:
                    del kept[:len(kept) - budget]
                    cut = True
                if inflated >= limit:
                    cut = True
                    note = ("%s: decompressed past %d MiB, the rest not read" % (path, limit >> 20)
                            if limit == MAX_INFLATE_BYTES else
                            "%s: decompresses to more than %d times its size (a gzip bomb?); the first %d MiB "
                            "read" % (path, MAX_INFLATE_RATIO, limit >> 20))
                    break
                if deadline is not None and time.monotonic() > deadline:
                    raise OutOfTime()
    except (OSError, EOFError, zlib.error) as exc:
        note = "%s: damaged gzip (%s); read what could be" % (path, exc)
    data = bytes(kept)
    if cut:
        newline = data.find(b"\n")
        data = data[newline + 1:] if newline >= 0 else b""  # drop the partial first line
    return data, cut, note


def _piece(path, budget, deadline):
    """What to scan of ``path`` for the last ``budget`` bytes: (kind, what, bytes, cut, note), kind "file"
    (what: the byte to start from, read later a chunk at a time) or "data" (what: a gzip file's tail)."""
    with _open_log(path) as f:
        head = f.read(2)
        size = os.fstat(f.fileno()).st_size
        if head == b"\x1f\x8b":
            if size > MAX_GZ_BYTES:
                return "data", b"", 0, True, "%s: compressed file larger than %d MiB, not read" % (
                    path, MAX_GZ_BYTES >> 20)
            f.seek(0)
            data, cut, note = _inflate_tail(f, path, budget, deadline, size)
            return "data", data, len(data), cut, note
    start = max(0, size - budget)
    return "file", start, size - start, start > 0, None


def _status_of(exc):
    if isinstance(exc, FileNotFoundError):
        return "missing", "no such file"
    if isinstance(exc, PermissionError):
        return "unreadable", "permission denied"
    if isinstance(exc, IsADirectoryError):
        return "unreadable", "is a directory"
    return "unreadable", exc.strerror or str(exc)


def _scan_piece(scanner, piece, out):
    """Scan one piece (a file's tail, or a rotation's decompressed tail) and account for it in ``out``."""
    name, kind, what, size, _, note = piece
    if note:
        out["notes"].append(note)
    out["files"].append(name)
    if kind == "data":  # a chunk at a time, as a file: split whole, 64 MiB of short lines held 256 MiB of list
        scanner.feed_file(io.BytesIO(what), 0)
    else:
        with _open_log(name) as f:
            scanner.feed_file(f, what)
    out["bytes"] += size


def scan_file(source, now=None):
    """Scan one log file (and its rotations) as ``source`` says; a dict for the probe document. The tail is
    streamed (memory: a chunk, a line, and at most GZ_KEEP_BYTES of a compressed rotation); past the
    deadline (``source["_deadline"]``) the scan stops and says so (cut, a note)."""
    now = time.time() if now is None else now
    path = str(source.get("path", ""))
    resolved = os.path.expanduser(path)
    budget = max(1, int(source.get("tail_bytes") or DEFAULT_TAIL_BYTES))
    deadline = source.get("_deadline")
    out = {"path": path, "resolved": os.path.abspath(resolved), "source": "file", "status": "ok", "error": None,
           "files": [], "bytes": 0, "cut": False, "notes": []}
    scanner = _Scanner(source, now)
    pieces = []  # newest first
    try:
        try:
            why = refusal(resolved, os.stat(resolved).st_mode)
            if why:
                raise OSError(21 if why == "is a directory" else 0, why)
            pieces.append((resolved,) + _piece(resolved, budget, deadline))
        except (OSError, ValueError) as exc:
            out["status"], out["error"] = (_status_of(exc) if isinstance(exc, OSError)
                                           else ("unreadable", str(exc)))
            return out
        out["cut"] = pieces[0][4]
        remaining = budget - pieces[0][3]
        # The rotations' own deadline: a share of the time left, the rest kept for the live log (pieces[0]).
        older_deadline = (None if deadline is None else
                          time.monotonic() + max(0.0, deadline - time.monotonic()) * ROTATIONS_TIME_SHARE)
        try:
            for older in rotations(resolved)[:max(0, int(source.get("max_files", 4)) - 1)]:
                if remaining <= 0 or out["cut"]:
                    break
                try:
                    piece = (older,) + _piece(older, remaining, older_deadline)
                except OSError as exc:
                    out["notes"].append("%s: %s" % (older, _status_of(exc)[1]))
                    continue
                pieces.append(piece)
                out["cut"] = piece[4]
                remaining -= piece[3]
            scanner.deadline = older_deadline
            for piece in reversed(pieces[1:]):  # oldest first, so seq grows with time
                _scan_piece(scanner, piece, out)
        except OutOfTime:
            out["cut"] = True
            out["notes"].append("the rotations stopped at their share of the scan's time, after %d lines; "
                                "the live log is read next" % scanner.seq)
        scanner.deadline = deadline
        _scan_piece(scanner, pieces[0], out)
    except OutOfTime:
        out["cut"] = True
        out["notes"].append("the scan stopped at its share of the collector's deadline, after %d lines"
                            % scanner.seq)
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
    try:
        scanner.feed(data, boot_time=boot_time)
    except OutOfTime:
        out["cut"] = True
        out["notes"].append("the scan stopped at its share of the collector's deadline, after %d lines"
                            % scanner.seq)
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


def scan_all(sources, timeout_s=60.0, deadline=None, into=None):
    """Scan every source, appending each result to ``into`` as it is done (the caller may stop waiting);
    ``deadline`` (time.monotonic()) bounds the whole scan: a source past it stops and says so."""
    into = [] if into is None else into
    for source in sources:
        if deadline is not None:
            left = deadline - time.monotonic()
            source = dict(source, _deadline=deadline)
            timeout_s = max(0.1, min(timeout_s, left))
        into.append(scan(source, timeout_s))
    return into
