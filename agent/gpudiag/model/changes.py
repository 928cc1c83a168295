"""What changed since the last recorded run, as values, and the fingerprint that knows a finding across runs:
per finding ``new``, ``ongoing`` or ``resolved``, per
host whether it came back, flapping findings named as such. :mod:`gpudiag.audit.changes` computes them from the
history; the reports (:mod:`gpudiag.report`) render them. Standard library only.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from gpudiag.model import Action, Finding, HostReport, Severity, SweepReport

NO_GPU = "-"  # the GPU part of the key of a host-wide finding
# Evidence that tells apart several findings of one code on one GPU or host: a log's signatures and
# expectations. An Xid is known by its code (and its PCI address where no GPU of the node has it).
# A held-idle GPU's holder (its job, container or pid; an allocated-idle GPU's job): another job is another streak.
_SUBJECT_KEYS = ("signature", "expectation", "holder")
_MASKED_UUID_CHARS = frozenset("0-")


class ChangeState(str, enum.Enum):
    """How a finding stands against the last run."""

    NEW = "new"  # open now, not open in the last run (every finding of the first run)
    ONGOING = "ongoing"  # open now and in the last run
    RESOLVED = "resolved"  # open in the last run, cleared now (its host answered)


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenFinding:
    """A finding as the history keeps it for one run."""

    fingerprint: str
    code: str
    severity: Severity
    host: str
    gpu: int | None
    gpu_key: str
    summary: str
    since: str  # started_at of the first run of its current streak (ISO 8601)
    runs: int  # consecutive runs it has been open, this one included
    carried: bool = False  # its host did not answer: kept open, not verified
    action: Action = Action.NONE  # what to do, as reported (repeats may have raised it)
    needed: Action | None = None  # what it asked for before repeats raised it (the history counts these)


@dataclass(frozen=True, slots=True, kw_only=True)
class PastRun:
    """One recorded run, as :func:`compare` needs it: when, each host's status, the findings open."""

    run_id: int
    started_at: str
    host_status: Mapping[str, str]  # host -> HostStatus value
    findings: tuple[OpenFinding, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class FindingChange:
    """One finding against the last run. ``flapping``: it changed state ``flap_changes`` times or more in the
    last ``flap_window`` runs; ``became_flapping``: this is the run where it started to flap (said once)."""

    state: ChangeState
    finding: OpenFinding
    flapping: bool = False
    became_flapping: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class HostChange:
    """A host whose answering changed: ``came_back`` (answers now, did not in the last run) or went away."""

    host: str
    status: str
    previous_status: str | None
    came_back: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class FlapRule:
    """Flapping: ``changes`` state changes or more (appeared or cleared) within the last ``window`` runs."""

    changes: int = 4
    window: int = 10


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeSet:
    """Every open finding of this run (new or ongoing), every resolved one, and the hosts that changed."""

    started_at: str
    previous_started_at: str | None  # None: the first recorded run
    findings: tuple[FindingChange, ...]
    hosts: tuple[HostChange, ...] = ()
    host_actions: Mapping[str, Action] = dataclasses.field(default_factory=dict)  # this run's, per swept host

    def of_state(self, state: ChangeState) -> tuple[FindingChange, ...]:
        return tuple(c for c in self.findings if c.state is state)

    @property
    def open_findings(self) -> tuple[OpenFinding, ...]:
        """What is open after this run (new, ongoing and carried): what the history records."""
        return tuple(c.finding for c in self.findings if c.state is not ChangeState.RESOLVED)

    @property
    def announced(self) -> tuple[FindingChange, ...]:
        """What is worth saying once (``--only-changes``, notifications): new and resolved findings that do
        not flap, and a flapping one once, on the run it started to flap."""
        return tuple(c for c in self.findings if (c.state is not ChangeState.ONGOING and not c.flapping)
                     or c.became_flapping)

    @property
    def newly_carried(self) -> tuple[FindingChange, ...]:
        """The findings carried because their host went away in this run (said once, with the host)."""
        gone = {h.host for h in self.hosts if not h.came_back}
        return tuple(c for c in self.findings if c.finding.carried and c.finding.host in gone)

    def by_fingerprint(self) -> dict[str, FindingChange]:
        return {c.finding.fingerprint: c for c in self.findings}


def epoch_of(iso: str) -> float:
    """ISO 8601 (``Z`` or an offset) → seconds since the epoch."""
    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


# ------------------------------------------------------------------------------------------ fingerprints


def _masked(uuid: str) -> bool:
    body = uuid.upper().removeprefix("GPU-").removeprefix("MIG-")
    return not body or "N/A" in body or set(body) <= _MASKED_UUID_CHARS


def gpu_keys(report: SweepReport) -> dict[tuple[str, int], str]:
    """(host, GPU index) → the GPU's key: ``uuid:GPU-…``, or ``index:N`` where the UUID is missing, masked
    (all zeros, ``[N/A]``) or not unique in the sweep (cloned VMs)."""
    uuids = Counter(g.uuid for h in report.hosts for g in h.gpus if g.uuid)
    keys = {}
    for host in report.hosts:
        for gpu in host.gpus:
            usable = gpu.uuid and not _masked(gpu.uuid) and uuids[gpu.uuid] == 1
            keys[(host.host, gpu.index)] = f"uuid:{gpu.uuid}" if usable else f"index:{gpu.index}"
    return keys


def log_identity(evidence: Mapping[str, object]) -> str | None:
    """The log a finding comes from, as it stays from run to run: the path as the operator configured it
    (the inventory's or ``--log``'s entry), or for a log found through a process, the server and the file's
    name (``SGLang:server.log``; ``SGLang:1`` for a stream read through ``/proc/<pid>/fd/1``), never the
    folder or the pid, which change between runs."""
    log = evidence.get("log")
    if log is None:
        return None
    server = evidence.get("found_server")
    if server is None:
        return str(log)
    return f"{server}:{str(log).rstrip('/').rsplit('/', 1)[-1]}"


def _subject(finding: Finding) -> str:
    evidence = finding.evidence
    if "xid" in evidence:  # the GPU is in the key already; the log it was read from is not the event
        return "/".join([f"xid:{evidence['xid']}"]
                        + ([str(evidence["pci"])] if finding.gpu is None and evidence.get("pci") else []))
    log = log_identity(evidence)
    return "/".join(([log] if log else []) + [str(evidence[k]) for k in _SUBJECT_KEYS if k in evidence])


def fingerprints(host: HostReport, keys: Mapping[tuple[str, int], str]) -> tuple[tuple[str, str, Finding], ...]:
    """(fingerprint, GPU key, finding) for each finding of ``host``; stable across runs."""
    seen: Counter[str] = Counter()
    out = []
    for f in host.findings:
        gpu_key = NO_GPU if f.gpu is None else keys.get((host.host, f.gpu), f"index:{f.gpu}")
        subject = _subject(f)
        base = "|".join((host.host, gpu_key, f.code) + ((subject,) if subject else ()))
        seen[base] += 1
        out.append((base if seen[base] == 1 else f"{base}#{seen[base]}", gpu_key, f))
    return tuple(out)
