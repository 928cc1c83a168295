"""What makes "no network, no subprocess" true for the pure tests (tests/unit, tests/scale): their conftest files
import :func:`no_process_no_network`, an autouse fixture."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest

# asyncssh looks for liboqs when it is first imported (ctypes.util.find_library runs ldconfig, gcc and ld): that is
# the library's import, not the test's doing, so it happens here, before any test is watched. Without this, the
# first unit test to import the SSH transport would fail the guard below when run alone.
import gpudiag.transport.ssh  # noqa: E402,F401

_INTERNET = (socket.AF_INET, socket.AF_INET6)


@pytest.fixture(autouse=True)
def no_process_no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """What makes "no network, no subprocess" true: starting a process (``subprocess``, asyncio's subprocesses,
    ``os.fork``, ``os.posix_spawn``, ``os.system``) or connecting or binding an IP socket is refused (an
    ``OSError``, as a real failure would be) and fails the test, which belongs in ``tests/integration/``.
    Unix sockets and socket pairs (asyncio's own wake-up pipe) stay allowed."""
    refused: list[str] = []

    def refuse(what: str) -> PermissionError:
        refused.append(what)
        return PermissionError(f"a unit test may not {what}: put this test in tests/integration/")

    def guard_process(name: str) -> Callable[..., Any]:
        def refused_call(*args: Any, **kwargs: Any) -> Any:
            raise refuse(f"start a process ({name})")
        return refused_call

    def guard_socket(real: Callable[..., Any], name: str) -> Callable[..., Any]:
        def call(sock: socket.socket, *args: Any, **kwargs: Any) -> Any:
            if sock.family in _INTERNET:
                raise refuse(f"{name} an IP socket ({args[0] if args else ''})")
            return real(sock, *args, **kwargs)
        return call

    monkeypatch.setattr(subprocess.Popen, "_execute_child", guard_process("subprocess"))
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, guard_process(f"os.{name}"))
    for name in ("connect", "connect_ex", "bind"):
        monkeypatch.setattr(socket.socket, name, guard_socket(getattr(socket.socket, name), name))
    yield
    if refused:
        pytest.fail(f"a unit test started a process or used the network: {'; '.join(refused)}", pytrace=False)
