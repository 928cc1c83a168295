"""Watch mode's pure parts: what changed between refreshes, the backoff of a failing host, the bars."""

from __future__ import annotations

import asyncio

import pytest
from builders import finding, gpu, host_report, sweep

from gpudiag.cli.live import bar, render_watch
from gpudiag.model import Host, RemoteResult
from gpudiag.sweep.watch import BackoffTransport, changes
from gpudiag.transport.base import ConnectFailed, RemoteCommand

HOST = Host(name="gpu01")
COMMAND = RemoteCommand(command="true")


def test_changes_by_host_gpu_and_code() -> None:
    a = finding(host="gpu01", gpu=0, code="BUSY_LOW_POWER")
    b = finding(host="gpu01", gpu=1, code="BUSY_LOW_POWER")
    c = finding(host="gpu02", gpu=None, code="HOST_UNREACHABLE")
    first = sweep(host_report("gpu01", findings=[a, b]))
    second = sweep(host_report("gpu01", findings=[a]), host_report("gpu02", findings=[c]))
    assert changes(None, first).appeared == (a, b)
    diff = changes(first, second)
    assert (diff.appeared, diff.cleared) == ((c,), (b,))
    assert changes(second, second).appeared == changes(second, second).cleared == ()


class Flaky:
    """A transport that fails while ``down`` is set, and counts its calls."""

    def __init__(self) -> None:
        self.down = True
        self.calls = 0

    async def run(self, host: Host, command: RemoteCommand) -> RemoteResult:
        self.calls += 1
        if self.down:
            raise ConnectFailed("connection refused by gpu01:22 (host up, nothing listening)")
        return RemoteResult(exit_status=0, stdout=b"{}", stderr=b"")

    async def close(self) -> None:
        return None


def test_a_failing_host_is_retried_with_exponential_backoff_and_comes_back() -> None:
    now = [0.0]
    inner = Flaky()
    transport = BackoffTransport(inner, base_s=2.0, max_s=5.0, clock=lambda: now[0])

    def attempt() -> str:
        try:
            asyncio.run(transport.run(HOST, COMMAND))
            return "ok"
        except ConnectFailed as exc:
            return str(exc)

    assert attempt().endswith("nothing listening)") and inner.calls == 1
    now[0] = 1.0
    assert attempt().endswith("(retrying in 1 s)") and inner.calls == 1  # not asked during the backoff
    now[0] = 2.5
    assert attempt().endswith("nothing listening)") and inner.calls == 2  # second failure: 4 s
    now[0] = 6.0
    assert attempt().endswith("(retrying in 1 s)") and inner.calls == 2
    inner.down = False
    now[0] = 7.0
    assert attempt() == "ok" and inner.calls == 3
    assert attempt() == "ok" and inner.calls == 4  # back: no backoff left


@pytest.mark.parametrize("pct, text", [(0.0, " " * 12 + "   0%"), (100.0, "█" * 12 + " 100%"),
                                       (55.0, "██████▌" + " " * 5 + "  55%"), (None, " " * 12 + "    -"),
                                       (130.0, "█" * 12 + " 130%")])
def test_bar(pct: float | None, text: str) -> None:
    assert bar(pct) == text


def test_render_watch_shows_bars_and_changes() -> None:
    f = finding(host="gpu01", gpu=0, summary="reads 100% busy at 55%")
    report = sweep(host_report("gpu01", gpus=[gpu(index=0, utilization_pct=100.0, power_w=330.0,
                                                  enforced_power_limit_w=600.0)], findings=[f]))
    text = render_watch(2, 3, report, appeared=(f,), width=160)
    assert text.startswith("refresh 2/3 at ")
    assert "████████████ 100%" in text and "██████▌       55%" in text
    assert "+ CRITICAL BUSY_LOW_POWER gpu01 GPU 0: reads 100% busy at 55%" in text


def test_a_long_finding_is_cut_at_a_word_to_one_screen_line() -> None:
    words = " ".join(f"word{i:03d}" for i in range(60))  # 479 characters
    f = finding(host="gpu01", gpu=0, summary=words)
    for width in (80, 200):
        text = render_watch(1, 1, sweep(host_report("gpu01", gpus=[gpu(index=0)], findings=[f])), appeared=(f,),
                            width=width)
        (line,) = [line for line in text.splitlines() if line.startswith("+ ")]
        assert line.endswith("…") and len(line) <= width
        assert line.removesuffix("…").rsplit(" ", 1)[-1] == f"word{int(line.removesuffix('…')[-3:]):03d}"


def test_changes_fold_by_host_and_code_and_give_way_to_the_hosts() -> None:
    hosts = [host_report(f"gpu{h:02d}", gpus=[gpu(index=i) for i in range(8)],
                         findings=[finding(host=f"gpu{h:02d}", gpu=i, summary=f"GPU {i} is slow") for i in range(8)])
             for h in range(1, 7)]
    appeared = tuple(f for h in hosts for f in h.findings)
    text = render_watch(1, 1, sweep(*hosts), appeared=appeared, width=80)
    changes = [line for line in text.splitlines() if line.startswith("+ ")]
    assert changes == [f"+ CRITICAL BUSY_LOW_POWER gpu{h:02d} GPUs 0-7: 8 GPUs; GPU 0: GPU 0 is slow"
                       for h in range(1, 7)]
    # On a short screen the hosts come first: the change lines shrink and say how many more there are, before
    # any host is left out.
    short = render_watch(1, 1, sweep(*hosts), appeared=appeared, width=80, height=16)
    assert short.count("\n") <= 15 and all(len(line) <= 80 for line in short.splitlines())
    kept = [line for line in short.splitlines() if line.startswith("+ ")]
    assert 1 <= len(kept) < 6 and kept == changes[:len(kept)]
    assert f"… {6 - len(kept)} more changes since the last refresh" in short
    assert "not shown (the terminal" not in short and all(f"gpu{h:02d}" in short for h in range(1, 7))
