"""SSH files that cannot be used are one line in words naming them (issue 30 item 8): not Python's
``[Errno 2] No such file or directory: 'id'``."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudiag.transport.base import KeyLoadError
from gpudiag.transport.ssh import KeyRing


def test_a_missing_or_unreadable_key_is_said_in_words(tmp_path: Path) -> None:
    for path, why in ((tmp_path / "missing", "cannot read it (no such file or directory)"),
                      (tmp_path, "cannot read it (is a directory)")):
        with pytest.raises(KeyLoadError) as info:
            KeyRing().load(str(path))
        assert str(info.value) == f"identity file {path}: {why}"


def test_a_known_hosts_folder_is_one_line_before_any_connection(tmp_path: Path) -> None:
    from gpudiag.model.request import SshRequest
    from gpudiag.transport.build import SshConfigError, ssh_options

    # was each host's "unreachable: cannot connect to x:22: Is a directory"
    with pytest.raises(SshConfigError, match=f"^--known-hosts {tmp_path}: a folder, not a known_hosts file$"):
        ssh_options(SshRequest(known_hosts=str(tmp_path)), ())


def test_an_ssh_config_line_asyncssh_refuses_is_said_by_the_transport(tmp_path: Path) -> None:
    import asyncio

    from gpudiag.model import Host
    from gpudiag.transport.base import RemoteCommand, TransportError
    from gpudiag.transport.ssh import SshOptions, SshTransport

    config = tmp_path / "ssh_config"
    config.write_text("Host x\n  Port abc\n")

    async def run() -> None:
        transport = SshTransport(SshOptions(ssh_config=[str(config)]))
        try:
            await transport.run(Host(name="x"), RemoteCommand(command="true"))
        finally:
            await transport.close()

    # was "unexpected ConfigParseError: ..." from the sweep's catch-all: asyncssh's error leaked past the transport
    with pytest.raises(TransportError, match=f"^SSH config: {config} line 2: Invalid Port integer value: abc$"):
        asyncio.run(run())
