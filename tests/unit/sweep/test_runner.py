"""The fan-out through a fake transport built from a handler function: statuses, order, the window."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from fake_transport import FakeTransport, Handler

from gpudiag.collect.remote import collector_call, loader
from gpudiag.model import Host, HostStatus, RemoteResult
from gpudiag.sweep.runner import SweepOptions, sweep
from gpudiag.transport.base import AuthFailed, ConnectFailed, HostKeyRejected, RemoteCommand, TransportError

DATA = Path(__file__).resolve().parents[2] / "data" / "h200_580.159_fields"
LINE = (DATA / "query-gpu.csv").read_text().strip()

def probe_output(power_w: float = 79.32, util: int = 0) -> bytes:
    from gpudiag_node.smi import choose_fields, known_fields

    fields = [[a, b] for a, b in choose_fields(known_fields((DATA / "help-query-gpu.txt").read_text()))]
    line = LINE.replace(", 79.32,", f", {power_w},").replace(", 143771, 0, 0,", f", 143771, {util}, 10,")
    doc = {"schema": "gpudiag.probe/2", "collector": "python", "host": {"hostname": "n", "kernel": "k"},
           "nvidia_smi": {"path": "/usr/bin/nvidia-smi", "help_exit": 0}, "fields": fields,
           "samples": [{"t_s": 0.0, "exit": 0, "stdout": line + "\n", "stderr": ""}],
           "cuda_version": "13.0", "problems": []}
    return json.dumps(doc).encode()


def run(hosts: list[Host], handler: Handler, **opts: object) -> list[tuple[str, HostStatus, str | None]]:
    transport = FakeTransport(handler)
    report = asyncio.run(sweep(hosts, transport, SweepOptions(**opts)))  # type: ignore[arg-type]
    assert transport.closed
    return [(h.host, h.status, h.error) for h in report.hosts]


def test_every_failure_becomes_a_status_and_order_is_kept() -> None:
    failures: dict[str, BaseException | RemoteResult] = {
        "refused": ConnectFailed("cannot connect to refused:22: Connection refused"),
        "auth": AuthFailed("login refused for user root (Permission denied)"),
        "key": HostKeyRejected("host key of key is not trusted"),
        "hung": RemoteResult(exit_status=124, stdout=b"", stderr=b""),
        "killed": RemoteResult(exit_status=137, stdout=b"", stderr=b""),
        "garbage": RemoteResult(exit_status=127, stdout=b"", stderr=b"sh: 1: timeout: not found\n"),
        "cut": RemoteResult(exit_status=None, stdout=b'{"schema": "gpudiag.pro', stderr=b"",
                            stdout_truncated=True),
        "bug": ZeroDivisionError("division by zero"),
        "good": RemoteResult(exit_status=0, stdout=probe_output(), stderr=b""),
    }

    async def handler(host: Host, command: RemoteCommand) -> RemoteResult:
        outcome = failures[host.name]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    rows = run([Host(name=n) for n in failures], handler, deadline_s=30.0)
    assert [(n, s) for n, s, _ in rows] == [
        ("refused", HostStatus.UNREACHABLE), ("auth", HostStatus.AUTH_FAILED),
        ("key", HostStatus.HOST_KEY_REJECTED), ("hung", HostStatus.TIMEOUT), ("killed", HostStatus.TIMEOUT),
        ("garbage", HostStatus.ERROR), ("cut", HostStatus.ERROR), ("bug", HostStatus.ERROR),
        ("good", HostStatus.OK)]
    errors = {n: e for n, _, e in rows}
    assert errors["hung"] == ("the collector did not finish within 30 s (nvidia-smi may be hung); "
                              "the remote process was ended")
    assert errors["garbage"] is not None and "sh: 1: timeout: not found" in errors["garbage"]
    assert errors["cut"] == "the node's output passed the 4194304 byte bound and was cut"
    assert errors["bug"] == "unexpected ZeroDivisionError: division by zero"
    assert errors["good"] is None


def test_sliding_window_never_exceeds_concurrency() -> None:
    in_flight = 0
    peak = 0

    async def handler(host: Host, command: RemoteCommand) -> RemoteResult:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return RemoteResult(exit_status=0, stdout=probe_output(), stderr=b"")

    rows = run([Host(name=f"n{i}") for i in range(40)], handler, concurrency=7)
    assert peak == 7
    assert [n for n, _, _ in rows] == [f"n{i}" for i in range(40)]


def test_cancellation_is_not_swallowed() -> None:
    async def handler(host: Host, command: RemoteCommand) -> RemoteResult:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        run([Host(name="a")], handler)


def test_findings_come_with_the_report() -> None:
    async def handler(host: Host, command: RemoteCommand) -> RemoteResult:
        return RemoteResult(exit_status=0, stdout=probe_output(power_w=300.0, util=100), stderr=b"")

    report = asyncio.run(sweep([Host(name="a")], FakeTransport(handler), SweepOptions()))
    assert [f.code for f in report.findings] == ["BUSY_LOW_POWER"]
    assert report.exit_code == 1


def test_the_command_quotes_everything_and_bounds_time() -> None:
    call = collector_call(samples=5, interval_s=0.5, deadline_s=30)
    assert call.command.startswith("timeout -k 3 30 sh -c ")
    assert call.stdin.startswith(b"# gpudiag collector bundle")
    # The node-side modules travel as the gpudiag_node package, the probe among them, and the bundle runs it.
    assert b"\ngpudiag_node.probe s " in call.stdin and b"\ngpudiag_node.proc s " in call.stdin
    assert b"from gpudiag_node import jsoncodec, probe\n" \
           b"    code = probe.main_with_config(jsoncodec.loads(_CONFIG), leaves=True)\n" in call.stdin
    assert call.stdin.endswith(b"''')\n")  # the payload, last: the loader does not compile it
    import shlex

    argv = shlex.split(call.command)
    assert argv[:7] == ["timeout", "-k", "3", "30", "sh", "-c", argv[6]]
    # the loader reads exactly the bundle; the shell fallback needs no deadline of its own inside `timeout`
    # and a thread ends the process group when stdin ends (the channel closed: gpudiag.collect.remote)
    assert argv[7:10] == ["gpudiag", loader(call.stdin, watched=True), ""]
    assert argv[8].startswith(f"import os,sys,_thread;b=sys.stdin.buffer.read({len(call.stdin)});"
                              "_thread.start_new_thread(lambda:(all(iter(lambda:os.read(0,65536),b'')),"
                              "os.killpg(0,9)),());")
    assert call.ends_with_stdin
    assert argv[11:13] == ["5", "0.5"]
    assert "clock_event_reasons_mask=clocks_event_reasons.active|clocks_throttle_reasons.active" in argv


def test_a_streaming_collector_bounds_its_own_rounds() -> None:
    import shlex

    call = collector_call(samples=2, interval_s=0.5, deadline_s=30, stream=True)
    argv = shlex.split(call.command)
    assert argv[:2] == ["sh", "-c"] and argv[3] == "gpudiag"  # no `timeout`: it lives as long as the connection
    assert argv[5] == "30"  # ... but the shell fallback, which answers once, is still bounded
    assert argv[4].startswith(f"import sys;b=sys.stdin.buffer.read({len(call.stdin) - 1});")  # not the first line
    assert call.stdin.endswith(b"\n") and b'"round_deadline_s": 30' in call.stdin


def test_transport_error_base_is_an_error_status() -> None:
    assert TransportError("x").status is HostStatus.ERROR


def test_this_machine_out_of_open_files_is_waited_out_not_the_hosts_failure() -> None:
    from gpudiag.transport.base import OutOfFiles

    tries: dict[str, int] = {}

    async def handler(host: Host, command: RemoteCommand) -> RemoteResult:
        tries[host.name] = tries.get(host.name, 0) + 1
        if tries[host.name] <= 3:
            raise OutOfFiles("this machine ran out of open files (Too many open files) before connecting to a:22")
        return RemoteResult(exit_status=0, stdout=probe_output(), stderr=b"")

    assert run([Host(name="a"), Host(name="b")], handler) == [("a", HostStatus.OK, None), ("b", HostStatus.OK, None)]
    assert tries == {"a": 4, "b": 4}


def test_out_of_open_files_past_the_deadline_is_an_error_that_says_whose(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpudiag.transport.base import OutOfFiles

    monkeypatch.setattr("gpudiag.sweep.runner.DEADLINE_GRACE_S", 0.5)  # the deadline is 0 s plus this grace

    async def handler(host: Host, command: RemoteCommand) -> RemoteResult:
        raise OutOfFiles("this machine ran out of open files (Too many open files) before connecting to a:22")

    assert run([Host(name="a")], handler, deadline_s=0.0, samples=1) == [
        ("a", HostStatus.ERROR, "this machine ran out of open files (Too many open files) before connecting to a:22")]


def test_a_stop_reports_what_finished_and_cancels_the_rest() -> None:
    """``stop`` set mid-sweep: the host that answered keeps its report, the one in flight is cancelled (its run
    sees the cancellation, so its channel closes) and the one not started never runs; all three are listed."""
    ran: list[str] = []
    ended: list[str] = []

    async def handler(host: Host, command: RemoteCommand) -> RemoteResult:
        ran.append(host.name)
        if host.name == "fast":
            return RemoteResult(exit_status=0, stdout=probe_output(), stderr=b"")
        try:
            await asyncio.sleep(60)
        finally:
            ended.append(host.name)
        raise AssertionError("not reached")

    async def main() -> list[tuple[str, HostStatus, tuple[str, ...]]]:
        stop = asyncio.Event()
        transport = FakeTransport(handler)
        sweeping = asyncio.ensure_future(sweep([Host(name=n) for n in ("fast", "hung", "later")], transport,
                                               SweepOptions(samples=1, concurrency=1), stop=stop))
        while len(ran) < 2:
            await asyncio.sleep(0.01)
        stop.set()
        report = await asyncio.wait_for(sweeping, 10)
        assert transport.closed
        return [(h.host, h.status, tuple(f.code for f in h.findings)) for h in report.hosts]

    rows = asyncio.run(main())
    assert rows == [("fast", HostStatus.OK, ()), ("hung", HostStatus.CANCELLED, ("HOST_CANCELLED",)),
                    ("later", HostStatus.CANCELLED, ("HOST_CANCELLED",))]
    assert ran == ["fast", "hung"] and ended == ["hung"]
