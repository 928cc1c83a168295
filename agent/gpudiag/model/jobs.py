"""A job across its nodes: the GPUs a scheduler gave a job (:class:`JobAllocation`), each GPU of a job as the
sweep read it (:class:`JobGpu`), one job's line in the report (:class:`JobView`), and a note about a whole
group (:class:`GroupNote`: versions with no clear majority).

A job is named by what the node can tell: the Slurm job of its processes (cgroup or ``SLURM_JOB_ID``), else
their container or pod; a Slurm selection (``--slurm-job``) or allocation names a job's nodes too, so a node
of the job that did not answer still belongs to it.

Standard library only; see :mod:`gpudiag.model`."""

from __future__ import annotations

from dataclasses import dataclass

from gpudiag.model.status import Severity


@dataclass(frozen=True, slots=True, kw_only=True)
class JobAllocation:
    """The GPUs a scheduler gave one running job on one node (Slurm: ``scontrol show job -d``'s
    ``Nodes=... GRES=gpu:N(IDX:0-3)``). ``gpus`` are the node's GPU indexes as Slurm numbers them (its GRES
    index, the order of the ``/dev/nvidiaN`` files of ``gres.conf``)."""

    job_id: str
    node: str
    gpus: tuple[int, ...]
    user: str | None = None
    started_at: str | None = None  # ISO 8601 as the scheduler wrote it (its local time); None: not known
    partition: str | None = None
    name: str | None = None  # the job's name


@dataclass(frozen=True, slots=True, kw_only=True)
class JobGpu:
    """One GPU of a job as this sweep read it. ``gpu`` None: the host did not answer, so its GPUs are not
    known (the job is known to hold the host from the scheduler or from the job's own NCCL RAS answer).

    ``state``: what the GPU did in the window, one of :data:`GPU_STATES`."""

    host: str
    gpu: int | None
    state: str
    utilization_pct: float | None = None
    power_pct_of_limit: float | None = None
    sm_active_pct: float | None = None
    sm_clock_mhz: float | None = None

    @property
    def place(self) -> str:
        """ "node-3 GPU 5", or "node-3" for a host that did not answer."""
        return f"{self.host} GPU {self.gpu}" if self.gpu is not None else self.host


GPU_STATES = (
    "waiting",      # busy at low power or low SM activity: a kernel resident, little work (a collective's spin)
    "computing",    # busy with work: power or SM activity up
    "partly busy",  # neither idle nor busy
    "idle",         # no kernel ran in the window
    "throttled",    # a thermal or hardware slowdown held its clocks down
    "lost",         # the driver cannot reach it
    "unanswered",   # its host did not answer the sweep
)


@dataclass(frozen=True, slots=True, kw_only=True)
class JobView:
    """One job's line in the report: whose, where, how busy, and the verdict of the job checks.

    ``utilization_pct`` and ``power_pct_of_limit`` are the medians over the job's GPUs that answered;
    ``verdict`` is a short phrase ("ok", "waits on node-3 GPU 5", "straggler node-2 GPU 1", "2 GPUs allocated
    and idle"), ``code`` the finding behind it (None: quiet)."""

    job: str  # "job 81723", "docker 3f2a9c1b0e4d", "k8s pod 0c4f..."
    user: str | None
    hosts: tuple[str, ...]
    gpus: tuple[JobGpu, ...]
    utilization_pct: float | None
    power_pct_of_limit: float | None
    verdict: str = "ok"
    code: str | None = None
    severity: Severity = Severity.OK
    allocated_gpus: int | None = None  # GPUs the scheduler gave the job on the swept hosts; None: not known
    started_at: str | None = None  # from the scheduler

    @property
    def gpu_count(self) -> int:
        """The job's GPUs that answered (a host that did not answer counts none)."""
        return sum(1 for g in self.gpus if g.gpu is not None)


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupNote:
    """Something a whole group says, once, not a finding on each host: versions that no clear majority
    shares. ``summary`` is one sentence."""

    group: str
    kind: str  # "versions split": what the note is about
    summary: str
    hosts: int  # the group's hosts that answered with GPUs
