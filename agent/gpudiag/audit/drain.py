"""Drain and resume Slurm nodes from a sweep's findings, the way NHC does it (opt-in).

Planning is a pure function of the report and the nodes' Slurm states (:func:`plan_drain`,
:func:`plan_undrain`); applying runs ``scontrol update`` as argv (:func:`apply`). The rules:

- drain a node whose sweep has a finding at or above the level (``--drain-on critical`` or ``warning``), or
  whose action is at least the one named (``--drain-on reset_gpu``: the highest of its findings' actions on the
  ladder), with ``Reason=gpudiag: <action>: <CODE> gpu <N>[, ...]`` (the node's action, then the findings that
  drained it, the highest action first);
- never touch a node drained by someone else (its reason does not start with ``gpudiag:``): their reason stays;
- a host that did not answer is not drained: gpudiag cannot tell a dead node from a broken bastion, and Slurm's
  own health (``NOT_RESPONDING``, ``DOWN``) covers the node that is really gone;
- an UNKNOWN finding (a reading that should be there is missing) does not drain either;
- ``undrain`` resumes only nodes drained by gpudiag whose sweep answered with no finding at or above the level.

Every planned action is kept, applied or not, with what was done; the CLI prints them and puts them in the JSON.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from gpudiag.model import Finding, HostReport, Severity, SweepReport, highest
from gpudiag.model.choices import DrainLevel
from gpudiag.sources.slurm import GPUDIAG_REASON, Runner, SlurmNode

MAX_REASON_CHARS = 200  # Slurm keeps the reason in its state; a short line reads well in sinfo -R


def covers(level: DrainLevel, finding: Finding) -> bool:
    """Whether ``finding`` is at or above ``level``: its severity (UNKNOWN never is), or for an action
    threshold its action on the ladder."""
    threshold = level.action
    if threshold is not None:
        return finding.action.at_least(threshold)
    if level is DrainLevel.CRITICAL:
        return finding.severity is Severity.CRITICAL
    return finding.severity in (Severity.CRITICAL, Severity.WARNING)


class ActionKind(str, enum.Enum):
    DRAIN = "drain"
    RESUME = "resume"
    LEAVE = "leave"  # considered and left alone; ``why`` says why


@dataclass(frozen=True, slots=True, kw_only=True)
class Action:
    """One node's planned action. ``argv`` is the scontrol command (empty for LEAVE); ``done`` is None until
    applied (and stays None in a dry run), then True or False with ``error``."""

    node: str
    kind: ActionKind
    why: str
    reason: str | None = None  # the Slurm reason set (DRAIN)
    argv: tuple[str, ...] = ()
    done: bool | None = None
    error: str | None = None

    @property
    def line(self) -> str:
        """The action in one line, as printed."""
        if self.kind is ActionKind.LEAVE:
            return f"leave  {self.node}: {self.why}"
        status = {None: "would", True: "done:", False: "FAILED:"}[self.done]
        text = f"{status} {self.kind.value} {self.node} ({self.why})"
        return text + (f": {self.error}" if self.error else "")

    def as_dict(self) -> dict[str, object]:
        return {"node": self.node, "action": self.kind.value, "why": self.why, "reason": self.reason,
                "command": list(self.argv), "done": self.done, "error": self.error}


def drain_reason(findings: Iterable[Finding]) -> str:
    """``gpudiag: reset_gpu: ROW_REMAP_PENDING gpu 3, XID 79 gpu 1``: the highest action of the findings, then
    their codes (an Xid with its number)."""
    findings = tuple(findings)
    parts: list[str] = []
    for finding in findings:
        code = finding.code
        xid = finding.evidence.get("xid") if finding.evidence else None
        if code == "XID" and xid is not None:
            code = f"XID {xid}"
        part = code + (f" gpu {finding.gpu}" if finding.gpu is not None else "")
        if part not in parts:
            parts.append(part)
    text = f"{GPUDIAG_REASON} {highest(f.action for f in findings).label}: " + ", ".join(parts)
    if len(text) > MAX_REASON_CHARS:
        text = text[: MAX_REASON_CHARS - 4].rsplit(",", 1)[0] + ", ..."
    return text


def _serious(host: HostReport, level: DrainLevel) -> tuple[Finding, ...]:
    """The host's findings at or above ``level``, the highest action first (then critical first)."""
    chosen = [f for f in host.findings if covers(level, f)]
    return tuple(sorted(chosen, key=lambda f: (-f.action.rank, f.severity is not Severity.CRITICAL)))


def _why(serious: tuple[Finding, ...], level: DrainLevel) -> str:
    if level.action is not None:
        return f"action {highest(f.action for f in serious).label}, at least {level.value}"
    return f"{len(serious)} {level.value}-level finding(s)"


def plan_drain(report: SweepReport, nodes: Mapping[str, SlurmNode], level: DrainLevel) -> tuple[Action, ...]:
    """The drain actions for ``report``: one per swept host that is a Slurm node and has a serious finding."""
    actions = []
    for host in report.hosts:
        node = nodes.get(host.host)
        serious = _serious(host, level)
        if node is None or not serious:
            continue
        if not host.status.answered:
            actions.append(Action(node=node.name, kind=ActionKind.LEAVE,
                                  why=f"did not answer ({host.status.value}); gpudiag drains only on findings"))
        elif node.drained and not node.drained_by_gpudiag:
            actions.append(Action(node=node.name, kind=ActionKind.LEAVE,
                                  why=f"already drained by someone else: {node.reason or 'no reason'}"))
        elif node.drained:
            actions.append(Action(node=node.name, kind=ActionKind.LEAVE, why=f"already drained: {node.reason}"))
        else:
            reason = drain_reason(serious)
            actions.append(Action(node=node.name, kind=ActionKind.DRAIN, reason=reason,
                                  why=_why(serious, level),
                                  argv=("scontrol", "update", f"NodeName={node.name}", "State=DRAIN",
                                        f"Reason={reason}")))
    return tuple(actions)


def plan_undrain(report: SweepReport, nodes: Mapping[str, SlurmNode], level: DrainLevel) -> tuple[Action, ...]:
    """The resume actions: each node gpudiag drained whose sweep answered clean (nothing at ``level``)."""
    by_host = {host.host: host for host in report.hosts}
    actions = []
    for node in nodes.values():
        if not node.drained:
            continue
        if not node.drained_by_gpudiag:
            actions.append(Action(node=node.name, kind=ActionKind.LEAVE,
                                  why=f"drained by someone else: {node.reason or 'no reason'}"))
            continue
        host = by_host.get(node.name)
        if host is None:
            actions.append(Action(node=node.name, kind=ActionKind.LEAVE, why="not swept"))
        elif not host.status.answered:
            actions.append(Action(node=node.name, kind=ActionKind.LEAVE,
                                  why=f"did not answer ({host.status.value}): cannot tell that it cleared"))
        elif serious := _serious(host, level):
            actions.append(Action(node=node.name, kind=ActionKind.LEAVE,
                                  why=f"not cleared: {drain_reason(serious)[len(GPUDIAG_REASON) + 1:]}"))
        else:
            actions.append(Action(node=node.name, kind=ActionKind.RESUME,
                                  why=f"cleared (was {node.reason})",
                                  argv=("scontrol", "update", f"NodeName={node.name}", "State=RESUME")))
    return tuple(actions)


def apply(actions: Sequence[Action], run: Runner) -> tuple[Action, ...]:
    """Run each DRAIN/RESUME action's scontrol command; the actions come back with ``done`` and ``error``."""
    applied = []
    for action in actions:
        if not action.argv:
            applied.append(action)
            continue
        result = run(action.argv)
        said = " ".join((result.stderr or result.stdout).split())
        applied.append(replace(action, done=result.returncode == 0,
                               error=None if result.returncode == 0 else said or f"exit {result.returncode}"))
    return tuple(applied)
