"""Counting a sweep: hosts by status, GPUs by SM family, findings by code and severity. Pure; shared by
every report format (the table's summary, the JSON's ``summary`` block)."""

from __future__ import annotations

import re
from collections import Counter

from gpudiag.model import Action, HostStatus, Severity, SweepReport

UNKNOWN_SM = "unknown"  # the gpus_by_sm key for GPUs whose SM family was not reported


# ---------------------------------------------------------------------------------------------- counts


def _natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort "SM90" before "SM100": digit runs compare as numbers."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part)


def hosts_by_status(report: SweepReport) -> dict[str, int]:
    """Every :class:`HostStatus` value (in declaration order, zeros included) → number of hosts."""
    counts = Counter(h.status for h in report.hosts)
    return {status.value: counts.get(status, 0) for status in HostStatus}


# How a summary says a host's status in words: "ok" beside a host with a critical finding reads as "healthy",
# where the status only says the host answered; the JSON keeps the status values themselves.
_STATUS_WORDS = {HostStatus.OK: "answered", HostStatus.PARTIAL: "answered in part"}


def hosts_by_status_words(report: SweepReport) -> dict[str, int]:
    """:func:`hosts_by_status` in a summary's words ("answered", "answered in part", "unreachable", ...)."""
    return {_STATUS_WORDS.get(HostStatus(value), value): n for value, n in hosts_by_status(report).items()}


def gpus_by_sm(report: SweepReport) -> dict[str, int]:
    """SM family ("SM90") → number of GPUs, families in numeric order, ``"unknown"`` last."""
    counts = Counter(g.sm or UNKNOWN_SM for h in report.hosts for g in h.gpus)
    known = sorted((sm for sm in counts if sm != UNKNOWN_SM), key=_natural_key)
    order = known + ([UNKNOWN_SM] if UNKNOWN_SM in counts else [])
    return {sm: counts[sm] for sm in order}


def findings_by_code(report: SweepReport) -> dict[str, int]:
    """Finding code → count, codes in alphabetical order."""
    counts = Counter(f.code for f in report.findings)
    return {code: counts[code] for code in sorted(counts)}


def findings_by_severity(report: SweepReport) -> dict[str, int]:
    """Every severity label (ok, warning, critical, unknown; zeros included) → count."""
    counts = Counter(f.severity for f in report.findings)
    return {severity.label: counts.get(severity, 0) for severity in Severity}


def hosts_by_action(report: SweepReport) -> dict[Action, int]:
    """Action → how many hosts it is the highest of (none left out), highest on the ladder first."""
    counts = Counter(h.action for h in report.hosts if h.action is not Action.NONE)
    return dict(sorted(counts.items(), key=lambda item: -item[0].rank))


def actions_phrase(report: SweepReport) -> str:
    """ "reboot_node (1 host), reset_gpu (2 hosts)", highest first; "" when no host needs anything."""
    return ", ".join(f"{action.label} ({n} host{'s' if n != 1 else ''})"
                     for action, n in hosts_by_action(report).items())


HELD_IDLE = "GPU_HELD_IDLE"


def held_idle(report: SweepReport) -> tuple[int, float, dict[str, int]]:
    """The GPUs held and idle (GPU_HELD_IDLE): how many, the GiB their holders hold, and how many per owner (the
    holding process's user; "unknown" where not readable), most first."""
    found = [f for f in report.findings if f.code == HELD_IDLE]
    held = sum(float(v) for f in found if isinstance(v := f.evidence.get("used_memory_mib"), (int, float)))
    owners = Counter(str(f.evidence.get("user") or "unknown") for f in found)
    return len(found), round(held / 1024.0, 1), dict(owners.most_common())
