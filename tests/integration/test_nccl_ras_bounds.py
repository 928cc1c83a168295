"""The node's RAS reader (collectors/gpudiag_node/nccl_ras.py) against real TCP servers on loopback
(tests/fake_ras.py): the exchange of NCCL's own client, and its bounds in time and size whatever the server does
(drips, sends without end, never answers, is not NCCL). CPU seconds are measured, never wall time."""

from __future__ import annotations

import ipaddress
import json
import time
from pathlib import Path

import pytest

from fake_ras import fake_ras
from gpudiag.collect.parse_nccl_ras import parse_nccl_ras
from gpudiag_node import nccl_ras

DATA = Path(__file__).resolve().parents[1] / "data" / "h200_580.159_nccl1"
RECORDED = json.loads((DATA / "ras_28028.json").read_text())
JSON_ANSWER = RECORDED["json_verbose_p2"]["received"][-1].removesuffix("<closed>")
TEXT_ANSWER = RECORDED["text_status"]["received"][-1].removesuffix("<closed>")


def test_the_exchange_is_ncclS_client_s_and_the_answer_parses() -> None:
    with fake_ras("answer", json_answer=JSON_ANSWER) as server:
        out = nccl_ras.ask("127.0.0.1", server.port)
    assert server.lines == ["CLIENT PROTOCOL 2", "TIMEOUT 1", "SET FORMAT json", "VERBOSE STATUS"]
    assert (out["error"], out["format"], out["server_protocol"], out["closed"]) == (None, "json", "2", True)
    assert out["answer"] == JSON_ANSWER
    ras = parse_nccl_ras({**out, "asked": True, "from": "default"})
    assert ras is not None and ras.answered and ras.nccl_version == "2.28.9" and ras.ranks == 1


def test_an_nccl_without_set_format_answers_in_text() -> None:
    with fake_ras("old", text_answer=TEXT_ANSWER) as server:
        out = nccl_ras.ask("127.0.0.1", server.port)
    assert (out["error"], out["format"]) == (None, "text") and out["answer"] == TEXT_ANSWER


def cpu_of(call):  # type: ignore[no-untyped-def]
    before = time.process_time()
    result = call()
    return result, time.process_time() - before


def test_a_dripping_server_is_left_at_the_deadline() -> None:
    with fake_ras("drip") as server:
        out, cpu_s = cpu_of(lambda: nccl_ras.ask("127.0.0.1", server.port, deadline_s=0.6))
    assert out["error"] == "the answer did not end within 0.6 s" and not out["closed"]
    assert 0 < len(out["answer"]) < 100 and cpu_s < 0.3  # it waits on the socket, it does not spin


def test_endless_data_is_cut_at_the_size_bound() -> None:
    with fake_ras("endless") as server:
        out = nccl_ras.ask("127.0.0.1", server.port, deadline_s=5.0)
    assert out["truncated"] and len(out["answer"].encode()) <= nccl_ras.MAX_BYTES
    assert out["error"] == f"the answer passed {nccl_ras.MAX_BYTES} bytes and was cut"
    ras = parse_nccl_ras({**out, "asked": True})
    assert ras is not None and ras.truncated


def test_a_server_that_never_answers_costs_the_deadline_and_one_line() -> None:
    with fake_ras("silent") as server:
        out, cpu_s = cpu_of(lambda: nccl_ras.ask("127.0.0.1", server.port, deadline_s=0.5))
    assert out["error"] == "no answer to 'CLIENT PROTOCOL 2'" and server.lines == ["CLIENT PROTOCOL 2"]
    assert cpu_s < 0.3


def test_a_service_that_is_not_ncclS_ras_gets_nothing_more() -> None:
    with fake_ras("not_ras") as server:
        out = nccl_ras.ask("127.0.0.1", server.port)
    assert out["error"].startswith("not NCCL's RAS: 'CLIENT PROTOCOL 2' answered 'HTTP/1.1 400 Bad Request'")
    assert server.lines == ["CLIENT PROTOCOL 2"]


def test_nothing_listening_is_a_refused_connection() -> None:
    with fake_ras("answer") as server:
        port = server.port
    out = nccl_ras.ask("127.0.0.1", port)
    assert out["error"] == "connect: Connection refused" and out["sent"] == []


def write_environ(root: Path, pid: int, **env: str) -> None:
    (root / str(pid)).mkdir(parents=True)
    (root / str(pid) / "environ").write_bytes(b"".join(f"{k}={v}\0".encode() for k, v in env.items()))


def test_the_port_comes_from_the_gpu_processes_environment(tmp_path: Path) -> None:
    write_environ(tmp_path, 10, PATH="/bin")
    write_environ(tmp_path, 11, NCCL_RAS_ADDR="localhost:28031")
    assert nccl_ras.address([9, 10, 11], str(tmp_path)) == ("127.0.0.1", 28031, "NCCL_RAS_ADDR of pid 11", None)
    assert nccl_ras.address([10], str(tmp_path)) == ("127.0.0.1", 28028, "default", None)
    write_environ(tmp_path, 12, NCCL_RAS_ADDR="203.0.113.9:28030")
    assert nccl_ras.address([12], str(tmp_path)) == (
        "127.0.0.1", 28030, "NCCL_RAS_ADDR of pid 12",
        "NCCL_RAS_ADDR names 203.0.113.9, not an address of this node: asked localhost")
    write_environ(tmp_path, 13, NCCL_RAS_ENABLE="0")
    assert nccl_ras.collect([13], str(tmp_path)) == {"asked": False, "from": "NCCL_RAS_ENABLE=0 of pid 13",
                                                      "note": "RAS is disabled in the job"}


@pytest.mark.parametrize("value, expected", [("127.0.0.1:28028", ("127.0.0.1", 28028)),
                                             ("[::1]:28029", ("::1", 28029)), ("host", None), (":0", None),
                                             ("h:99999", None)])
def test_nccl_ras_addr_is_read_as_nccl_reads_it(value: str, expected: object) -> None:
    assert nccl_ras.split_address(value) == expected


FIB_TRIE = """Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 10.0.0.0/8 2 0 2
        |-- 10.0.0.0
           /8 link UNICAST
        |-- 10.0.0.7
           /32 host LOCAL
        |-- 10.1.2.3
           /32 link UNICAST
Local:
  +-- 127.0.0.0/8 2 0 2
     |-- 127.0.0.1
        /32 host LOCAL
"""


def test_locality_comes_from_the_interface_addresses_not_a_bind(tmp_path: Path) -> None:
    """Issue 30, fault matrix #3: "is it local" was a bind(), which succeeds for any address where
    net.ipv4.ip_nonlocal_bind=1: a job's NCCL_RAS_ADDR sent the collector (often root) to 10.1.2.3 or 8.8.8.8.
    Now the kernel's own address tables decide, once, and a name is never resolved."""
    net = tmp_path / "net"
    net.mkdir()
    (net / "fib_trie").write_text(FIB_TRIE)
    (net / "if_inet6").write_text("fe800000000000000000000000000007 02 40 20 80     eth0\n")
    procs = tmp_path / "proc"
    for pid, addr in enumerate(("10.0.0.7:28030", "10.1.2.3:28030", "8.8.8.8:53", "[fe80::7]:28030",
                                "２２７.0.0.7:28030", "cafe:28030", "10.0.0.7:２８０３０"), start=20):
        write_environ(procs, pid, NCCL_RAS_ADDR=addr)
    assert {str(a) for a in nccl_ras.local_addresses(str(net))} == {"10.0.0.7", "127.0.0.1", "fe80::7"}

    def asked(pid: int) -> tuple[object, object]:
        host, port, _, _ = nccl_ras.address([pid], str(procs), str(net))
        return host, port

    assert asked(20) == ("10.0.0.7", 28030)  # an address of this node's (a bind would have said so too)
    assert asked(21) == ("127.0.0.1", 28030)  # on the node's network, not its own: never asked
    assert asked(22) == ("127.0.0.1", 53)
    assert asked(23) == ("fe80::7", 28030)
    assert asked(24) == ("127.0.0.1", 28030)  # fullwidth digits are no address (it connected to 227.0.0.7)
    assert asked(25) == ("127.0.0.1", 28030)  # a name: not resolved at all
    assert asked(26) == ("127.0.0.1", 28028)  # a fullwidth port is no port: the default
    assert ipaddress.ip_address("127.0.0.1") in nccl_ras.local_addresses()  # this machine's own tables
