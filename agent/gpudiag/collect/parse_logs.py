"""The probe document's ``logs`` and ``context`` parts → :class:`LogScan` and :class:`NodeContext`. Pure.

Like the rest of the document they come from a remote machine: every part is type-checked as it is read,
and a part of the wrong type reads as "not reported". Configuration echoes are turned into facts here,
with the echo definitions of the host's plan (which format, which facts matter).

``nvidia-smi topo -m`` prints a tab-separated matrix (driver 5xx)::

            GPU0    GPU1    NIC0    CPU Affinity    NUMA Affinity   GPU NUMA ID
    GPU0     X      NV18    PXB     0-55,112-167    0               N/A
    GPU1    NV18     X      PXB     0-55,112-167    0               N/A

followed by a legend. Only the GPU-by-GPU block is read; NIC columns and affinities are ignored.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

from gpudiag.collect.untrusted import Claims, short, texts
from gpudiag.collect.untrusted import integer as _int
from gpudiag.collect.untrusted import items as _items
from gpudiag.collect.untrusted import mapping as _mapping
from gpudiag.collect.untrusted import text as _text
from gpudiag.logs.echo import ECHO_CHARS, facts_of
from gpudiag.logs.plan import LogPlan
from gpudiag.model import GpuLink, LogLine, LogMatch, LogScan, LogStatus, NodeContext, ServerFacts
from gpudiag_node.wire import BY_SECTION

_GPU = re.compile(r"GPU(\d{1,4})$", re.ASCII)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # nvidia-smi underlines the header on a terminal

# What one host's logs may claim (issue 14): the node keeps less than this (collectors/gpudiag_node/logscan.py); a
# document past it is hostile or broken, and the excess is a problem of the host, not controller memory.
MAX_SOURCES = BY_SECTION["logs"].bound[0]
MAX_MATCHES = 1024  # in all of one host's logs, counting one per group_by key
MAX_RECENT = 100  # recent lines per signature (gpudiag grep --lines)
MAX_LOG_LINES = 4096  # lines kept in all of one host's logs (first, last, recent)
MAX_KEYS = 64
MAX_VALUES = 64
MAX_FACTS = 64
MAX_LIST = 16  # files, notes
LINE_CHARS = 2000
PATH_CHARS = 4096
VALUE_CHARS = 200
TOPOLOGY_GPUS = BY_SECTION["context"].bound[0]  # GPUs of the topology matrix read


def _line(value: object, claims: Claims) -> LogLine | None:
    if value is None or not claims.allow("log lines", 1, MAX_LOG_LINES):
        return None
    raw = _mapping(value)
    seq, text = _int(raw.get("seq")), short(raw.get("text"), LINE_CHARS)
    return LogLine(seq=seq, text=text) if seq is not None and text is not None else None


def _lines(value: object, claims: Claims) -> tuple[LogLine, ...]:
    kept = claims.cap(value if isinstance(value, list) else [], MAX_RECENT, "recent lines of one signature")
    return tuple(line for line in (_line(v, claims) for v in kept) if line is not None)


def _pairs(value: object, claims: Claims) -> tuple[tuple[str, str], ...]:
    values = _mapping(value)
    if len(values) > MAX_VALUES:
        claims.over("captured values", f"a signature sent {len(values)} captured values; the first "
                                       f"{MAX_VALUES} are read")
    return tuple((str(k)[:VALUE_CHARS], str(v)[:VALUE_CHARS]) for k, v in itertools.islice(values.items(), MAX_VALUES)
                 if isinstance(v, (str, int, float)) and not isinstance(v, bool) and _sane(v))


def _sane(value: object) -> bool:
    return not isinstance(value, int) or _int(value) is not None


def _matches(name: str, raw: Mapping[str, object], claims: Claims) -> list[LogMatch]:
    common: dict[str, Any] = {"signature": name[:VALUE_CHARS], "last_seq": _int(raw.get("last_seq")),
                              "values": _pairs(raw.get("values"), claims)}
    count, older = _int(raw.get("count")) or 0, _int(raw.get("older")) or 0
    group_by = list(texts(raw.get("group_by"), MAX_VALUES, VALUE_CHARS))
    if group_by:  # one match per distinct key (the node kept the first and last line of each)
        found = []
        keys = raw.get("keys")
        entries = claims.cap(keys if isinstance(keys, list) else [], MAX_KEYS, "group_by keys of one signature")
        for entry in (e for e in entries if isinstance(e, dict)):
            key = tuple(zip(group_by, (str(k)[:VALUE_CHARS] for k in _items(entry.get("key"))
                                       if isinstance(k, (str, int))), strict=False))
            found.append(LogMatch(count=_int(entry.get("count")) or 0, first=_line(entry.get("first"), claims),
                                  last=_line(entry.get("last"), claims), key=key, **common))
        if older:  # the lines before the time window, counted without their keys
            found.append(LogMatch(count=0, older=older, **common))
        return found
    if not count and not older:
        return []
    return [LogMatch(count=count, older=older, first=_line(raw.get("first"), claims),
                     last=_line(raw.get("last"), claims), recent=_lines(raw.get("recent"), claims), **common)]


def _facts(name: str, raw: Mapping[str, object], plan: LogPlan | None) -> ServerFacts | None:
    count = _int(raw.get("count")) or 0
    if not count:
        return None
    echo = plan.echo(name) if plan is not None else None
    text = _text(raw.get("text")) or ""
    start = _int(raw.get("start"))
    values: tuple[tuple[str, Any], ...] = ()
    # The node matched the echo's regex and says where the match ended: no pack regex runs here, on text a
    # node sent (a slow regex would cost the controller, which has no deadline of its own for it).
    if echo is not None and start is not None and 0 <= start <= min(len(text), ECHO_CHARS):
        values = facts_of(echo.format, text, start, echo.facts, dict(echo.aliases))
    return ServerFacts(echo=name[:VALUE_CHARS], server=echo.server if echo else None, count=count,
                       seq=_int(raw.get("seq")), values=values)


def parse_log_scan(raw: Mapping[str, object], plan: LogPlan | None = None, claims: Claims | None = None) -> LogScan:
    """One source's part of the document → a :class:`LogScan`; what it claims past the bounds is cut and
    recorded in ``claims``."""
    claims = claims if claims is not None else Claims()
    status_text = _text(raw.get("status")) or "error"
    try:
        status = LogStatus(status_text)
    except ValueError:
        status = LogStatus.ERROR
    matches: list[LogMatch] = []
    for name, entry in _mapping(raw.get("matches")).items():
        if isinstance(entry, dict):
            if not claims.allow("log matches", 1, MAX_MATCHES):
                break  # the rest of this host's matches are not read at all
            found = _matches(str(name), entry, claims)
            matches.extend(found[:1 + claims.allow("log matches", len(found) - 1, MAX_MATCHES)])
    echoes = _mapping(raw.get("echoes"))
    if len(echoes) > MAX_FACTS:
        claims.over("echoes", f"a log's scan sent {len(echoes)} configuration echoes; the first {MAX_FACTS} "
                              "are read")
    facts = [f for name, entry in itertools.islice(echoes.items(), MAX_FACTS) if isinstance(entry, dict)
             for f in (_facts(str(name), entry, plan),) if f is not None]
    for key in ("files", "notes"):
        listed = raw.get(key)
        claims.cap(listed if isinstance(listed, list) else [], MAX_LIST, f"{key} of one log")
    return LogScan(
        path=short(raw.get("path"), PATH_CHARS) or "?", status=status, error=short(raw.get("error"), LINE_CHARS),
        resolved=short(raw.get("resolved"), PATH_CHARS), source=short(raw.get("source")),
        files=texts(raw.get("files"), MAX_LIST, PATH_CHARS), bytes_scanned=_int(raw.get("bytes")) or 0,
        lines=_int(raw.get("lines")) or 0, cut=bool(raw.get("cut")),
        notes=texts(raw.get("notes"), MAX_LIST, LINE_CHARS), matches=tuple(matches), facts=tuple(facts),
        **_found(_mapping(raw.get("found"))))


def _found(found: Mapping[str, object]) -> dict[str, str | None]:
    """How the node found a log it was not told of: {"pid", "server", "fds", "via"} → found_from (words)."""
    if not found:
        return {}
    fds = [fd for fd in _items(found.get("fds")) if fd in (1, 2)]
    streams = " and ".join({1: "stdout", 2: "stderr"}[fd] for fd in fds) or "output"
    server = short(found.get("server"))
    via = short(found.get("via"), PATH_CHARS)
    where = ", ".join(p for p in (server, via) if p)
    return {"found_from": f"{streams} of pid {_int(found.get('pid'))}" + (f" ({where})" if where else ""),
            "found_server": server}


def parse_logs(value: object, plan: LogPlan | None = None, claims: Claims | None = None) -> tuple[LogScan, ...]:
    """The document's ``logs`` list (absent: no logs were asked for); ``claims`` collects the excess."""
    claims = claims if claims is not None else Claims()
    sources = claims.cap([raw for raw in _items(value) if isinstance(raw, dict)], MAX_SOURCES, "log sources")
    return tuple(parse_log_scan(raw, plan, claims) for raw in sources)


def parse_topology(text: str) -> tuple[GpuLink, ...]:
    """``nvidia-smi topo -m`` text → every GPU pair once (lower index first), as the matrix names the link."""
    rows: dict[int, list[str]] = {}
    columns: list[int] = []
    for line in _ANSI.sub("", text).splitlines():
        cells = [c.strip() for c in line.split("\t")]
        if len(cells) < 2:
            cells = line.split()
        if not columns:
            header = [_GPU.match(c) for c in cells if c]
            if header and header[0] is not None:
                columns = [int(m.group(1)) for m in header if m is not None]
                # the header's GPU columns come first; stop at the first non-GPU column (NIC0, CPU Affinity)
                columns = columns[: next((i for i, m in enumerate(header) if m is None), len(header))]
                columns = columns[:TOPOLOGY_GPUS]  # a node's matrix past this is junk: bounded pairs
            continue
        head = _GPU.match(cells[0]) if cells else None
        if head is None:
            if rows and not line.strip():
                break  # the blank line before the legend
            continue
        if len(rows) < TOPOLOGY_GPUS:
            rows[int(head.group(1))] = cells[1:1 + len(columns)]
    links = []
    for a, cells in sorted(rows.items()):
        for b, cell in zip(columns, cells, strict=False):
            if b > a and cell and cell.upper() != "X":
                links.append(GpuLink(gpu_a=a, gpu_b=b, link=cell))
    return tuple(links)


def nvml_pairs(value: object) -> tuple[GpuLink, ...]:
    """NVML's ``[[a, b, "NV18"], ...]`` → every pair once (lower index first), at most the matrix's bound of GPUs."""
    links: dict[tuple[int, int], str] = {}
    for pair in _items(value):
        if not isinstance(pair, list) or len(pair) != 3:
            continue
        a, b, name = _int(pair[0]), _int(pair[1]), short(pair[2], 16)
        if a is None or b is None or a == b or not name or max(a, b) >= TOPOLOGY_GPUS or min(a, b) < 0:
            continue
        links.setdefault((min(a, b), max(a, b)), name)
    return tuple(GpuLink(gpu_a=a, gpu_b=b, link=name) for (a, b), name in sorted(links.items()))


def parse_context(value: object) -> NodeContext | None:
    """The document's ``context`` part (absent: not collected)."""
    if not isinstance(value, dict):
        return None
    topo = _mapping(value.get("topology"))
    links: tuple[GpuLink, ...] = ()
    topology_error = None
    if value.get("topology_skipped"):
        pass  # not read: no GPU looked starved, so no verdict needed it
    elif not topo:
        topology_error = "nvidia-smi is not installed"
    elif "pairs" in topo:  # read through NVML (gpudiag_node.topology), named as topo -m names them
        links = nvml_pairs(topo.get("pairs"))
        if not links and (_int(topo.get("gpus")) or 0) > 1:
            topology_error = "NVML named no GPU pair"
    elif topo.get("exit") == 0:
        text = _text(topo.get("stdout")) or ""
        links = parse_topology(text)
        gpu_rows = sum(1 for line in text.splitlines()  # the matrix's rows, not its header ("GPU0 CPU Affinity")
                       if re.match(r"GPU\d+\s", line.strip(), re.ASCII) and "Affinity" not in line)
        if not links and gpu_rows != 1:  # one GPU has no pairs to list: nothing is missing
            topology_error = "nvidia-smi topo -m listed no GPU pair"
    else:
        why = (short(topo.get("stderr"), 1000) or short(topo.get("stdout"), 1000) or "").strip().splitlines()
        topology_error = f"nvidia-smi topo -m: exit {_int(topo.get('exit'))}" + (f": {why[0][:200]}" if why else "")
    virt = _mapping(value.get("virt"))
    dmi = _mapping(value.get("dmi"))
    flag = value.get("hypervisor_flag")
    return NodeContext(
        links=links, topology_error=topology_error,
        virtualization=short(virt.get("vm")) if virt else None,
        container=short(virt.get("container")) if virt else None,
        dmi_product_name=short(dmi.get("product_name")), dmi_sys_vendor=short(dmi.get("sys_vendor")),
        hypervisor_flag=flag if isinstance(flag, bool) else None)

