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

import re
from collections.abc import Mapping
from typing import Any

from gpudiag.logs.echo import ECHO_CHARS, facts_of
from gpudiag.logs.plan import LogPlan
from gpudiag.model import GpuLink, LogLine, LogMatch, LogScan, LogStatus, NodeContext, ServerFacts
from gpudiag.untrusted import integer as _int
from gpudiag.untrusted import items as _items
from gpudiag.untrusted import mapping as _mapping
from gpudiag.untrusted import text as _text

_GPU = re.compile(r"GPU(\d+)$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # nvidia-smi underlines the header on a terminal



def _line(value: object) -> LogLine | None:
    raw = _mapping(value)
    seq, text = _int(raw.get("seq")), _text(raw.get("text"))
    return LogLine(seq=seq, text=text) if seq is not None and text is not None else None


def _lines(value: object) -> tuple[LogLine, ...]:
    return tuple(line for line in (_line(v) for v in _items(value)) if line is not None)


def _pairs(value: object) -> tuple[tuple[str, str], ...]:
    return tuple((str(k), str(v)) for k, v in _mapping(value).items() if isinstance(v, (str, int, float)))


def _matches(name: str, raw: Mapping[str, Any]) -> list[LogMatch]:
    common: dict[str, Any] = {"signature": name, "last_seq": _int(raw.get("last_seq")),
                              "values": _pairs(raw.get("values"))}
    count, older = _int(raw.get("count")) or 0, _int(raw.get("older")) or 0
    group_by = [str(g) for g in _items(raw.get("group_by"))]
    if group_by:  # one match per distinct key (the node kept the first and last line of each)
        found = []
        for entry in (e for e in _items(raw.get("keys")) if isinstance(e, dict)):
            key = tuple(zip(group_by, (str(k) for k in _items(entry.get("key"))), strict=False))
            found.append(LogMatch(count=_int(entry.get("count")) or 0, first=_line(entry.get("first")),
                                  last=_line(entry.get("last")), key=key, **common))
        if older:  # the lines before the time window, counted without their keys
            found.append(LogMatch(count=0, older=older, **common))
        return found
    if not count and not older:
        return []
    return [LogMatch(count=count, older=older, first=_line(raw.get("first")), last=_line(raw.get("last")),
                     recent=_lines(raw.get("recent")), **common)]


def _facts(name: str, raw: Mapping[str, Any], plan: LogPlan | None) -> ServerFacts | None:
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
    return ServerFacts(echo=name, server=echo.server if echo else None, count=count, seq=_int(raw.get("seq")),
                       values=values)


def parse_log_scan(raw: Mapping[str, Any], plan: LogPlan | None = None) -> LogScan:
    """One source's part of the document → a :class:`LogScan`."""
    status_text = _text(raw.get("status")) or "error"
    try:
        status = LogStatus(status_text)
    except ValueError:
        status = LogStatus.ERROR
    matches = [m for name, entry in _mapping(raw.get("matches")).items() if isinstance(entry, dict)
               for m in _matches(str(name), entry)]
    facts = [f for name, entry in _mapping(raw.get("echoes")).items() if isinstance(entry, dict)
             for f in (_facts(str(name), entry, plan),) if f is not None]
    return LogScan(
        path=_text(raw.get("path")) or "?", status=status, error=_text(raw.get("error")),
        resolved=_text(raw.get("resolved")), source=_text(raw.get("source")),
        files=tuple(str(f) for f in _items(raw.get("files"))), bytes_scanned=_int(raw.get("bytes")) or 0,
        lines=_int(raw.get("lines")) or 0, cut=bool(raw.get("cut")),
        notes=tuple(str(n) for n in _items(raw.get("notes"))), matches=tuple(matches), facts=tuple(facts))


def parse_logs(value: object, plan: LogPlan | None = None) -> tuple[LogScan, ...]:
    """The document's ``logs`` list (absent: no logs were asked for)."""
    return tuple(parse_log_scan(raw, plan) for raw in _items(value) if isinstance(raw, dict))


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
            continue
        head = _GPU.match(cells[0]) if cells else None
        if head is None:
            if rows and not line.strip():
                break  # the blank line before the legend
            continue
        rows[int(head.group(1))] = cells[1:1 + len(columns)]
    links = []
    for a, cells in sorted(rows.items()):
        for b, cell in zip(columns, cells, strict=False):
            if b > a and cell and cell.upper() != "X":
                links.append(GpuLink(gpu_a=a, gpu_b=b, link=cell))
    return tuple(links)


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
    elif topo.get("exit") == 0:
        text = _text(topo.get("stdout")) or ""
        links = parse_topology(text)
        gpu_rows = sum(1 for line in text.splitlines()  # the matrix's rows, not its header ("GPU0 CPU Affinity")
                       if re.match(r"GPU\d+\s", line.strip()) and "Affinity" not in line)
        if not links and gpu_rows != 1:  # one GPU has no pairs to list: nothing is missing
            topology_error = "nvidia-smi topo -m listed no GPU pair"
    else:
        why = (_text(topo.get("stderr")) or _text(topo.get("stdout")) or "").strip().splitlines()
        topology_error = f"nvidia-smi topo -m: exit {topo.get('exit')}" + (f": {why[0][:200]}" if why else "")
    virt = _mapping(value.get("virt"))
    dmi = _mapping(value.get("dmi"))
    flag = value.get("hypervisor_flag")
    return NodeContext(
        links=links, topology_error=topology_error,
        virtualization=_text(virt.get("vm")) if virt else None,
        container=_text(virt.get("container")) if virt else None,
        dmi_product_name=_text(dmi.get("product_name")), dmi_sys_vendor=_text(dmi.get("sys_vendor")),
        hypervisor_flag=flag if isinstance(flag, bool) else None)

