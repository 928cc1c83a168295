"""Log evidence as findings: pure functions of the readings and the host's log plan.

* ``LOG_SIGNATURE`` - a warning or critical signature matched (count, first and last line);
* ``LOG_EXPECTED_ABSENT`` - the configuration says lines should follow the server's start, and none did;
* ``LOG_UNREADABLE`` (unknown) - a configured log is missing or unreadable on the node;
* ``XID`` - an Xid event of the NVIDIA driver, one finding per GPU and Xid, severity from the Xid table;
* ``XID_STORM`` - beside it, when the same Xid hit the same GPU ``xid_storm_lines`` times or more in the
  window the kernel log covers: the count and the rate per hour.
"""

from __future__ import annotations

import re

from gpudiag.logs.echo import same_value, show
from gpudiag.logs.plan import KERNEL, LogPlan, LogSource
from gpudiag.logs.xid import XidInfo, describe, gpu_index
from gpudiag.model import (
    CheckSettings,
    Finding,
    LogMatch,
    LogScan,
    LogStatus,
    NodeReadings,
    ServerFacts,
    Severity,
)

DEFAULT_SETTINGS = CheckSettings()
SEVERITY = {"warning": Severity.WARNING, "critical": Severity.CRITICAL}
QUOTE_CHARS = 160  # a log line quoted in a summary
_FIELD = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def _quote(text: str | None, limit: int = QUOTE_CHARS) -> str:
    if not text:
        return ""
    text = " ".join(text.split())
    return f'"{text if len(text) <= limit else text[:limit] + "..."}"'


def _times(n: int) -> str:
    return f"{n} line{'s' if n != 1 else ''}"


def _window(source: LogSource | None) -> str:
    return f" in the last {source.since_hours:g} h" if source and source.since_hours else ""


def _where(scan: LogScan) -> str:
    return "the kernel log" if scan.path == KERNEL else scan.path


def log_unreadable(host: str, scan: LogScan) -> tuple[Finding, ...]:
    """LOG_UNREADABLE: the log is missing or unreadable; its evidence is missing, so this is UNKNOWN."""
    if scan.status is LogStatus.OK:
        return ()
    if scan.path == KERNEL:
        advice = "let the SSH user read the journal (group systemd-journal or adm) or the kernel ring buffer"
    else:
        advice = "fix the path in the inventory or --log, or let the SSH user read it"
    resolved = f" ({scan.resolved})" if scan.resolved and scan.resolved != scan.path else ""
    summary = f"{_where(scan)}{resolved}: {scan.error or scan.status.value} - its log evidence is missing; {advice}"
    return (Finding(code="LOG_UNREADABLE", severity=Severity.UNKNOWN, host=host, gpu=None, summary=summary,
                    evidence={"log": scan.path, **_found(scan), "resolved": scan.resolved, "status": scan.status.value,
                              "error": scan.error}),)


def _found(scan: LogScan) -> dict[str, object]:
    """A log found through a process, not configured: the server that writes it (the fingerprint names the
    log by it, not by a path that may hold the process's pid)."""
    return {"found_server": scan.found_server} if scan.found_from and scan.found_server else {}


def _match_evidence(scan: LogScan, match: LogMatch) -> dict[str, object]:
    return {"log": scan.path, **_found(scan), "signature": match.signature, "count": match.count, "older": match.older,
            "first_line": match.first.text if match.first else None,
            "last_line": match.last.text if match.last else None, **dict(match.values)}


def log_signatures(host: str, scan: LogScan, source: LogSource) -> tuple[Finding, ...]:
    """LOG_SIGNATURE: every warning or critical signature that matched in the window."""
    findings = []
    for sig in source.signatures:
        if sig.severity == "info" or sig.report != "signature":
            continue
        for match in scan.found(sig.name):
            if not match.count:
                continue
            last = _quote(match.last.text if match.last else None)
            summary = (f"{_where(scan)}: {sig.meaning or sig.name} ({_times(match.count)}{_window(source)}, "
                       f"last {last})" + (f" - {sig.action}" if sig.action else ""))
            findings.append(Finding(code="LOG_SIGNATURE", severity=SEVERITY[sig.severity], host=host, gpu=None,
                                    summary=summary, evidence={**_match_evidence(scan, match), "pack": sig.pack}))
    return tuple(findings)


def _storm(host: str, index: int | None, where: str, info: XidInfo, scan: LogScan, source: LogSource,
           match: LogMatch, settings: CheckSettings) -> tuple[Finding, ...]:
    """XID_STORM: the same Xid on the same GPU ``xid_storm_lines`` times or more in the window."""
    if match.count < settings.xid_storm_lines:
        return ()
    hours = source.since_hours
    rate = f", {match.count / hours:.1f} an hour" if hours else ""
    summary = (f"Xid {info.xid} ({info.name}) storm on {where}: {_times(match.count)} in {_where(scan)}"
               f"{_window(source)}{rate} - not one event but a GPU that keeps failing: "
               f"{info.advice}, and if it goes on, take the GPU out of service")
    return (Finding(code="XID_STORM", severity=max(info.severity, Severity.WARNING, key=lambda s: s.rank),
                    host=host, gpu=index, summary=summary,
                    evidence={"log": scan.path, **_found(scan), "xid": info.xid, "xid_name": info.name,
                              "pci": dict(match.key).get("pci"), "count": match.count, "since_hours": hours,
                              "per_hour": round(match.count / hours, 2) if hours else None,
                              "xid_storm_lines": settings.xid_storm_lines}),)


def xid_events(host: str, scan: LogScan, source: LogSource, node: NodeReadings,
               settings: CheckSettings = DEFAULT_SETTINGS) -> tuple[Finding, ...]:
    """XID: one finding per GPU (by PCI address) and Xid code, as the Xid table rates it; XID_STORM beside it
    when that Xid came many times."""
    findings = []
    for sig in source.signatures:
        if sig.report != "xid":
            continue
        for match in scan.found(sig.name):
            key = dict(match.key) or dict(match.values)
            if not match.count or not key.get("xid", "").isdigit():
                continue
            info = describe(int(key["xid"]))
            pci = key.get("pci")
            index = gpu_index(pci, node.gpus)
            where = f"GPU {index} ({pci})" if index is not None else f"PCI {pci} (no GPU of this node has it)"
            last = _quote(match.last.text if match.last else None)
            summary = (f"Xid {info.xid} ({info.name}) on {where}, {_times(match.count)} in {_where(scan)}"
                       f"{_window(source)}: {info.meaning} - {info.advice}; last {last}")
            findings.append(Finding(code="XID", severity=info.severity, host=host, gpu=index, summary=summary,
                                    evidence={**_match_evidence(scan, match), "xid": info.xid, "xid_name": info.name,
                                              "pci": pci, "since_hours": source.since_hours}))
            findings.extend(_storm(host, index, where, info, scan, source, match, settings))
    return tuple(findings)


def _fill(template: str, facts: ServerFacts, extra: dict[str, object]) -> str:
    def value(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in extra:
            return str(extra[name])
        fact = facts.get(name)
        return "not reported" if fact is None else show(fact)

    return _FIELD.sub(value, template)


def expectations(host: str, scan: LogScan, source: LogSource) -> tuple[Finding, ...]:
    """LOG_EXPECTED_ABSENT: the configuration (last server start) says lines should follow, and none did."""
    findings = []
    for exp in source.expectations:
        facts = scan.echo(exp.echo)
        if facts is None or facts.seq is None:
            continue  # no such server start in this log: nothing to expect
        if not all(any(same_value(facts.get(key), w) for w in wanted) for key, wanted in exp.when):
            continue
        start = facts.seq

        def after_start(name: str, start: int = start) -> bool:
            return any(m.last_seq is not None and m.last_seq > start for m in scan.found(name))

        if not all(after_start(name) for name in exp.after):
            continue  # e.g. not ready yet: too early to miss anything
        if any(after_start(name) for name in exp.expect):
            continue
        lines_after = max(0, scan.lines - start)
        text = _fill(exp.meaning or f"no line of {', '.join(exp.expect)} followed the server's start", facts,
                     {"lines_after": lines_after, "path": scan.path, "echo": exp.echo})
        action = _fill(exp.action, facts, {"lines_after": lines_after, "path": scan.path, "echo": exp.echo})
        summary = f"{_where(scan)}: {text}" + (f" - {action}" if action else "")
        findings.append(Finding(
            code="LOG_EXPECTED_ABSENT", severity=SEVERITY[exp.severity], host=host, gpu=None, summary=summary,
            evidence={"log": scan.path, **_found(scan), "expectation": exp.name, "echo": exp.echo,
                      "server_start_line": start,
                      "lines_after_start": lines_after, "expected": ",".join(exp.expect),
                      **{key: facts.get(key) for key, _ in exp.when},
                      **{name: facts.get(name) for name in _FIELD.findall(exp.meaning + exp.action)
                         if facts.get(name) is not None}}))
    return tuple(findings)


def log_findings(host: str, node: NodeReadings, plan: LogPlan | None,
                 settings: CheckSettings = DEFAULT_SETTINGS) -> tuple[Finding, ...]:
    """Every log finding of one host, source by source in the plan's order."""
    if plan is None:
        return ()
    findings: list[Finding] = []
    for scan in node.logs:
        source = plan.source_of(scan.path, scan.found_server)
        if source is None:
            continue
        findings.extend(log_unreadable(host, scan))
        if scan.status is LogStatus.OK:
            findings.extend(xid_events(host, scan, source, node, settings))
            findings.extend(log_signatures(host, scan, source))
            findings.extend(expectations(host, scan, source))
    return tuple(findings)
