"""The ``logs`` and ``context`` keys of a host's ``node`` object in ``gpudiag.sweep/1``, and back.

Every field of :class:`LogScan`, :class:`LogMatch`, :class:`ServerFacts` and :class:`NodeContext` is written,
so :func:`gpudiag.report.json_report.from_document` rebuilds the same values. Pairs (a match's named-group
``values`` and ``key``, a server's facts) are written as JSON objects; ``context`` also carries the derived
``interconnect`` and ``is_vm``, which reading ignores.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudiag.model import GpuLink, LogLine, LogMatch, LogScan, LogStatus, NodeContext, ServerFacts


def _line(line: LogLine | None) -> dict[str, Any] | None:
    return None if line is None else {"seq": line.seq, "text": line.text}


def _match(match: LogMatch) -> dict[str, Any]:
    return {"signature": match.signature, "count": match.count, "older": match.older,
            "first": _line(match.first), "last": _line(match.last), "recent": [_line(x) for x in match.recent],
            "last_seq": match.last_seq, "values": dict(match.values), "key": dict(match.key)}


def _facts(facts: ServerFacts) -> dict[str, Any]:
    return {"echo": facts.echo, "server": facts.server, "count": facts.count, "seq": facts.seq,
            "values": dict(facts.values)}


def logs_document(scans: tuple[LogScan, ...]) -> list[dict[str, Any]]:
    """Each log source as the node read it: status, what was read, matches, and the server's facts."""
    return [{"path": s.path, "status": s.status.value, "error": s.error, "resolved": s.resolved, "source": s.source,
             "files": list(s.files), "bytes_scanned": s.bytes_scanned, "lines": s.lines, "cut": s.cut,
             "notes": list(s.notes), "matches": [_match(m) for m in s.matches], "facts": [_facts(f) for f in s.facts]}
            for s in scans]


def context_document(context: NodeContext | None) -> dict[str, Any] | None:
    """The node's topology (one entry per GPU pair) and virtualization; null when not collected."""
    if context is None:
        return None
    return {"links": [{"gpu_a": link.gpu_a, "gpu_b": link.gpu_b, "link": link.link, "kind": link.kind}
                      for link in context.links],
            "interconnect": context.interconnect, "topology_error": context.topology_error,
            "virtualization": context.virtualization, "container": context.container, "is_vm": context.is_vm,
            "dmi_product_name": context.dmi_product_name, "dmi_sys_vendor": context.dmi_sys_vendor,
            "hypervisor_flag": context.hypervisor_flag}


def _line_from(doc: Mapping[str, Any] | None) -> LogLine | None:
    return None if doc is None else LogLine(seq=int(doc["seq"]), text=str(doc["text"]))


def _pairs(doc: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    return tuple((str(k), v) for k, v in (doc or {}).items())


def logs_from(docs: Any) -> tuple[LogScan, ...]:
    scans = []
    for doc in docs or ():
        matches = tuple(LogMatch(
            signature=m["signature"], count=int(m["count"]), older=int(m.get("older", 0)),
            first=_line_from(m.get("first")), last=_line_from(m.get("last")),
            recent=tuple(x for x in (_line_from(r) for r in m.get("recent") or ()) if x is not None),
            last_seq=None if m.get("last_seq") is None else int(m["last_seq"]),
            values=tuple((k, str(v)) for k, v in _pairs(m.get("values"))),
            key=tuple((k, str(v)) for k, v in _pairs(m.get("key")))) for m in doc.get("matches") or ())
        facts = tuple(ServerFacts(echo=f["echo"], server=f.get("server"), count=int(f.get("count", 1)),
                                  seq=None if f.get("seq") is None else int(f["seq"]), values=_pairs(f.get("values")))
                      for f in doc.get("facts") or ())
        scans.append(LogScan(
            path=doc["path"], status=LogStatus(doc.get("status", "ok")), error=doc.get("error"),
            resolved=doc.get("resolved"), source=doc.get("source"), files=tuple(doc.get("files") or ()),
            bytes_scanned=int(doc.get("bytes_scanned", 0)), lines=int(doc.get("lines", 0)),
            cut=bool(doc.get("cut", False)), notes=tuple(doc.get("notes") or ()), matches=matches, facts=facts))
    return tuple(scans)


def context_from(doc: Mapping[str, Any] | None) -> NodeContext | None:
    if doc is None:
        return None
    return NodeContext(
        links=tuple(GpuLink(gpu_a=int(x["gpu_a"]), gpu_b=int(x["gpu_b"]), link=str(x["link"]))
                    for x in doc.get("links") or ()),
        topology_error=doc.get("topology_error"), virtualization=doc.get("virtualization"),
        container=doc.get("container"), dmi_product_name=doc.get("dmi_product_name"),
        dmi_sys_vendor=doc.get("dmi_sys_vendor"), hypervisor_flag=doc.get("hypervisor_flag"))
