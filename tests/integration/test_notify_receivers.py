"""Hostile webhook receivers (issue 23 #1), each a real server on loopback (``tests/webhook.py``): one that
answers 200 and a body that never ends (the controller reached 19 GB), one that sends a byte every second
(it never finished), more than 100 headers (``HTTPException``: the report was lost), a reset, an accept that
never comes. The POST has one deadline and reads only the status line; every failure is one line on stderr and
in the run's record, and ``gpudiag sweep`` prints its report before it notifies."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import pytest

from gpudiag.audit.history import History
from gpudiag.audit.notify import send, targets
from gpudiag.audit.webhook import WebhookError, post_status
from webhook import hostile_webhook, running_webhook

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
DEADLINE_S = 3.0
# What send() says for each receiver: None, delivered (the status line was 200; what follows is not read).
EXPECTED = {"endless_body": None, "drip_body": None, "many_headers": None,
            "drip_status": f"no answer within {DEADLINE_S:g} s", "slow_accept": f"no answer within {DEADLINE_S:g} s",
            "reset": "the receiver reset the connection"}


@pytest.mark.parametrize("behaviour", sorted(EXPECTED))
def test_send_ends_within_its_deadline_with_one_line(behaviour: str) -> None:
    with hostile_webhook(behaviour, drip_every_s=1.0) as receiver:
        url = receiver.url
        result: list[tuple[str, ...]] = []
        raised: list[BaseException] = []

        def post() -> None:
            try:
                result.append(send({"schema": "gpudiag.audit.changes/1"}, targets((url,), None),
                                   timeout_s=DEADLINE_S))
            except BaseException as exc:  # noqa: BLE001 - the test reports it
                raised.append(exc)

        worker = threading.Thread(target=post, daemon=True)
        worker.start()
        # Not a timing assertion: a generous bound that only a POST without a deadline misses (it never ends).
        worker.join(DEADLINE_S + 30)
        assert not worker.is_alive(), f"send() to a {behaviour} receiver did not return"
    assert raised == []
    want = EXPECTED[behaviour]
    label = url.split("?")[0].rsplit("/", 1)[0]
    assert result == [() if want is None else (f"notification to {label} failed: {want}",)]


def test_the_report_is_printed_before_a_receiver_that_never_answers(tmp_path: Path) -> None:
    """``gpudiag sweep --demo --history H --notify URL`` against a receiver that drips its status line: the
    whole report is on stdout while the run still waits on the receiver; then one line on stderr, and the same
    line in the run's record."""
    history = tmp_path / "h.sqlite"
    with hostile_webhook("drip_status", drip_every_s=1.0) as receiver:
        url = receiver.url
        run = subprocess.Popen([sys.executable, "-m", "gpudiag", "sweep", "--demo", "--history", str(history),
                                "--notify", url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=REPO)
        assert run.stdout is not None and run.stderr is not None
        report = []
        for line in run.stdout:  # the table ends with the changes since the last run: all new on a first run
            report.append(line)
            if line.startswith("NEW ") and "train-h200-05" in line:
                break
        # The receiver has not finished its status line (it takes 38 s): the report did not wait for it.
        dripped = receiver.dripped
        rest, errors = run.communicate(timeout=120)
    assert report and report[-1].startswith("NEW ")
    assert dripped < len(b"HTTP/1.1 200 OK\r\n"), f"the report came out after the receiver's {dripped} bytes"
    label = url.split("?")[0].rsplit("/", 1)[0]
    line = f"notification to {label} failed: no answer within 10 s"
    assert errors == f"gpudiag: {line}\n"
    assert run.returncode == 2  # the cluster's state, not the receiver's
    with History.open(history) as opened:
        (recorded,) = opened.runs()
    assert recorded["notify_errors"] == [line]


def _in_a_thread(call: Callable[[], object], bound_s: float) -> list[object]:
    """What ``call`` returned or raised, from a thread joined within ``bound_s`` (a generous bound that only a
    call without a deadline misses); [] when it had not ended by then."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as exc:  # noqa: BLE001 - the test reads it
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(bound_s)
    return outcome


def test_a_name_that_does_not_resolve_in_time_is_one_line_within_the_deadline() -> None:
    # socket.create_connection resolved with no timeout at all: a resolver that does not answer held the run
    release = threading.Event()

    def silent_resolver(host: str, port: int, family: int, kind: int) -> object:
        release.wait(120)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    try:
        outcome = _in_a_thread(lambda: post_status("http://hooks.example/gpudiag", b"{}", 1.0,
                                                   resolve=silent_resolver), bound_s=30)
    finally:
        release.set()
    assert len(outcome) == 1 and isinstance(outcome[0], WebhookError), outcome
    assert str(outcome[0]) == "cannot resolve hooks.example within 1 s"


def test_each_address_of_the_name_is_tried_in_turn_within_one_deadline() -> None:
    with socket.socket() as closed:  # a port nothing listens on: refused at once
        closed.bind(("127.0.0.1", 0))
        refused = closed.getsockname()
    with running_webhook() as hook:
        receiver = urllib.parse.urlsplit(hook.url)
        addresses = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", refused),
                     (socket.AF_INET, socket.SOCK_STREAM, 6, "", (receiver.hostname, receiver.port))]
        outcome = _in_a_thread(lambda: post_status(f"http://hooks.example:{receiver.port}/x", b'{"a": 1}', 5.0,
                                                   resolve=lambda *_: addresses), bound_s=30)
        assert outcome == [(200, "OK")] and hook.bodies == [{"a": 1}]
