"""What an OpenSSH client's exit says about a host: exit 255 and its last stderr line, as one
:class:`~gpudiag.transport.base.TransportError` (the status and one sentence), for the transports that run the
``ssh`` program rather than asyncssh (ClusterShell's fan-out and tree, :mod:`gpudiag.transport.clush`).

Standard library only, pure: tested on recorded lines. ``ssh`` exits 255 when it failed itself (ssh(1): "ssh exits
with the exit status of the remote command or with 255 if an error occurred"); the remote command's own 255 is told
apart by the document it printed (a caller reads stdout first).
"""

from __future__ import annotations

from collections.abc import Sequence

from gpudiag.model import UnreachableReason
from gpudiag.transport.base import AuthFailed, ConnectFailed, ConnectionLost, HostKeyRejected, TransportError

SSH_FAILED_EXIT = 255

# (words in OpenSSH's stderr, lowered) -> what they mean. The first match wins; the texts are OpenSSH's own
# (sshconnect.c, ssh.c): the last hop's ssh prints them, whichever hop it runs on.
_HOST_KEY = ("host key verification failed", "remote host identification has changed",
             "host key for", "no matching host key type")
_AUTH = ("permission denied", "too many authentication failures")
_REASONS: tuple[tuple[tuple[str, ...], UnreachableReason], ...] = (
    (("connection refused",), UnreachableReason.REFUSED),
    (("timed out", "operation timed out", "banner exchange"), UnreachableReason.TIMEOUT),
    (("could not resolve hostname", "name or service not known", "temporary failure in name resolution"),
     UnreachableReason.DNS),
    (("no route to host", "network is unreachable", "connection reset", "connection closed by"),
     UnreachableReason.NETWORK),
)


def ssh_failure(stderr_lines: Sequence[str], *, where: str = "") -> TransportError:
    """The error an ``ssh`` that exited 255 with ``stderr_lines`` stands for; ``where``: the hop, prefixed to
    the sentence ("through gateway gw1: ")."""
    said = next((line.strip() for line in reversed(stderr_lines) if line.strip()), "")
    text = " ".join(stderr_lines).lower()
    sentence = f"{where}{said or 'ssh failed (exit 255) and said nothing'}"[:300]
    if any(words in text for words in _HOST_KEY):
        return HostKeyRejected(sentence)
    if any(words in text for words in _AUTH):
        return AuthFailed(sentence)
    for words, reason in _REASONS:
        if any(w in text for w in words):
            return ConnectFailed(sentence, reason=reason)
    return ConnectionLost(sentence)
