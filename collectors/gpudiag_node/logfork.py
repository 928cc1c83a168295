"""The log scan in a child process of its own (a fork), beside the GPU readings: a regex that never ends or a
read that blocks costs that child, which is ended at its share of the deadline, never the readings. Each source's
result comes back as one JSON line on a pipe as soon as it is done (collectors/gpudiag_node/logscan.py scans)."""

import os
import time

from . import jsoncodec, proc

# The log scan's share of the collector's deadline: the GPU readings must come back whatever a log costs
# (a huge tail, a slow regex, a file that blocks), so the scan stops at its share and says "cut".
LOG_SHARE = 0.5


def _logscan():
    from . import logscan
    return logscan


def collect_logs(doc, sources, call_timeout_s, deadline=None, into=None):
    """Scan the log ``sources`` (collectors/gpudiag_node/logscan.py) into ``into`` (else ``doc["logs"]``), one entry
    per source, each appended as it is done."""
    try:
        found = _logscan().scan_all(sources, call_timeout_s, deadline, into)
        if into is None:
            doc["logs"] = found
    except Exception as exc:
        doc["problems"].append("log scan: %s: %s" % (type(exc).__name__, exc))


class _Lines(object):
    """Where the forked scan puts each source's result: one JSON line on a pipe, as soon as it is done."""

    def __init__(self, fd):
        self.fd = fd

    def append(self, item):
        data = (jsoncodec.dumps(item) + "\n").encode()
        while data:
            data = data[os.write(self.fd, data):]


def start_logs(doc, sources, call_timeout_s, share_s=None):
    """Start the log scan in a child process with its own share of the deadline: a regex that never ends
    or a read that blocks costs that child, which is ended at the deadline, never the GPU readings."""
    share_s = max(1.0, LOG_SHARE * call_timeout_s) if share_s is None else share_s
    deadline = time.monotonic() + share_s
    _logscan()  # imported before the fork, so the child needs no import lock
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: scan, write, and leave without running the parent's exit handlers
        try:
            os.close(read_fd)
            problems = {"problems": []}
            collect_logs(problems, sources, call_timeout_s, deadline, _Lines(write_fd))
            for problem in problems["problems"]:
                _Lines(write_fd).append({"problem": problem})
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks = []

    def drain():  # beside the sampling, so the child never waits on a full pipe
        while True:
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                return
            chunks.append(chunk)

    reader = proc.Thread(drain).start()
    return pid, read_fd, reader, chunks, share_s, deadline


def finish_logs(doc, sources, started):
    """Wait for the log scan until its share of the deadline (and a second to write), end it, and put what
    it finished in the document; a source it did not finish is "unreadable", and says why."""
    import signal

    pid, read_fd, reader, chunks, share_s, deadline = started
    reader.join(max(0.0, deadline + 1.0 - time.monotonic()))
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    os.waitpid(pid, 0)
    reader.join(1.0)
    try:
        os.close(read_fd)
    except OSError:
        pass
    done = []
    for line in b"".join(chunks).split(b"\n"):
        try:
            item = jsoncodec.loads(line.decode("utf-8")) if line else None
        except ValueError:
            continue  # the last line, cut when the child was ended
        if isinstance(item, dict) and "problem" in item:
            doc["problems"].append(str(item["problem"]))
        elif isinstance(item, dict):
            done.append(item)
    for source in sources[len(done):]:
        done.append({"path": source.get("path"), "status": "unreadable", "cut": True,
                     "error": "the log scan did not finish within its share of the deadline (%.0f s): the "
                              "log blocks, or a pattern is too slow for it" % share_s})
    doc["logs"] = done


def scan_server_logs(doc, discover, call_timeout_s, started, processes=None):
    """The logs of the inference servers on the GPUs, found through their stdout and stderr (``discover``:
    {"servers": [{"server", "regex"}], "source": a log source without its path}), scanned like configured
    logs, each with ``found``: the process and descriptor it was found through. ``processes``: the
    processes to look at, when not the GPUs' (``doc["processes"]``)."""
    found = _processes().server_logs(doc["processes"] if processes is None else processes,
                                            discover.get("servers"))
    # A log the inventory names is not scanned twice ("resolved": its path with "~" expanded, on the node).
    configured = {os.path.realpath(s.get("resolved") or os.path.expanduser(s["path"]))
                  for s in doc.get("logs") or () if isinstance(s.get("path"), str)}
    found = [(path, how) for path, how in found if os.path.realpath(path) not in configured]
    if not found:
        return
    # What is left of the logs' share of the deadline (the configured logs may have used some): the GPU
    # readings must come back within the deadline whatever the logs cost.
    left_s = LOG_SHARE * call_timeout_s - (time.monotonic() - started)
    if left_s < 1.0:
        doc["problems"].append("the logs of %d server(s) found on the GPUs were not scanned: no time left in "
                               "the logs' share of the deadline" % len(found))
        return
    sources = [dict(discover.get("source") or {}, path=path) for path, _ in found]
    scratch = {"problems": doc["problems"]}
    finish_logs(scratch, sources, start_logs(scratch, sources, call_timeout_s, left_s))
    for item, (_, how) in zip(scratch.get("logs", []), found):
        item["found"] = how
    doc.setdefault("logs", []).extend(scratch.get("logs", []))


def _processes():
    from . import processes
    return processes
