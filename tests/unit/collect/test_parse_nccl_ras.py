"""NCCL's RAS answer → NcclRasStatus (gpudiag.collect.parse_nccl_ras): the real answers of a world-size-1 job on
the H200 (tests/data/h200_580.159_nccl1/ras_28028.json: NCCL 2.28.9, JSON and text), and answers built in the
formats NCCL's src/ras/client_support.cc prints for a job with a missing and a lagging rank."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpudiag.collect.parse_nccl_ras import MAX_NAMED, parse_nccl_ras
from gpudiag.model.nccl_ras import RasRank

DATA = Path(__file__).resolve().parents[2] / "data" / "h200_580.159_nccl1"


def recorded(case: str) -> str:
    """The status part of one recorded exchange (what followed the handshake's answers)."""
    exchange = json.loads((DATA / "ras_28028.json").read_text())[case]
    return exchange["received"][-1].removesuffix("<closed>")


def as_sent(answer: str, fmt: str = "json", **extra: Any) -> dict[str, Any]:
    """The collector's ``nccl_ras`` part around an answer (collectors/gpudiag_node/nccl_ras.py's ``ask``)."""
    return {"asked": True, "from": "default", "host": "127.0.0.1", "port": 28028, "format": fmt,
            "server_protocol": "2", "answer": answer, "closed": True, "truncated": False, "error": None,
            "elapsed_s": 0.004, **extra}


def test_the_h200_world_size_1_json_answer() -> None:
    ras = parse_nccl_ras(as_sent(recorded("json_verbose_p2")))
    assert ras is not None and ras.answered and ras.answer_format == "json"
    assert (ras.nccl_version, ras.communicators, ras.ranks, ras.ranks_answering) == ("2.28.9", 1, 1, 1)
    assert ras.nodes == ("192.0.2.2",) and ras.missing_ranks == () and ras.lagging_ranks == ()
    assert ras.sentence == "NCCL RAS (2.28.9): 1 rank on 1 node (192.0.2.2); every rank answered and none lags"


def test_the_h200_text_answer_reads_the_same() -> None:
    ras = parse_nccl_ras(as_sent(recorded("text_status"), "text"))
    assert ras is not None and ras.answer_format == "text"
    assert (ras.nccl_version, ras.communicators, ras.ranks, ras.node_count) == ("2.28.9", 1, 1, 1)
    assert ras.missing_ranks == () and ras.lagging_ranks == ()


def rank(n: int, host: str, count: int) -> dict[str, Any]:
    """One rank as jsonWriteRankData writes it."""
    return {"rank": n, "host": host, "pid": 4000 + n, "cuda_dev": n % 8, "nvml_dev": n % 8,
            "status": {"init_state": 0, "async_error": 0, "finalize_called": False, "destroy_flag": False,
                       "abort_flag": False},
            "collective_counts": {"Broadcast": 1, "Reduce": 0, "AllGather": 0, "ReduceScatter": 0,
                                  "AllReduce": count}}


def hung_job_json() -> str:
    """A 16-rank job on 2 nodes: rank 11 launched one AllReduce fewer, rank 5 does not answer."""
    ranks = [rank(n, "10.0.0.1" if n < 8 else "10.0.0.2", 41 if n == 11 else 42) for n in range(16) if n != 5]
    doc = {"nccl_version": "2.28.9", "cuda_runtime_version": 13000, "cuda_driver_version": 13000,
           "timestamp": "2026-12-02 01:51:24", "communicators_count": 1,
           "communicators": [{"hash": "0xf5712ff33d641fd2", "secondary_hash": "0x1:0x2", "size": 16,
                              "ranks_count": 15, "missing_ranks_count": 1, "ranks": ranks,
                              "missing_ranks": [{"rank": 5, "host": "10.0.0.1", "pid": 4005, "cuda_dev": 5,
                                                 "nvml_dev": 5, "status": {"unresponsive": True,
                                                                           "considered_dead": False}}]}],
           "ras": {"collection_time_sec": 1.002, "timeouts_count": 1}}
    return json.dumps(doc, indent=2)


def test_a_hung_job_names_its_missing_and_lagging_ranks_and_their_nodes() -> None:
    ras = parse_nccl_ras(as_sent(hung_job_json()))
    assert ras is not None and (ras.ranks, ras.ranks_answering, ras.timeouts) == (16, 15, 1)
    assert ras.nodes == ("10.0.0.1", "10.0.0.2")
    assert ras.missing_ranks == (RasRank(rank=5, state="missing", host="10.0.0.1", pid=4005, gpu=5),)
    assert ras.lagging_ranks == (RasRank(rank=11, state="lagging", host="10.0.0.2", pid=4011, gpu=3,
                                         detail="AllReduce 41, the others up to 42"),)
    assert ras.sentence == ("NCCL RAS (2.28.9): 16 ranks on 2 nodes (10.0.0.1, 10.0.0.2); missing: rank 5 (pid 4005 "
                            "on 10.0.0.1, GPU 5); lagging: rank 11 (pid 4011 on 10.0.0.2, GPU 3; AllReduce 41, "
                            "the others up to 42); 1 RAS timeout")


# The text format of NCCL before 2.28 (no SET FORMAT), laid out as rasClientRunComms prints it.
HUNG_TEXT = """NCCL version 2.26.2 compiled with CUDA 12.8
CUDA runtime version 12080, driver version 12080

Job summary
===========

  Nodes  Processes         GPUs  Processes     GPUs
(total)   per node  per process    (total)  (total)
      2          8            1         16       16

Communicators... (1.004s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         2       7-8        16        15   RUNNING  INCOMPLETE,MISMATCH

Errors
======

INCOMPLETE
  Missing communicator data from 1 job process
  Process 4005 on node 10.0.0.1 managing GPU 5

#0-0 (f5712ff33d641fd2) INCOMPLETE
  Missing communicator data from 1 rank
  Rank 5 -- GPU 5 managed by process 4005 on node 10.0.0.1

Warnings
========

TIMEOUT
  Encountered 1 communication timeout while gathering communicator data

#0-0 (f5712ff33d641fd2) MISMATCH
  Communicator ranks have different AllReduce operation counts
  14 ranks have launched up to operation 42
  Rank 11 has launched up to operation 41 -- GPU 3 managed by process 4011 on node 10.0.0.2

"""


def test_the_text_format_of_older_nccl_names_the_same_ranks() -> None:
    ras = parse_nccl_ras(as_sent(HUNG_TEXT, "text"))
    assert ras is not None and (ras.nccl_version, ras.ranks, ras.ranks_answering, ras.node_count) == \
        ("2.26.2", 16, None, 2)
    assert [(r.rank, r.host, r.pid, r.gpu) for r in ras.missing_ranks] == [(5, "10.0.0.1", 4005, 5)]
    assert [(r.rank, r.host, r.detail) for r in ras.lagging_ranks] == [
        (11, "10.0.0.2", "launched up to operation 41, the others up to 42")]
    assert ras.timeouts == 1 and set(ras.nodes) == {"10.0.0.1", "10.0.0.2"}


def test_no_answer_and_bad_input_are_values() -> None:
    refused = parse_nccl_ras({"asked": True, "port": 28028, "from": "default", "answer": "",
                              "error": "connect: Connection refused"})
    assert refused is not None and not refused.answered and refused.error == "connect: Connection refused"
    assert refused.sentence is None
    assert parse_nccl_ras(None) is None and parse_nccl_ras({"asked": False, "from": "NCCL_RAS_ENABLE=0"}) is None
    cut = parse_nccl_ras(as_sent(hung_job_json()[:300], truncated=True))
    assert cut is not None and not cut.answered and cut.error == "its JSON answer could not be read"
    junk = parse_nccl_ras(as_sent(json.dumps({"communicators": [{"ranks": ["x", {"rank": "y"}], "size": "z"}]})))
    assert junk is not None and junk.answered and junk.ranks is None and junk.lagging_ranks == ()


def test_a_huge_answer_is_bounded() -> None:
    """1500 ranks of which 1000 lag (inside the 512 KiB read): the first MAX_NAMED are kept."""
    ranks = [rank(n, f"10.0.{n // 256}.{n % 256}", n % 3) for n in range(1500)]
    doc = {"communicators": [{"size": 1500, "ranks_count": 1500, "ranks": ranks, "missing_ranks": []}]}
    answer = json.dumps(doc, separators=(",", ":"))
    assert len(answer) < 512 * 1024
    ras = parse_nccl_ras(as_sent(answer))
    assert ras is not None and ras.answered and ras.ranks == 1500
    assert len(ras.lagging_ranks) == MAX_NAMED and len(ras.nodes) == MAX_NAMED  # 1500 addresses claimed


def test_a_hung_jobs_status_survives_the_json_report() -> None:
    from gpudiag.model import NodeReadings
    from gpudiag.model.json_codec import decode, encode

    node = NodeReadings(nccl_ras=parse_nccl_ras(as_sent(hung_job_json())))
    back = decode(NodeReadings, json.loads(json.dumps(encode(node))))
    assert back.nccl_ras == node.nccl_ras and back.nccl_ras is not None and len(back.nccl_ras.lagging_ranks) == 1
