"""``--workers``: the split into shards, the merge back in the hosts' order, how many workers; and the
handshake pacing (``--max-startups``, ``--connect-rate``): the bounds and their parsing. No network: the
workers and the pacing against a real sshd are in tests/integration/test_workers.py and test_pacing_sshd.py.
"""

from __future__ import annotations

import asyncio

import pytest
from builders import host_report
from typer.testing import CliRunner

from gpudiag.cli.app import app
from gpudiag.model import Host, HostStatus
from gpudiag.sweep.runner import cancelled_report
from gpudiag.sweep.shard import select_shard
from gpudiag.sweep.workers import WorkersError, in_order, parse_workers, resolve_workers, shards, share
from gpudiag.transport.build import SshRequest, pacing, shared_by
from gpudiag.transport.pacing import DEFAULT_MAX_HANDSHAKES, Pacer, Pacing, PacingError, parse_rate

HOSTS = tuple(Host(name=f"gpu{i:03d}") for i in range(1, 201))


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_the_shards_hold_every_host_once_in_order(count: int) -> None:
    parts = shards(HOSTS, count)
    assert sorted(h.name for part in parts for h in part) == sorted(h.name for h in HOSTS)
    for part in parts:
        assert list(part) == sorted(part, key=HOSTS.index)  # each keeps the inventory's order
    assert len(parts) == count  # 200 hosts: every worker has some


@pytest.mark.parametrize(("shard_count", "workers"), [(2, 2), (4, 2), (3, 3), (8, 4)])
def test_workers_split_a_shard_again(shard_count: int, workers: int) -> None:
    """``--shard 1/N --workers M``: the workers' split is not the shard's hash again (which would give all
    of shard 1/2 to worker 1 of 2, and leave worker 2 nothing)."""
    shard = select_shard(HOSTS, 1, shard_count)
    assert len(shards(shard, workers)) == workers


def test_empty_shards_start_no_worker() -> None:
    few = HOSTS[:2]
    assert all(shards(few, 16)) and sum(len(p) for p in shards(few, 16)) == 2


def test_the_merge_keeps_the_inventory_order_and_fills_what_never_finished() -> None:
    hosts = HOSTS[:5]
    finished = {h.name: host_report(h.name) for h in reversed(hosts) if h.name != "gpu003"}
    merged = in_order(hosts, finished, cancelled_report)
    assert [r.host for r in merged] == [h.name for h in hosts]
    assert [r.status for r in merged] == [HostStatus.OK, HostStatus.OK, HostStatus.CANCELLED, HostStatus.OK,
                                          HostStatus.OK]
    assert merged[0] is finished["gpu001"]


@pytest.mark.parametrize(("wanted", "hosts", "cores", "expected"), [
    (1, 1000, 16, 1),
    (4, 1000, 2, 4),  # asked for: more than the cores is the operator's choice
    (4, 3, 16, 3),  # never more than hosts
    (None, 1000, 2, 2),  # auto: the cores
    (None, 1000, 64, 8),  # auto: at most 8
    (None, 120, 16, 2),  # auto: one per 50 hosts at least
    (None, 10, 16, 1),
])
def test_how_many_workers(wanted: int | None, hosts: int, cores: int, expected: int) -> None:
    assert resolve_workers(wanted, hosts, cpu_count=cores) == expected


def test_bounds_for_all_workers_together_are_shared() -> None:
    assert [share(256, n) for n in (1, 2, 3, 300)] == [256, 128, 85, 1]
    assert Pacing(max_startups=8, rate_per_s=50).shared_by(2) == Pacing(max_startups=4, rate_per_s=25,
                                                                        max_handshakes=16)
    assert Pacing(max_startups=3, max_handshakes=3).shared_by(4) == Pacing(max_startups=1, max_handshakes=1)


@pytest.mark.parametrize(("text", "value"), [("1", 1), ("12", 12), ("auto", None)])
def test_parse_workers(text: str, value: int | None) -> None:
    assert parse_workers(text) == value


@pytest.mark.parametrize("text", ["0", "-1", "two", "65", ""])
def test_a_bad_workers_value_is_one_line(text: str) -> None:
    with pytest.raises(WorkersError, match=r"^--workers .*: expected a number from 1 to 64, or auto$"):
        parse_workers(text)


@pytest.mark.parametrize(("text", "per_s"), [("50", 50.0), ("50/s", 50.0), ("3000/min", 50.0), ("0.5/s", 0.5),
                                             (None, None)])
def test_parse_rate(text: str | None, per_s: float | None) -> None:
    assert parse_rate(text) == per_s


@pytest.mark.parametrize("text", ["0/s", "-5", "fast", "50/h", "inf", "nan/s"])
def test_a_bad_rate_is_one_line(text: str) -> None:
    with pytest.raises(PacingError, match=r"^--connect-rate .*: expected new connections a second"):
        parse_rate(text)


async def _most_at_once(pacing: Pacing, gates_of: list[tuple[str, ...]]) -> dict[str, int]:
    """Run one handshake per entry of ``gates_of`` together; the most that were inside at once, per gate (and
    under ``"*"``, in all)."""
    pacer = Pacer(pacing)
    inside: dict[str, int] = {}
    most: dict[str, int] = {}

    async def one(gates: tuple[str, ...]) -> None:
        async with pacer.handshake(gates):
            for gate in (*gates, "*"):
                inside[gate] = inside.get(gate, 0) + 1
                most[gate] = max(most.get(gate, 0), inside[gate])
            await asyncio.sleep(0)  # the others run meanwhile, as during a real key exchange
            await asyncio.sleep(0)
            for gate in (*gates, "*"):
                inside[gate] -= 1

    await asyncio.gather(*(one(g) for g in gates_of))
    return most


def test_handshakes_through_one_bastion_are_bounded_and_all_happen() -> None:
    gates = [("bastion b", f"sshd 10.0.0.{i}:22") for i in range(40)] + [("sshd 10.1.0.1:22",)] * 3
    most = asyncio.run(_most_at_once(Pacing(max_startups=3), gates))
    assert most["bastion b"] == 3  # bounded, and the bound was used
    assert most["sshd 10.1.0.1:22"] == 3  # another gate is not held up by the bastion's
    assert all(most[f"sshd 10.0.0.{i}:22"] == 1 for i in range(40))  # every handshake ran


def test_the_sweep_bounds_its_handshakes_in_all_and_workers_share_the_bound() -> None:
    """200 hosts, each its own sshd (a gate each): the sweep still has at most DEFAULT_MAX_HANDSHAKES under way,
    and two workers together no more than one process (issue 23, item 6: --workers 2 started them twice as fast,
    and hosts waiting their turn at a saturated sshd ran out their connect timeout)."""
    gates = [(f"sshd 10.0.{i // 200}.{i % 200}:22",) for i in range(200)]
    assert asyncio.run(_most_at_once(Pacing(), gates))["*"] == DEFAULT_MAX_HANDSHAKES
    half = Pacing().shared_by(2)
    assert 2 * asyncio.run(_most_at_once(half, gates[::2]))["*"] == DEFAULT_MAX_HANDSHAKES
    assert pacing(shared_by(SshRequest(), 2)) == half  # what the workers are sent carries it


def test_a_rate_spaces_the_starts() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:  # a clock that stands still: each wait is what the schedule says
        waits.append(round(seconds, 9))

    async def five() -> None:
        pacer = Pacer(Pacing(max_startups=100, rate_per_s=10.0), clock=lambda: 100.0, sleep=sleep)
        await asyncio.gather(*(pacer.handshake((f"sshd {i}",)).__aenter__() for i in range(5)))

    asyncio.run(five())
    assert waits == [0.1, 0.2, 0.3, 0.4]  # the first starts at once, then one every 1/10 s


@pytest.mark.parametrize(("args", "message"), [
    (("sweep", "127.0.0.1", "--workers", "many"), "gpudiag: --workers many: expected a number from 1 to 64, or auto\n"),
    # the demo is hosts like any others: a bad value is said before its cluster starts
    (("sweep", "--demo", "--workers", "0"), "gpudiag: --workers 0: expected a number from 1 to 64, or auto\n"),
    (("sweep", "127.0.0.1", "--connect-rate", "fast"),
     "gpudiag: --connect-rate fast: expected new connections a second, e.g. 50/s (or 3000/min)\n"),
    (("grep", "127.0.0.1", "-s", "xid", "--workers", "0"),
     "gpudiag: --workers 0: expected a number from 1 to 64, or auto\n"),
    (("watch", "127.0.0.1", "--connect-rate", "0/s"),
     "gpudiag: --connect-rate 0/s: expected new connections a second, e.g. 50/s (or 3000/min)\n"),
])
def test_a_bad_option_is_one_line(args: tuple[str, ...], message: str) -> None:
    done = CliRunner().invoke(app, list(args), env={"PATH": "/usr/bin:/bin"})
    assert (done.exit_code, done.stdout, done.stderr) == (3, "", message)
