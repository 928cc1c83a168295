"""A target word as ssh reads one, ``[user@]host[:port]``: the inventory, ``-J`` and the transport's bastions
all split it here. Standard library only."""

from __future__ import annotations

import ipaddress
import unicodedata
from dataclasses import dataclass


class HostPatternError(ValueError):
    """A host pattern (or a name given to ``fold``) that cannot be read; the message names it."""


@dataclass(frozen=True, slots=True)
class SshTarget:
    """A target word as ssh reads one: ``[user@]host[:port]``, the host an IPv6 literal in brackets or not."""

    host: str  # a host pattern, or (``literal``) an IPv6 address without its brackets
    user: str | None = None
    port: int | None = None
    literal: bool = False  # an IPv6 address: connect to it as it is, never expand it as a pattern


def shown_character(char: str) -> str:
    """ "'２' (U+FF12 FULLWIDTH DIGIT TWO)": a character as a person can find it, even an invisible one."""
    return f"{char!r} (U+{ord(char):04X} {unicodedata.name(char, 'unnamed')})"


def not_ascii(value: str) -> str | None:
    """Why ``value`` cannot be a host name, address, user or port that ssh reads, or None. Python reads
    Unicode digits as numbers (``int("２２７")`` is 227, and a fullwidth address resolves to 227.0.1.5), and a
    zero-width space is invisible in a user name: what ssh takes is printable ASCII."""
    bad = next((c for c in value if not (c.isascii() and c.isprintable())), None)
    if bad is None:
        return None
    return f"holds {shown_character(bad)}: ssh takes ASCII only here"


def not_printable(value: str) -> str | None:
    """Why ``value`` cannot be a local path (a key or known_hosts file), or None: a path may hold any letter,
    but never an invisible or control character (a zero-width space, a direction override)."""
    bad = next((c for c in value if not c.isprintable()), None)
    return None if bad is None else f"holds {shown_character(bad)}, an invisible or control character"


def split_target(word: str) -> SshTarget:
    """``user@gpu[01-04]:2222``, ``[fe80::1%eth0]``, ``ops@[::1]:22`` or a bare ``::1`` into its parts.

    The port follows the last ``:`` outside brackets; an IPv6 literal needs brackets to carry a port (as in
    ssh's ProxyJump and scp). Raises ``HostPatternError`` naming the word for an empty user or host, a port
    that is not 1-65535, a character that is not printable ASCII, or brackets holding something that is
    neither a range nor an IPv6 address."""
    problem = not_ascii(word)
    if problem is not None:
        raise HostPatternError(f"bad target {word!r}: {problem}")
    user, at, rest = word.rpartition("@") if "@" in word else (None, "", word)
    if at and not user:
        raise HostPatternError(f"bad target {word!r}: nothing before the '@' (expected user@host)")
    host, port = rest, None
    if rest.startswith("[") and "]" in rest and ":" in rest[1:rest.index("]")]:
        host, after = rest[1:rest.index("]")], rest[rest.index("]") + 1:]
        if after:
            if not after.startswith(":"):
                raise HostPatternError(f"bad target {word!r}: expected [IPv6] or [IPv6]:port")
            port = _port(word, after[1:])
        return SshTarget(host=_ipv6(word, host), user=user, port=port, literal=True)
    if rest.count(":") > 1:  # a bare IPv6 address: ssh ::1
        return SshTarget(host=_ipv6(word, rest), user=user, literal=True)
    if ":" in rest:
        host, _, text = rest.rpartition(":")
        port = _port(word, text)
    if not host:
        raise HostPatternError(f"bad target {word!r}: no host name")
    return SshTarget(host=host, user=user, port=port)


def _port(word: str, text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 65535:
        raise HostPatternError(f"bad target {word!r}: the port must be 1-65535, got {text!r}")
    return int(text)


def _ipv6(word: str, address: str) -> str:
    try:  # a zone (fe80::1%eth0) is the interface the link-local address is on
        ipaddress.IPv6Address(address.partition("%")[0])
    except ValueError:
        raise HostPatternError(f"bad target {word!r}: {address!r} is not an IPv6 address") from None
    return address
