"""Watch mode when hosts drop (issue 14 #7): findings of a host that did not answer are not "cleared", a
dead host's retry does not stretch the refresh, a host that is back is seen within one backoff step."""

from __future__ import annotations

import asyncio
import time

from builders import finding, host_report, sweep
from test_watch import Flaky  # a host that refuses until it is up again

from gpudiag.model import Host, HostStatus, RemoteResult
from gpudiag.sweep.watch import BACKOFF_REFRESHES, BackoffTransport, carry, changes, watch_backoff
from gpudiag.transport.base import ConnectFailed, RemoteCommand

HOST = Host(name="gpu01")
COMMAND = RemoteCommand(command="true")


def test_findings_of_a_host_that_did_not_answer_are_not_cleared_nor_appear_again() -> None:
    busy = finding(host="gpu01", gpu=0, code="BUSY_LOW_POWER")
    other = finding(host="gpu02", gpu=1, code="BUSY_LOW_POWER")
    gone = finding(host="gpu01", gpu=None, code="HOST_UNREACHABLE")
    first = sweep(host_report("gpu01", findings=[busy]), host_report("gpu02", findings=[other]))
    away = sweep(host_report("gpu01", findings=[gone], status=HostStatus.UNREACHABLE), host_report("gpu02"))
    diff = changes(first, away)
    assert (diff.appeared, diff.cleared) == ((gone,), (other,))  # gpu02 answered: its finding did clear
    back = sweep(host_report("gpu01", findings=[busy]), host_report("gpu02"))
    diff = changes(carry(first, away), back)
    assert (diff.appeared, diff.cleared) == ((), (gone,))  # still busy: not new; only the failure cleared


class Dead:
    """A host whose connect attempt lasts ``connect_s`` (a dead host's connect timeout), then fails."""

    def __init__(self, connect_s: float) -> None:
        self.connect_s, self.calls = connect_s, 0

    async def run(self, host: Host, command: RemoteCommand) -> RemoteResult:
        self.calls += 1
        await asyncio.sleep(self.connect_s if self.calls > 1 else 0.0)
        raise ConnectFailed("no SSH login to gpu01 within 10 s")

    async def close(self) -> None:
        return None


def test_a_dead_hosts_retry_holds_a_refresh_for_at_most_its_wait() -> None:
    now = [0.0]
    inner = Dead(connect_s=0.6)
    transport = BackoffTransport(inner, base_s=2.0, retry_wait_s=0.1, clock=lambda: now[0])

    async def attempt() -> tuple[str, float]:
        started = time.monotonic()
        try:
            await transport.run(HOST, COMMAND)
        except ConnectFailed as exc:
            return str(exc), time.monotonic() - started
        return "ok", time.monotonic() - started

    async def scenario() -> list[tuple[str, float]]:
        try:
            first = await attempt()
            now[0] = 3.0  # past the backoff: the retry starts and lasts 0.6 s
            retry = await attempt()
            still = await attempt()  # the attempt is still under way: not a second one
            await asyncio.sleep(0.7)
            done = await attempt()
            return [first, retry, still, done]
        finally:
            await transport.close()

    first, retry, still, done = asyncio.run(scenario())
    assert retry[0].endswith("(retrying now)") and retry[1] < 0.4
    assert still[0].endswith("(retrying now)") and still[1] < 0.4
    assert done[0] == "no SSH login to gpu01 within 10 s" and inner.calls == 2  # its outcome, then backoff



def test_a_host_dropped_for_70_s_is_back_within_one_backoff_step() -> None:
    every_s = 2.0
    now = [0.0]
    inner = Flaky()
    transport = watch_backoff(inner, every_s, clock=lambda: now[0])

    async def refreshes() -> float:
        while True:
            inner.down = now[0] < 70.0
            try:
                await transport.run(HOST, COMMAND)
                return now[0]
            except ConnectFailed:
                now[0] += every_s

    back_at = asyncio.run(refreshes())
    assert back_at <= 70.0 + BACKOFF_REFRESHES * every_s  # with a 60 s cap: 122 s, 52 s after its return



def _bundle_config(stdin: bytes) -> dict[str, object]:
    """The configuration a collector bundle carries (its ``_CONFIG = '<json>'`` line)."""
    import ast
    import json

    line = next(x for x in stdin.decode().splitlines() if x.startswith("_CONFIG = "))
    config: dict[str, object] = json.loads(ast.literal_eval(line[len("_CONFIG = "):]))
    return config


def test_watch_tells_the_kept_collector_when_to_leave() -> None:
    """gpudiag watch passes its idle time (three missed refreshes plus a round) to the kept collector."""
    from gpudiag.sweep.runner import SweepOptions, collector_command

    config = _bundle_config(collector_command(SweepOptions(samples=1, stream=True, idle_s=3 * 5.0 + 30.0)).stdin)
    assert (config["stream"], config["idle_s"]) == (True, 45.0)
    assert _bundle_config(collector_command(SweepOptions(samples=1)).stdin)["idle_s"] is None
