"""The collector's ``nccl_ras`` part (``collectors/gpudiag_node/nccl_ras.py``: NCCL's RAS thread's raw answer)
→ :class:`~gpudiag.model.nccl_ras.NcclRasStatus`.

Untrusted input, bounded: the answer is read up to :data:`MAX_ANSWER_CHARS`, at most :data:`MAX_COMMUNICATORS`
communicators of at most :data:`MAX_RANKS` ranks each, :data:`MAX_LINES` lines of text. Two formats, both as
NCCL's ``src/ras/client_support.cc`` writes them:

* JSON (NCCL 2.28 and later, after ``SET FORMAT json``; ``rasDumpCommsToJSON``): ``nccl_version``,
  ``communicators`` each with ``size``, ``ranks_count``, ``ranks`` (``rank``, ``host``, ``pid``, ``cuda_dev``,
  ``collective_counts`` per operation) and ``missing_ranks`` (``status.unresponsive``,
  ``status.considered_dead``), and ``ras.timeouts_count``. A rank lags when it launched fewer of an operation
  than the most any rank of its communicator launched: the others wait for it in that collective.
* text (older NCCL; ``rasClientRunInit``, ``rasClientRunComms``): the "Job summary" table, the communicators
  table, and the ``Rank N -- GPU g managed by process p on node h`` lines under INCOMPLETE, DEAD and
  MISMATCH ("has launched up to operation N", "has not launched any operations").
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from gpudiag.collect.untrusted import integer, items, mapping, seconds, short, text
from gpudiag.model.nccl_ras import NcclRasStatus, RasRank
from gpudiag_node.wire import BY_SECTION

# The collector sends at most 256 KiB; a node claiming more is cut here.
MAX_ANSWER_CHARS = BY_SECTION["nccl_ras"].bound[0]
MAX_COMMUNICATORS = 64
MAX_RANKS = 4096  # per communicator
MAX_LINES = 20_000
MAX_NAMED = 256  # missing or lagging ranks kept
HOST_CHARS = 64


def parse_nccl_ras(value: object) -> NcclRasStatus | None:
    """The status, or None when the collector did not ask (no GPU process, or RAS disabled in the job)."""
    raw = mapping(value)
    if not raw or raw.get("asked") is False:
        return None
    common: dict[str, Any] = {
        "port": integer(raw.get("port")), "asked_from": short(raw.get("from"), 80),
        "truncated": raw.get("truncated") is True, "elapsed_s": seconds(raw.get("elapsed_s"))}
    answer = (text(raw.get("answer")) or "")[:MAX_ANSWER_CHARS]
    error = short(raw.get("error"), 200)
    if not answer.strip():
        return NcclRasStatus(answered=False, error=error or "no answer", **common)
    if raw.get("format") == "json" or answer.lstrip().startswith("{"):
        try:
            doc = json.loads(answer)
        except ValueError:
            return NcclRasStatus(answered=False, answer_format="json",
                                 error=error or "its JSON answer could not be read", **common)
        return _from_json(mapping(doc), common)
    return _from_text(answer, common)


def _host(value: object) -> str | None:
    host = short(value, HOST_CHARS)
    return host if host and host != "unknown" else None


def _rank(entry: Mapping[str, Any], state: str, detail: str | None = None) -> RasRank | None:
    rank = integer(entry.get("rank"))
    if rank is None or rank < 0:
        return None
    return RasRank(rank=rank, state=state, host=_host(entry.get("host")), pid=integer(entry.get("pid")),
                   gpu=integer(entry.get("cuda_dev")), detail=detail)


def _lagging(ranks: list[Mapping[str, object]]) -> list[RasRank]:
    """The ranks that launched fewer of some operation than the most any rank of the communicator did."""
    counts = [mapping(r.get("collective_counts")) for r in ranks]
    ops = sorted({op for c in counts for op in list(c)[:16] if isinstance(op, str)})
    lagging: list[RasRank] = []
    named: set[int] = set()
    for op in ops:
        values = [integer(c.get(op)) for c in counts]
        known = [v for v in values if v is not None]
        if len(known) < 2:
            continue
        most = max(known)
        for entry, v in zip(ranks, values, strict=True):
            if v is not None and v < most and id(entry) not in named:
                found = _rank(entry, "lagging", f"{short(op, 32)} {v}, the others up to {most}")
                if found is not None:
                    named.add(id(entry))
                    lagging.append(found)
    return lagging


def _from_json(doc: Mapping[str, Any], common: dict[str, Any]) -> NcclRasStatus:
    comms = [mapping(c) for c in items(doc.get("communicators"))[:MAX_COMMUNICATORS]]
    missing: list[RasRank] = []
    lagging: list[RasRank] = []
    nodes: dict[str, None] = {}
    largest: Mapping[str, object] = {}
    for comm in comms:
        ranks = [mapping(r) for r in items(comm.get("ranks"))[:MAX_RANKS]]
        gone = [mapping(r) for r in items(comm.get("missing_ranks"))[:MAX_RANKS]]
        for entry in ranks + gone:
            host = _host(entry.get("host"))
            if host is not None and len(nodes) < MAX_NAMED:
                nodes.setdefault(host)
        for entry in gone:
            status = mapping(entry.get("status"))
            state = "dead" if status.get("considered_dead") is True else \
                "missing" if status.get("unresponsive") is True else "not in the communicator"
            found = _rank(entry, state)
            if found is not None and len(missing) < MAX_NAMED:
                missing.append(found)
        lagging.extend(_lagging(ranks)[:MAX_NAMED - len(lagging)])
        if (integer(comm.get("size")) or 0) > (integer(largest.get("size")) or 0):
            largest = comm
    return NcclRasStatus(
        answered=True, answer_format="json", nccl_version=short(doc.get("nccl_version"), 40),
        communicators=integer(doc.get("communicators_count")) if doc.get("communicators_count") is not None
        else len(comms),
        ranks=integer(largest.get("size")), ranks_answering=integer(largest.get("ranks_count")),
        node_count=len(nodes) or None, nodes=tuple(sorted(nodes)), missing_ranks=_unique(missing),
        lagging_ranks=_unique(lagging),
        timeouts=integer(mapping(doc.get("ras")).get("timeouts_count")), **common)


def _unique(ranks: list[RasRank]) -> tuple[RasRank, ...]:
    """Each (rank, node, process) once: a process is a rank of several communicators."""
    seen: dict[tuple[int, str | None, int | None], RasRank] = {}
    for r in ranks:
        seen.setdefault((r.rank, r.host, r.pid), r)
    return tuple(seen.values())


# ---------------------------------------------------------------------------------------------- text

_VERSION = re.compile(r"^NCCL version (\S+)")
_NUMBERS = re.compile(r"^\s*(\d+(?:\s+\d+)*)\s*$")
_COMM_ROW = re.compile(r"^\s*\d+\s+(\d+)\s+(\d+)\s+\S+\s+(\d+)\s+(\d+)\s+([A-Z]+)\s+(\S+)\s*$")
_RANK_LINE = re.compile(r"^\s*Rank (\d+)(?P<what>[^-]*)-- GPU (?P<gpu>\d+)[^-]*managed by process (?P<pid>-?\d+) "
                        r"on node (?P<host>\S+)")
_GROUP_LINE = re.compile(r"^\s*\d+ ranks have (?:launched up to operation (\d+)|not launched any operations)")
_LAUNCHED = re.compile(r"has launched up to operation (\d+)")
_PROCESS_LINE = re.compile(r"^\s*Process (\d+) on node (\S+) managing GPUs? (\d+)")
_TIMEOUTS = re.compile(r"Encountered (\d+) communication timeout")


def _from_text(answer: str, common: dict[str, Any]) -> NcclRasStatus:
    """The text answer: the job summary's counts, the communicators table, and every rank an error or
    warning block names (INCOMPLETE: missing; operation counts that differ: the ranks behind the most
    launched lag)."""
    version = None
    nodes: dict[str, None] = {}
    missing: list[RasRank] = []
    counted: list[tuple[RasRank, int]] = []  # ranks of "different ... operation counts" blocks, with theirs
    ranks = answering = timeouts = None
    communicators = 0
    section = block = ""
    summary: list[int] | None = None
    group_op: int | None = None
    most = 0
    for line in answer.splitlines()[:MAX_LINES]:
        line = line[:500]
        stripped = line.strip()
        if (m := _VERSION.match(line)) is not None:
            version = m.group(1)[:40]
        if stripped in ("Job summary", "Errors", "Warnings") or stripped.startswith("Communicators..."):
            section, block = stripped.split("...")[0], ""
            continue
        if line and not line.startswith(" "):
            block = stripped  # "INCOMPLETE", "DEAD", "#0-0 (hash) MISMATCH"
        if stripped.startswith("Communicator ranks have different"):
            block, group_op = stripped, None
        if section == "Job summary" and summary is None and (m := _NUMBERS.match(line)) is not None:
            summary = [int(n) for n in m.group(1).split()]
        elif section == "Communicators" and (m := _COMM_ROW.match(line)) is not None:
            communicators += int(m.group(1))
            size = int(m.group(3))
            if ranks is None or size > ranks:
                ranks, answering = size, None if "INCOMPLETE" in m.group(6) else size
        elif (m := _GROUP_LINE.match(line)) is not None:
            group_op = int(m.group(1)) if m.group(1) else 0
            most = max(most, group_op)
        elif (m := _RANK_LINE.match(line)) is not None:
            host = short(m.group("host"), HOST_CHARS)
            if host:
                nodes.setdefault(host)
            rank = RasRank(rank=int(m.group(1)), state="missing", host=host, pid=int(m.group("pid")),
                           gpu=int(m.group("gpu")))
            if "operation counts" in block:
                own = _LAUNCHED.search(m.group("what"))
                op = int(own.group(1)) if own else 0 if "not launched" in m.group("what") else group_op
                if op is not None:
                    most = max(most, op)
                    counted.append((rank, op))
            elif "INCOMPLETE" in block:
                missing.append(rank)
        elif (m := _PROCESS_LINE.match(line)) is not None and block in ("INCOMPLETE", "DEAD"):
            nodes.setdefault(m.group(2)[:HOST_CHARS])
        elif (m := _TIMEOUTS.search(line)) is not None:
            timeouts = int(m.group(1))
    lagging = [RasRank(rank=r.rank, state="lagging", host=r.host, pid=r.pid, gpu=r.gpu,
                       detail=f"launched up to operation {op}, the others up to {most}")
               for r, op in counted if op < most]
    if summary and ranks is None and len(summary) == 5:
        ranks = summary[3]
    node_count = summary[0] if summary and len(summary) in (3, 5) else None
    return NcclRasStatus(answered=True, answer_format="text", nccl_version=version,
                         communicators=communicators or None, ranks=ranks, ranks_answering=answering,
                         node_count=node_count, nodes=tuple(sorted(nodes)[:MAX_NAMED]),
                         missing_ranks=_unique(missing[:MAX_NAMED]), lagging_ranks=_unique(lagging[:MAX_NAMED]),
                         timeouts=timeouts, **common)
