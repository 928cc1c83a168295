"""Target words as people type them: host patterns with ``user@`` and ``:port`` (``ops@gpu[01-04]:2222``), IPv6
literals (``[fe80::1%eth0]``, ``[::1]:2222``), ``@group`` (ClusterShell's groups), ``^file`` (pdsh's host file)
and ``-`` (host names on stdin: ``squeue -h -o %N | gpudiag sweep -``).

``gpudiag sweep @gpu`` resolves the group through ClusterShell's own group configuration (``groups.conf``
and its sources, found where clush finds them: ``$CLUSTERSHELL_CFGDIR``, ``~/.config/clustershell``,
``/etc/clustershell``), so a group means what it means to clush; ``@source:group`` picks a source. ClusterShell
is an optional extra (``pip install 'gpudiag[clustershell]'``), imported only when a ``@group`` is given. A
group source may run commands through a shell (its ``map`` upcall, with ``$GROUP`` in it), so only a plain
group name (letters, digits, ``_ . -``, one ``source:`` prefix) is handed over.

``gpudiag sweep ^hosts.txt`` reads host names or patterns from a file, one a line (``#`` starts a comment), as
``pdsh -w ^file`` does; ``-`` reads them from stdin the same way, where words may also be separated by spaces
and Slurm's folded lists (``gpu[01-03],cpu1``) expand. A line of either may carry ``user@`` and ``:port`` too.
Everything else is a host pattern (:func:`gpudiag.sources.hostlist.expand`) with an optional user and port
(:func:`gpudiag.sources.model.ssh_target.split_target`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from gpudiag.model.ssh_target import split_target
from gpudiag.sources.hostlist import HostPatternError, expand

_GROUP = re.compile(r"@(?:[A-Za-z0-9_.-]+:)?[A-Za-z0-9_.-]+")
MISSING_CLUSTERSHELL = ("{word}: @group targets need ClusterShell: pip install 'gpudiag[clustershell]' (or "
                        "apt-get install python3-clustershell)")


class TargetError(ValueError):
    """A target word that cannot be resolved; the message is one line naming it (and the file and line)."""


@dataclass(frozen=True, slots=True)
class Target:
    """One host a target word names, with the user and port the word gave (None: not given)."""

    name: str
    user: str | None = None
    port: int | None = None


def resolve_target(word: str, stdin: Callable[[], TextIO] = lambda: sys.stdin) -> tuple[Target, ...]:
    """The hosts one command-line target stands for: ``-``, ``^file``, ``@group`` or ``[user@]pattern[:port]``.
    ``stdin``: where ``-`` reads (asked only then)."""
    if word == "-":
        stream = stdin()
        if stream.isatty():
            raise TargetError("-: reads host names from stdin, but stdin is a terminal (pipe them in: "
                              "squeue -h -o %N | gpudiag sweep -)")
        return _from_lines(stream.read(), "-", "stdin", words_per_line=True)
    if word.startswith("^"):
        return _from_lines(_read_file(word[1:]), word[1:], "the host file", words_per_line=False)
    if word.startswith("@"):
        return tuple(Target(name) for name in clustershell_group(word))
    try:
        endpoint = split_target(word)
        names = (endpoint.host,) if endpoint.literal else expand(endpoint.host)
    except HostPatternError as exc:
        raise TargetError(str(exc)) from None
    return tuple(Target(name, endpoint.user, endpoint.port) for name in names)


def expand_target(word: str) -> tuple[str, ...]:
    """The host names one command-line target stands for (:func:`resolve_target` without users and ports)."""
    return tuple(dict.fromkeys(t.name for t in resolve_target(word)))


def names_from_file(path: str) -> tuple[str, ...]:
    """pdsh's ``^file``: the host names (or patterns) of a file, one a line, in order, without duplicates."""
    return expand_target(f"^{path}")


def _read_file(path: str) -> str:
    if not path:
        raise TargetError("^: give a file after the caret, e.g. ^hosts.txt")
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise TargetError(f"^{path}: cannot read the host file: {reason}") from None


def _from_lines(text: str, where: str, what: str, *, words_per_line: bool) -> tuple[Target, ...]:
    """The targets of a host list, one a line (``words_per_line``: or several, separated by spaces, as squeue
    and scontrol print them), ``#`` starting a comment; each once, the first kept. Another ``^file`` or ``-``
    inside is refused (a file naming itself would never end)."""
    found: dict[str, Target] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        entry = line.split("#", 1)[0].strip()
        for word in entry.split() if words_per_line else ([entry] if entry else []):
            if word == "-" or word.startswith("^"):
                raise TargetError(f"{where}:{number}: {word!r}: a host list cannot name another one")
            try:
                targets = resolve_target(word)
            except TargetError as exc:
                raise TargetError(f"{where}:{number}: {exc}") from None
            for target in targets:
                found.setdefault(target.name, target)
    if not found:
        raise TargetError(f"{'^' if where != '-' else ''}{where}: {what} names no hosts")
    return tuple(found.values())


def clustershell_group(word: str) -> tuple[str, ...]:
    """The nodes of ``@group`` (or ``@a,@b``) as ClusterShell resolves them, in ClusterShell's order."""
    parts = word.split(",")
    bad = next((p for p in parts if not _GROUP.fullmatch(p)), None)
    if bad is not None:
        raise TargetError(f"{word}: expected @group or @source:group (letters, digits, '_', '.', '-'), "
                          f"got {bad!r}")
    try:
        from ClusterShell.Defaults import config_paths
        from ClusterShell.NodeSet import ILLEGAL_GROUP_CHARS, NodeSet, NodeSetException
        from ClusterShell.NodeUtils import GroupResolverConfig, GroupResolverError
    except ImportError:
        raise TargetError(MISSING_CLUSTERSHELL.format(word=word)) from None
    # A resolver of our own, built now: ClusterShell's default one reads $CLUSTERSHELL_CFGDIR once, at import.
    resolver = GroupResolverConfig(config_paths("groups.conf"), ILLEGAL_GROUP_CHARS)
    names: dict[str, None] = {}
    for part in parts:
        try:
            found = list(NodeSet(part, resolver=resolver))
        except GroupResolverError as exc:
            raise TargetError(f"{part}: ClusterShell cannot resolve the group: {_one_line(exc)}") from None
        except NodeSetException as exc:
            hint = (" (ClusterShell wants both ends of a range padded alike: gpu[01-99],gpu100)"
                    if "padding length mismatch" in str(exc) else "")
            raise TargetError(f"{part}: ClusterShell cannot read the group's nodes: {_one_line(exc)}{hint}") from None
        if not found:
            raise TargetError(f"{part}: no such ClusterShell group, or it is empty (clush -b -w {part} shows it)")
        names.update(dict.fromkeys(str(n) for n in found))
    return tuple(names)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
