"""A streaming collector (gpudiag watch): the process stays and answers one round per line read on stdin, one
document per line on stdout, until its input ends (the connection closed) or no line came for a while. A refresh
then costs the readings alone: no SSH session, no interpreter start-up, no compiling."""

import os
import sys

from .wire import KEPT_LINE


def serve(config, collect_round, emit):
    """Answer rounds until stdin ends or stays quiet for ``idle_s``. A round that runs past
    ``round_deadline_s`` ends everything else in the process group and exits 124, as `timeout` does (the
    controller reads that as a timeout), so a stuck call cannot outlive its round."""
    import signal

    signal.signal(signal.SIGALRM, _end_round)
    deadline_s = max(1, int(round(config["round_deadline_s"])))
    # Without a word from the controller (which knows its refresh interval), a few round deadlines.
    idle_s = config["idle_s"] or 3 * deadline_s + 60
    kept = {}  # type: dict[str, object]
    rounds = 0
    for _ in _requests(idle_s):
        rounds += 1
        signal.alarm(deadline_s)
        doc = collect_round(config, kept)
        doc["stream"] = {"round": rounds, "pid": os.getpid()}
        emit(doc)
        signal.alarm(0)
    return 0


def _requests(idle_s):
    """Yield once per empty line on stdin; stop at its end, or when no line came for ``idle_s`` seconds.

    A thread reads stdin the whole time, between rounds and during them, so that its end is seen at once:
    after :data:`KEPT_LINE` it SIGKILLs the process group (a hung nvidia-smi and the collector with it; before,
    a kept collector outlived its channel by up to a call bound, ~12 s). What the loader's buffered read of the
    bundle took in past it (the first round's line) is taken from the buffer first."""
    import signal
    import threading

    fd = sys.stdin.fileno()
    pending = bytearray()
    os.set_blocking(fd, False)
    try:
        pending += sys.stdin.buffer.read1(1 << 16) or b""
    except (BlockingIOError, ValueError, OSError):
        pass
    finally:
        os.set_blocking(fd, True)
    state = {"asked": 0, "ended": False, "kept": False}
    changed = threading.Condition()

    def take_lines():
        while True:
            end = pending.find(b"\n")
            if end < 0:
                return
            line = bytes(pending[:end]).strip()
            del pending[:end + 1]
            if line == KEPT_LINE:
                state["kept"] = True
            else:
                state["asked"] += 1

    def read():
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            with changed:
                if not chunk:
                    if state["kept"]:
                        os.killpg(0, signal.SIGKILL)
                    state["ended"] = True
                    changed.notify()
                    return
                pending.extend(chunk)
                take_lines()
                changed.notify()

    with changed:
        take_lines()
    threading.Thread(target=read, daemon=True).start()
    while True:
        with changed:
            changed.wait_for(lambda: state["asked"] or state["ended"], idle_s)
            if not state["asked"]:
                return  # stdin ended, or nobody asked for a while: the controller is gone (a reset connection)
            state["asked"] -= 1
        yield


def _end_round(*_):
    """SIGALRM past a round's deadline: SIGKILL everything else in this process group (a hung nvidia-smi,
    the log scan's child; sshd gives each command its own group) and exit 124, as `timeout` does. The
    parent is spared: it may be the user's shell in the same group, whose exit status is the session's."""
    import signal

    spared = (os.getpid(), os.getppid())
    group = os.getpgid(0)
    for _ in range(2):  # twice: a child may have forked while the first pass ran
        try:
            pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        except OSError:  # no /proc: the whole group, this process too (the round then reads as cut off)
            os.killpg(0, signal.SIGKILL)
            pids = []
        for pid in pids:
            if pid in spared:
                continue
            try:
                if os.getpgid(pid) == group:
                    os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    os._exit(124)
