"""The collector's threads (gpudiag_node.proc.Thread, on _thread alone): what probe.py asks of threading.Thread."""

from __future__ import annotations

import _thread
import time

from gpudiag_node import proc


def test_join_waits_for_the_end_and_is_alive_says_whether_it_came() -> None:
    gate = _thread.allocate_lock()
    gate.acquire()
    done: list[int] = []
    thread = proc.Thread(lambda: (gate.acquire(), done.append(1))).start()
    thread.join(0.0)  # a bound, as _nvml_bounded gives a call into a wedged driver: it returns, the thread runs on
    assert thread.is_alive() and done == []
    # The end comes while join waits (another thread opens the gate once join has begun): join returns with it.
    _thread.start_new_thread(lambda: (time.sleep(0.05), gate.release()), ())
    thread.join(600.0)
    assert not thread.is_alive() and done == [1]
    thread.join(0.0)  # joining an ended thread again returns at once
    assert not thread.is_alive()
