"""The options of one invocation (a :class:`~gpudiag.cli.params.Given`) as the one typed request: one builder
per option group of :mod:`gpudiag.cli.options`, and :func:`request`, which builds a
:class:`~gpudiag.cli.request.SweepRequest` from whichever groups the command took.

Imported by the commands where they run (the request's dataclasses stay out of ``gpudiag --help``).
Bad values raise one-line ``ValueError`` subclasses (``ShardError``, ``WorkersError``, ``AuditConfigError``,
:class:`~gpudiag.cli.request.RequestError`...): the commands turn them into exit 3.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpudiag.audit.scheduled import AuditOptions
from gpudiag.cli.request import HostSelection, OutputRequest, SweepRequest, Thresholds, parse_shard
from gpudiag.logs import LogOptions
from gpudiag.report import OutputFormat
from gpudiag.sources.slurm import SlurmSelection
from gpudiag.sweep.runner import SweepOptions
from gpudiag.transport.build import SshRequest


def slurm(given: Mapping[str, Any]) -> SlurmSelection | None:
    """The Slurm group (``--slurm-*``; repeatable flags may also hold commas); None when none is given."""
    from gpudiag.sources.slurm import split_list

    chosen = SlurmSelection(partitions=split_list(given.get("slurm_partition", ())), job=given.get("slurm_job"),
                            nodelist=given.get("slurm_nodelist"), states=split_list(given.get("slurm_state", ())))
    return None if chosen.empty else chosen


def hosts(given: Mapping[str, Any]) -> HostSelection:
    """The Hosts group (with the targets, ``--local``, ``--shard`` and the Slurm group where taken)."""
    return HostSelection(targets=tuple(given.get("targets") or ()), inventory=given.get("inventory"),
                         user=given.get("user"), port=given.get("port"), identity_file=given.get("identity_file"),
                         jump=given.get("jump"), limit=tuple(given.get("limit", ())),
                         exclude=tuple(given.get("exclude", ())), local=given.get("local", False),
                         shard=parse_shard(given.get("shard")), slurm=slurm(given))


def ssh(given: Mapping[str, Any]) -> SshRequest:
    """The SSH group: timeouts, host keys, the SSH config and the handshake pacing."""
    from gpudiag.transport.pacing import parse_rate

    return SshRequest(connect_timeout_s=given["connect_timeout"], login_timeout_s=given["login_timeout"],
                      known_hosts=given["known_hosts"], ssh_config=given["ssh_config"],
                      accept_new_host_keys=given["accept_new_host_keys"], max_startups=given["max_startups"],
                      connect_rate_per_s=parse_rate(given["connect_rate"]))


def logs(given: Mapping[str, Any], **fixed: Any) -> LogOptions:
    """The Logs group; ``fixed``: what the command adds (grep: its one signature)."""
    return LogOptions(paths=tuple(given["log"]), pack_files=tuple(given["pack"]), tail_mib=given["log_tail_mib"],
                      **fixed)


def sweep_options(given: Mapping[str, Any], **fixed: Any) -> SweepOptions:
    """The Sampling and Fleet groups (``--timeout`` alone for local) and the Logs group, where taken; ``fixed``:
    what the command sets itself (watch: ``stream``; grep: no GPU)."""
    values: dict[str, Any] = {}
    if "samples" in given:
        values.update(samples=given["samples"], interval_s=given["interval"], source=given["source"])
    if "timeout" in given:
        values["deadline_s"] = given["timeout"]
    if "concurrency" in given:
        values["concurrency"] = given["concurrency"]
    if "log" in given and "logs" not in fixed:
        values["logs"] = logs(given)
    if "save_raw" in given:
        values["raw_dir"] = given["save_raw"]
    if "active" in given:
        values["active"] = given["active"]
    return SweepOptions(**(values | fixed))


def thresholds(given: Mapping[str, Any]) -> Thresholds:
    """The Checks group: the thresholds given (None: not given, the inventory's or the default applies)."""
    return Thresholds(busy_utilization_pct=given.get("busy_utilization_pct"),
                      low_power_pct=given.get("low_power_pct"),
                      bandwidth_memory_utilization_pct=given.get("bandwidth_memory_utilization_pct"))


def audit(given: Mapping[str, Any]) -> AuditOptions | None:
    """The Audit group (and ``--output``) as one :class:`AuditOptions`; None where the command has none."""
    if "history" not in given:
        return None
    from gpudiag.audit.scheduled import parse_duration
    from gpudiag.model.changes import FlapRule

    renotify = given["renotify"]
    return AuditOptions(history=given["history"], keep_days=given["keep_days"],
                        lock_wait_s=given["history_lock_wait"], only_changes=given["only_changes"],
                        flap=FlapRule(changes=given["flap_changes"], window=given["flap_window"]),
                        notify_urls=tuple(given["notify"]), notify_cmd=given["notify_cmd"],
                        renotify_s=parse_duration(renotify) if renotify else None, prom_file=given["prom_file"],
                        output=given.get("output"), selection=selection(given))


# The options that narrow a run to some hosts (the history keeps them with the run, beside the hosts swept).
_SELECTING = (("limit", "--limit"), ("exclude", "--exclude"), ("shard", "--shard"),
              ("slurm_partition", "--slurm-partition"), ("slurm_nodelist", "--slurm-nodelist"),
              ("slurm_job", "--slurm-job"), ("slurm_state", "--slurm-state"))


def selection(given: Mapping[str, Any]) -> tuple[str, ...]:
    """The host-selecting options given, as words: ``("--exclude", "gpu07", "--shard", "1/4")``."""
    words: list[str] = []
    for name, flag in _SELECTING:
        value = given.get(name)
        for item in value if isinstance(value, (list, tuple)) else ([] if value is None else [value]):
            words += [flag, str(item)]
    return tuple(words)


def output(given: Mapping[str, Any], fmt: OutputFormat | None = None, **fixed: Any) -> OutputRequest:
    """The Output options taken: ``--format`` (``fmt`` where the command maps its own), ``--quiet``, ``--fold``,
    ``--progress``, ``--samples-detail``, for this terminal."""
    from gpudiag.cli.common import output_request

    values = {name: given[name] for name in ("quiet", "samples_detail", "fold", "progress") if name in given}
    return output_request(fmt if fmt is not None else given.get("fmt", OutputFormat.TABLE), **(values | fixed))


def request(given: Mapping[str, Any], *, sweep: SweepOptions | None = None, fmt: OutputFormat | None = None,
            **fixed: Any) -> SweepRequest:
    """The one :class:`SweepRequest` from the groups the command took; ``sweep``, ``fmt`` and ``fixed``
    (``inventory_settings=False``...) are what the command decides itself."""
    from gpudiag.sweep.workers import parse_workers

    values: dict[str, Any] = {"sweep": sweep if sweep is not None else sweep_options(given),
                              "output": output(given, fmt)}
    if "inventory" in given:
        values["hosts"] = hosts(given)
    if "connect_timeout" in given:
        values["ssh"] = ssh(given)
    if "busy_utilization_pct" in given:
        values["thresholds"] = thresholds(given)
    if "workers" in given:
        values["workers"] = parse_workers(given["workers"])
    if "drain_on" in given:
        values.update(drain_on=given["drain_on"], dry_run=given["dry_run"])
    if "demo" in given:
        values["demo"] = given["demo"]
    values["audit"] = audit(given)
    return SweepRequest(**(values | fixed))
