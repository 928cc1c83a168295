"""Target words beyond host patterns: ``@group`` (ClusterShell's groups) and ``^file`` (pdsh's host file).

``gpudiag sweep @gpu`` resolves the group through ClusterShell's own group configuration (``groups.conf``
and its sources, found where clush finds them: ``$CLUSTERSHELL_CFGDIR``, ``~/.config/clustershell``,
``/etc/clustershell``), so a group means what it means to clush; ``@source:group`` picks a source. ClusterShell
is an optional extra (``pip install 'gpudiag[clustershell]'``), imported only when a ``@group`` is given. A
group source may run commands through a shell (its ``map`` upcall, with ``$GROUP`` in it), so only a plain
group name (letters, digits, ``_ . -``, one ``source:`` prefix) is handed over.

``gpudiag sweep ^hosts.txt`` reads host names or patterns from a file, one a line (``#`` starts a comment), as
``pdsh -w ^file`` does. Everything else is a host pattern (:func:`gpudiag.hostlist.expand`).
"""

from __future__ import annotations

import re
from pathlib import Path

from gpudiag.hostlist import HostPatternError, expand

_GROUP = re.compile(r"@(?:[A-Za-z0-9_.-]+:)?[A-Za-z0-9_.-]+")
MISSING_CLUSTERSHELL = ("{word}: @group targets need ClusterShell: pip install 'gpudiag[clustershell]' (or "
                        "apt-get install python3-clustershell)")


class TargetError(ValueError):
    """A target word that cannot be resolved; the message is one line naming it (and the file and line)."""


def expand_target(word: str) -> tuple[str, ...]:
    """The host names one command-line target stands for: ``@group``, ``^file`` or a host pattern."""
    if word.startswith("^"):
        return names_from_file(word[1:])
    if word.startswith("@"):
        return clustershell_group(word)
    try:
        return expand(word)
    except HostPatternError as exc:
        raise TargetError(str(exc)) from None


def names_from_file(path: str) -> tuple[str, ...]:
    """pdsh's ``^file``: the host names (or patterns) of a file, one a line, in order, without duplicates."""
    if not path:
        raise TargetError("^: give a file after the caret, e.g. ^hosts.txt")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise TargetError(f"^{path}: cannot read the host file: {reason}") from None
    names: dict[str, None] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        try:
            names.update(dict.fromkeys(expand(entry)))
        except HostPatternError as exc:
            raise TargetError(f"{path}:{number}: {exc}") from None
    if not names:
        raise TargetError(f"^{path}: the host file names no hosts")
    return tuple(names)


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
