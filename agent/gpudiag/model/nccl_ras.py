"""What a node's NCCL job said about itself through NCCL's RAS thread (:class:`NcclRasStatus`): the job's
ranks and nodes, the ranks missing (no answer, dead) and the ranks lagging (fewer collectives launched than
the others: the one a hung collective waits for). Parsed from the collector's raw answer by
:mod:`gpudiag.collect.parse_nccl_ras`.

Standard library only; see :mod:`gpudiag.model`."""

from __future__ import annotations

from dataclasses import dataclass

MAX_RANKS_NAMED = 8  # missing or lagging ranks named in the sentence (all are in the evidence's counts)


@dataclass(frozen=True, slots=True, kw_only=True)
class RasRank:
    """One rank RAS names: which, where (its node's address, its process, its GPU) and what is wrong."""

    rank: int
    state: str  # "missing" (no answer), "dead" (unreachable over RAS), "lagging", "not in the communicator"
    host: str | None = None
    pid: int | None = None
    gpu: int | None = None  # the CUDA device
    detail: str | None = None  # "AllReduce 41, the others 42"

    @property
    def words(self) -> str:
        """ "rank 5 (pid 4312 on 10.0.0.2, GPU 5; AllReduce 41, the others 42)"."""
        where = [f"pid {self.pid}" if self.pid is not None and self.pid >= 0 else None,
                 f"on {self.host}" if self.host and self.host != "unknown" else None]
        place = " ".join(p for p in where if p)
        parts = [p for p in (place, f"GPU {self.gpu}" if self.gpu is not None else None) if p]
        inner = ", ".join(parts) + (f"; {self.detail}" if self.detail else "")
        return f"rank {self.rank}" + (f" ({inner})" if inner else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclRasStatus:
    """One question to the node's NCCL RAS port and what it answered. ``answered`` False: ``error`` says why
    (connection refused: no NCCL 2.24+ job listening here, the usual case)."""

    port: int | None = None
    asked_from: str | None = None  # where the port came from: "NCCL_RAS_ADDR of pid 4312" or "default"
    answered: bool = False
    error: str | None = None
    answer_format: str | None = None  # "json" (NCCL 2.28+) or "text"
    nccl_version: str | None = None
    communicators: int | None = None
    ranks: int | None = None  # the largest communicator's size: the job's ranks
    ranks_answering: int | None = None  # of those, the ones whose data came back
    node_count: int | None = None  # the job's nodes
    nodes: tuple[str, ...] = ()  # the addresses of the job's nodes that RAS names (the text format: outliers only)
    missing_ranks: tuple[RasRank, ...] = ()
    lagging_ranks: tuple[RasRank, ...] = ()
    timeouts: int | None = None  # communication timeouts while RAS gathered the data
    truncated: bool = False  # the answer passed the collector's bound and was cut
    elapsed_s: float | None = None

    @property
    def sentence(self) -> str | None:
        """ "NCCL RAS (2.28.9): 16 ranks on 2 nodes (10.0.0.1, 10.0.0.2); missing: rank 5 (...); lagging: ..."
        or None when RAS did not answer."""
        if not self.answered:
            return None
        version = f" ({self.nccl_version})" if self.nccl_version else ""
        ranks = f"{self.ranks} rank{'s' if self.ranks != 1 else ''}" if self.ranks is not None else "its ranks"
        count = self.node_count if self.node_count is not None else len(self.nodes) or None
        named = f" ({', '.join(self.nodes[:4])}{', ...' if len(self.nodes) > 4 else ''})" if self.nodes else ""
        nodes = f" on {count} node{'s' if count != 1 else ''}{named}" if count is not None else ""
        parts = [f"NCCL RAS{version}: {ranks}{nodes}"]
        for what, found in (("missing", self.missing_ranks), ("lagging", self.lagging_ranks)):
            if found:
                shown = ", ".join(r.words for r in found[:MAX_RANKS_NAMED])
                more = f", +{len(found) - MAX_RANKS_NAMED} more" if len(found) > MAX_RANKS_NAMED else ""
                parts.append(f"{what}: {shown}{more}")
        if not self.missing_ranks and not self.lagging_ranks:
            parts.append("every rank answered and none lags")
        if self.timeouts:
            parts.append(f"{self.timeouts} RAS timeout{'s' if self.timeouts != 1 else ''}")
        if self.truncated:
            parts.append("its answer was cut at the collector's bound")
        return "; ".join(parts)
