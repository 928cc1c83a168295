"""The report: findings, one host's report and the sweep's, and the schema names of the documents.

Standard library only; see :mod:`gpudiag.model`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpudiag.model.actions import Action, highest
from gpudiag.model.gpu import GpuReading
from gpudiag.model.jobs import GroupNote, JobView
from gpudiag.model.node import NodeReadings
from gpudiag.model.settings import CheckSettings
from gpudiag.model.status import HostStatus, Severity, SmiStatus, UnreachableReason, worst

# 3: power has one name (the GPU's "power" object: watts, source, pct_of_limit; power_pct_of_limit is gone),
# the check settings the run used travel with it ("settings"); docs/json.md lists every rename.
# 2: one power figure (GpuReading.power()) behind power_pct_of_limit; power_limit_w became
# enforced_power_limit_w; raw samples only on request; failed readings listed. /1 and /2 documents are still read.
SWEEP_SCHEMA = "gpudiag.sweep/4"
SWEEP_SCHEMAS_READ = ("gpudiag.sweep/1", "gpudiag.sweep/2", "gpudiag.sweep/3", SWEEP_SCHEMA)


def host_status_label(host: HostReport) -> str:
    """The host's status as the reports show it: the SSH status, and the GPUs' state beside it when the host
    answered but its GPUs could not be read (``ok, gpus: hung``): an ``ok`` beside a driver error must not read
    as healthy."""
    node = host.readings
    if host.status.answered and node is not None and node.smi_status not in (SmiStatus.OK, SmiStatus.SKIPPED):
        return f"{host.status.value}, gpus: {node.smi_status.value}"
    return host.status.value


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """A verdict: stable code, severity, what to do (``action``: the ladder of :mod:`gpudiag.model.actions`,
    chosen by :data:`gpudiag.checks.actions.ACTIONS`), where, one sentence, and the numbers behind it."""

    code: str
    severity: Severity
    host: str
    gpu: int | None
    summary: str
    evidence: Mapping[str, object] = field(default_factory=dict)
    # What to do, on the ladder; a check leaves it NONE and checks.evaluate sets it from the one table
    action: Action = Action.NONE


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteResult:
    """What one remote (or local) run of the collector returned."""

    exit_status: int | None
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class HostReport:
    """One host's row in the report: how talking to it went, what it read, what is wrong."""

    host: str
    address: str | None
    status: HostStatus
    error: str | None = None
    readings: NodeReadings | None = None
    findings: tuple[Finding, ...] = ()
    duration_s: float | None = None
    scheduler_state: str | None = None  # the node's state in the scheduler (Slurm's sinfo: idle, drained, ...)
    scheduler_reason: str | None = None  # the reason the scheduler holds for that state (a drain's reason)
    unreachable_reason: UnreachableReason | None = None  # status unreachable only: refused, timeout, dns...

    @property
    def gpus(self) -> tuple[GpuReading, ...]:
        return self.readings.gpus if self.readings else ()

    @property
    def action(self) -> Action:
        """The host's action: the highest of its findings' on the ladder (NONE with no finding)."""
        return highest(f.action for f in self.findings)


# The exit code of a sweep stopped by a signal, as a shell reports a command that signal ended (128 + its number).
STOP_EXIT_CODES: Mapping[str, int] = {"SIGINT": 130, "SIGTERM": 143}
# gpudiag could not run (a bad inventory, bad flags): Nagios' UNKNOWN, never a state of the cluster.
EXIT_CANNOT_RUN = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepReport:
    """The whole sweep."""

    started_at: str  # ISO 8601, UTC
    duration_s: float
    hosts: tuple[HostReport, ...]
    # "SIGINT", "SIGTERM": a signal stopped the sweep; the hosts that had not answered are ``cancelled``
    stopped_by: str | None = None
    # The thresholds the checks judged this sweep by; None: not known (a gpudiag.sweep/2 document, or merged
    # reports whose runs used different ones)
    settings: CheckSettings | None = None
    # The checks across hosts (DRIVER_DRIFT) were judged: False when the run swept only part of the hosts
    # (--limit, --exclude, --shard), whose groups it saw in part; the history then carries their last verdict
    fleet_judged: bool = True
    # The jobs across hosts (the job view: gpudiag.checks.jobs), and what whole groups say once (versions with
    # no clear majority, mixed GPU models): judged with the fleet checks, empty when those were not
    jobs: tuple[JobView, ...] = ()
    notes: tuple[GroupNote, ...] = ()

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for h in self.hosts for f in h.findings)

    @property
    def exit_code(self) -> int:
        """0 all well, 1 a warning (or a reading that should be there is missing), 2 critical; 130 (SIGINT) or
        143 (SIGTERM) when a signal stopped the sweep, whatever the hosts that finished say."""
        if self.stopped_by is not None:
            return STOP_EXIT_CODES.get(self.stopped_by, 130)
        severity = worst(f.severity for f in self.findings)
        if severity is Severity.CRITICAL:
            return 2
        if severity in (Severity.WARNING, Severity.UNKNOWN):
            return 1
        return 0
