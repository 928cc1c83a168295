"""The inventory: a YAML file (or ad hoc patterns) turned into the hosts of a sweep, checked before any SSH.

The file has four optional sections (``inventory.yaml`` at the repository root shows every feature)::

    defaults: {user: ubuntu, port: 22}                 # vars for every host
    groups:
      rack1:
        hosts: ["gpu[01-16]", gpu-spare]               # names or patterns (quoted inside [ ] lists)
        vars: {identity_file: ~/.ssh/cluster_ed25519}
    hosts:
      gpu01: {address: 10.0.0.11}                      # a name or pattern; need not be in a group
    checks: {busy_utilization_pct: 90}                 # threshold overrides, kept raw for the checks

A host's settings are the defaults, overridden by the vars of each group it is in (in file order), overridden
by its entries under ``hosts:``. A var set to null unsets a lower level's value (the SSH config decides).
Every error is an ``InventoryError`` whose message is one line naming the file, the line and the key, so the
operator can fix the file before anything connects. The file is read by ``gpudiag.sources.yaml_file`` (the one module
that imports yaml, with the limits that refuse alias bombs and huge files). An Ansible inventory (INI or YAML,
told apart by ``gpudiag.sources.ansible_inventory.detect``) is read by ``gpudiag.sources.ansible_inventory`` instead.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from gpudiag.model import Host
from gpudiag.model.ssh_target import not_ascii, not_printable, split_target
from gpudiag.sources.ansible_inventory import AnsibleInventoryError, detect, load_ansible  # Ansible's INI and YAML
from gpudiag.sources.hostlist import HostPatternError, expand, fold
from gpudiag.sources.targets import Target, TargetError, resolve_target  # user@host:port, @group, ^file, - (stdin)
from gpudiag.sources.yaml_file import (
    Document,
    MappingNode,
    Node,
    ScalarNode,
    SequenceNode,
    YamlFileError,
    compose,
    read_text,
)

VAR_KEYS = ("address", "identity_file", "jump", "known_hosts", "logs", "port", "user")
_TOP_KEYS = ("checks", "defaults", "groups", "hosts")
_GROUP_KEYS = ("hosts", "vars")
_NULL_TAG = "tag:yaml.org,2002:null"
_MERGE_TAG = "tag:yaml.org,2002:merge"
# Group names are used by --limit next to host patterns, so they must read as one plain name.
_GROUP_NAME = re.compile(r"[A-Za-z0-9._-]+")
_JUMP_HOST = re.compile(r"[A-Za-z0-9._-]+")  # one bastion: no pattern, no space, no '/'
_CONTROL = frozenset(map(chr, [*range(0x20), 0x7F]))  # in a host, user or path: never meant
_BRACKET_HINT = 'quote host patterns inside [ ] lists, e.g. ["gpu[01-16]"], or use a "- " list'


class InventoryError(Exception):
    """The inventory or a host selection cannot be used; the message is one line naming file, line and key."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Inventory:
    """A loaded inventory: the hosts in order of appearance, the group members, and raw check settings."""

    hosts: tuple[Host, ...]
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    settings: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))
    """The ``checks:`` section as written: threshold name → number; the checks layer validates the names."""
    read_as: str | None = None
    """One line saying what was read when the file was not in gpudiag's format (an Ansible inventory)."""


def load_inventory(path: str | os.PathLike[str]) -> Inventory:
    """Read and check the inventory at ``path``; raises ``InventoryError`` (one line) on any problem."""
    file = os.fspath(path)
    try:
        text = read_text(file, "inventory")
        detected = detect(file, text)  # a YAML file is composed there, once, with yaml_file's limits
        if detected.kind is not None:
            found = load_ansible(file, text, detected)
            return Inventory(hosts=found.hosts, groups=found.groups, read_as=found.read_as)
        document = detected.document or compose(file, text)
    except YamlFileError as exc:
        raise _yaml_error(exc) from exc
    except AnsibleInventoryError as exc:
        raise InventoryError(str(exc)) from exc
    try:
        return _Reader(document).inventory(document.root)
    finally:
        document.close()


def select(hosts: Sequence[Host], limit: Sequence[str] = (), exclude: Sequence[str] = ()) -> tuple[Host, ...]:
    """The hosts that ``--limit`` picks (all when empty) less those ``--exclude`` names, in inventory order.

    Each ``limit`` entry is a group name or a host pattern; a pattern may also name groups
    (``rack[1-2]``). Every name it gives must be a group or a host, so a typo cannot silently drop a host
    from the sweep. ``exclude`` entries are host patterns; names that are not hosts are ignored there.
    """
    names = {host.name for host in hosts}
    members: dict[str, set[str]] = {}
    for host in hosts:
        for group in host.groups:
            members.setdefault(group, set()).add(host.name)
    chosen: set[str] | None = None
    if limit:
        chosen = set()
        for entry in limit:
            unknown = []
            for name in (entry,) if entry in members else _expand_option("--limit", entry):
                if name in members:
                    chosen.update(members[name])
                elif name in names:
                    chosen.add(name)
                else:
                    unknown.append(name)
            if unknown:
                raise InventoryError(f"--limit {entry!r}: no group or host named {fold(unknown)}")
    dropped: set[str] = set()
    for entry in exclude:
        dropped.update(_expand_option("--exclude", entry))
    return tuple(h for h in hosts if (chosen is None or h.name in chosen) and h.name not in dropped)


def hosts_from_patterns(
    patterns: Sequence[str],
    user: str | None = None,
    port: int | None = None,
    identity_file: str | None = None,
) -> tuple[Host, ...]:
    """Ad hoc targets without an inventory: every host the words give, in order, without duplicates (the
    first wins). A word's own ``user@`` and ``:port`` win over ``user`` and ``port`` (--user, --port), as the
    more specific; neither given, ~/.ssh/config decides.

    The address stays ``None``: the name is resolved later by ``~/.ssh/config`` and DNS.
    """
    if isinstance(patterns, str):  # one pattern passed bare must not be read as a list of characters
        patterns = (patterns,)
    if port is not None and not _valid_port(port):
        raise InventoryError(f"port must be an integer from 1 to 65535, got {port!r}")
    if user is not None:
        check_user(user)
    found: dict[str, Target] = {}
    for pattern in patterns:
        try:
            targets = resolve_target(pattern)
        except TargetError as exc:
            raise InventoryError(f"host pattern: {exc}" if pattern[:1] not in "@^-" else str(exc)) from exc
        for target in targets:
            if target.user is not None:
                check_user(target.user)
            found.setdefault(target.name, target)
    if not found:
        raise InventoryError("no hosts given: name at least one host or pattern")
    return tuple(Host(name=t.name, user=t.user or user, port=t.port or port, identity_file=identity_file)
                 for t in found.values())


def valid_jump(value: str) -> bool:
    """Whether ``value`` reads as one bastion, ``[user@]host[:port]`` (``ops@[::1]:22``): a host, not a pattern."""
    try:
        jump = split_target(value)
    except HostPatternError:
        return False
    return jump.literal or _JUMP_HOST.fullmatch(jump.host) is not None


def check_user(user: str) -> None:
    """Raise :class:`InventoryError` (one line) for a user name no SSH login can have (a space, a NUL or
    another control character), before any connection rather than at each host's."""
    if any(c in _CONTROL or c.isspace() for c in user):
        raise InventoryError(f"user {user!r} holds a space or a control character")
    problem = not_ascii(user)
    if problem is not None:
        raise InventoryError(f"user {user!r} {problem}")


def describe(hosts: Iterable[Host]) -> list[dict[str, object]]:
    """Each host's effective settings as plain values (for ``gpudiag inventory``; ``None`` means unset)."""
    plain = ("address", "user", "port", "identity_file", "known_hosts", "jump")
    return [
        {"name": h.name, "target": h.target, **{key: getattr(h, key) for key in plain}}
        | {"groups": list(h.groups), "logs": list(h.logs)}
        for h in hosts
    ]


def _expand_option(option: str, pattern: str) -> tuple[str, ...]:
    """``expand`` for a command-line value, with its error turned into an ``InventoryError``."""
    try:
        return expand(pattern)
    except HostPatternError as exc:
        raise InventoryError(f"{option}: {exc}") from exc


def _valid_port(value: object) -> bool:
    # bool is an int in Python, and YAML reads "yes" as True; neither is a port.
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535


def _yaml_error(exc: YamlFileError) -> InventoryError:
    """A YAML error as one line with the file and line it points at."""
    if "got '['" in exc.message:  # the usual cause: an unquoted gpu[01-16] inside a flow list
        return InventoryError(f"{exc}; {_BRACKET_HINT}")
    return InventoryError(str(exc))


def _kind(node: Node, value: object = None) -> str:
    """What a node holds, in words, for "expected X, got Y" messages."""
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    if node.tag == _NULL_TAG:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {node.value}"
    if isinstance(value, (int, float)):
        return f"the number {node.value}"
    return f"the string {node.value!r}"


@dataclass(frozen=True, slots=True)
class _Group:
    name: str
    key: Node
    members: tuple[str, ...]
    vars: dict[str, object]
    member_set: frozenset[str]  # for lookups: a sweep may hold thousands of hosts


class _Reader:
    """Walks the composed YAML nodes, so every error can name the line its key or value is on."""

    def __init__(self, document: Document) -> None:
        self.file = document.file
        self.document = document

    def error(self, node: Node, where: str, message: str) -> InventoryError:
        prefix = f"{self.file}:{node.start_mark.line + 1}: "
        return InventoryError(prefix + (f"{where}: " if where else "") + message)

    def inventory(self, root: Node | None) -> Inventory:
        if root is None or root.tag == _NULL_TAG:
            raise InventoryError(
                f"{self.file}:1: the inventory is empty: list hosts under 'groups:' or 'hosts:'"
            )
        top = self.mapping(root, "", _TOP_KEYS)
        defaults = self.vars(top["defaults"][1], "defaults") if "defaults" in top else {}
        order: dict[str, None] = {}  # host names in order of first appearance in the file
        groups: list[_Group] = []
        entries: list[tuple[frozenset[str], dict[str, object]]] = []
        settings: Mapping[str, object] = MappingProxyType({})
        for section, (_, value) in top.items():  # file order, so hosts keep the order they are written in
            if section == "groups":
                groups = self.groups(value)
                for group in groups:
                    order.update(dict.fromkeys(group.members))
            elif section == "hosts":
                for names, host_vars in self.hosts(value):
                    order.update(dict.fromkeys(names))
                    entries.append((frozenset(names), host_vars))
            elif section == "checks":
                settings = self.checks(value)
        if not order:
            raise self.error(root, "", "no hosts: list them under 'groups:' or 'hosts:'")
        for group in groups:
            if group.name in order:
                raise self.error(group.key, f"groups.{group.name}", "a host has this name too; rename one")
        # Each host's groups and entries, indexed once: looking every host up in every group and every entry
        # was quadratic (100,000 hosts: minutes). Group order, then entry order, decides which value wins.
        groups_of: dict[str, list[_Group]] = {}
        for group in groups:
            for member in group.member_set:
                groups_of.setdefault(member, []).append(group)
        entries_of: dict[str, list[dict[str, object]]] = {}
        for entry_names, host_vars in entries:
            for member in entry_names:
                entries_of.setdefault(member, []).append(host_vars)
        hosts = []
        for name in order:
            effective = dict(defaults)
            member_of = groups_of.get(name, ())
            for group in member_of:
                effective.update(group.vars)
            for host_vars in entries_of.get(name, ()):
                effective.update(host_vars)
            hosts.append(_host(name, effective, tuple(group.name for group in member_of)))
        return Inventory(
            hosts=tuple(hosts),
            groups=MappingProxyType({group.name: group.members for group in groups}),
            settings=settings,
        )

    def groups(self, node: Node) -> list[_Group]:
        groups = []
        for name, (key, value) in self.mapping(node, "groups").items():
            where = f"groups.{name}"
            if not _GROUP_NAME.fullmatch(name):
                raise self.error(key, where, "a group name may hold only letters, digits, '.', '_' and '-'")
            body = self.mapping(value, where, _GROUP_KEYS, allow_null=False)
            if "hosts" not in body:
                raise self.error(key, where, "missing key 'hosts'")
            members = self.patterns(body["hosts"][1], f"{where}.hosts")
            group_vars = self.vars(body["vars"][1], f"{where}.vars") if "vars" in body else {}
            groups.append(_Group(name, key, members, group_vars, frozenset(members)))
        return groups

    def hosts(self, node: Node) -> list[tuple[tuple[str, ...], dict[str, object]]]:
        entries = []
        for pattern, (key, value) in self.mapping(node, "hosts").items():
            try:
                names = expand(pattern)
            except HostPatternError as exc:
                raise self.error(key, "hosts", str(exc)) from exc
            host_vars = self.vars(value, f"hosts.{pattern}")
            if len(names) > 1 and host_vars.get("address") is not None:
                raise self.error(key, f"hosts.{pattern}", f"one address for {len(names)} hosts")
            entries.append((names, host_vars))
        return entries

    def checks(self, node: Node) -> Mapping[str, object]:
        settings: dict[str, object] = {}
        for name, (_, value) in self.mapping(node, "checks").items():
            number = self.construct(value, f"checks.{name}") if isinstance(value, ScalarNode) else None
            if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number):
                raise self.error(value, f"checks.{name}", f"expected a number, got {_kind(value, number)}")
            settings[name] = number
        return MappingProxyType(settings)

    def patterns(self, node: Node, where: str) -> tuple[str, ...]:
        if node.tag == _NULL_TAG:
            return ()
        if not isinstance(node, SequenceNode):
            got = _kind(node, self.construct(node, where) if isinstance(node, ScalarNode) else None)
            hint = f" ({_BRACKET_HINT})" if isinstance(node, ScalarNode) else ""
            raise self.error(node, where, f"expected a list of host names or patterns, got {got}{hint}")
        names: dict[str, None] = {}
        for index, item in enumerate(node.value):
            if not isinstance(item, ScalarNode):
                raise self.error(
                    item, f"{where}[{index}]", f"expected a host name or pattern, got {_kind(item)}"
                )
            try:
                # The text as written: a host called 0042 must not become the number 42.
                names.update(dict.fromkeys(expand(item.value)))
            except HostPatternError as exc:
                raise self.error(item, f"{where}[{index}]", str(exc)) from exc
        return tuple(names)

    def vars(self, node: Node, where: str) -> dict[str, object]:
        entries = self.mapping(node, where, VAR_KEYS)
        return {key: self.var(key, value, f"{where}.{key}") for key, (_, value) in entries.items()}

    def var(self, key: str, node: Node, where: str) -> object:
        if key == "logs":
            return self.logs(node, where)
        expected = "an integer from 1 to 65535" if key == "port" else "a string"
        value = self.construct(node, where) if isinstance(node, ScalarNode) else None
        if node.tag == _NULL_TAG:
            return None  # an explicit null unsets what defaults or a group gave
        if key == "port":
            if not _valid_port(value):
                raise self.error(node, where, f"expected {expected}, got {_kind(node, value)}")
            return value
        if not isinstance(value, str) or not value.strip():
            raise self.error(node, where, f"expected {expected}, got {_kind(node, value)}")
        if key in ("address", "user", "jump") and any(c.isspace() for c in value):
            raise self.error(node, where, f"{value!r} holds a space")
        if any(c in _CONTROL for c in value):  # a NUL would fail only at connect time, on every run
            raise self.error(node, where, f"{value!r} holds a control character")
        problem = not_ascii(value) if key in ("address", "user", "jump") else not_printable(value)
        if key in ("address", "user", "jump", "identity_file", "known_hosts") and problem is not None:
            raise self.error(node, where, f"{value!r} {problem}")
        if key == "jump" and not valid_jump(value):
            raise self.error(node, where, f"expected [user@]host[:port] (an IPv6 host in brackets: [::1]:22) with a "
                                          f"port 1-65535, got {value!r}")
        return value

    def logs(self, node: Node, where: str) -> tuple[object, ...]:
        if node.tag == _NULL_TAG:
            return ()
        if not isinstance(node, SequenceNode):
            raise self.error(node, where, f"expected a list of log paths or mappings, got {_kind(node)}")
        logs: list[object] = []
        for index, item in enumerate(node.value):
            value = self.construct(item, f"{where}[{index}]") if isinstance(item, ScalarNode) else None
            if isinstance(item, MappingNode):
                self.mapping(item, f"{where}[{index}]")  # checks keys and duplicates, resolves merges
                logs.append(self.construct(item, f"{where}[{index}]"))
            elif isinstance(value, str) and value.strip():
                logs.append(value)
            else:
                got = _kind(item, value)
                raise self.error(item, f"{where}[{index}]", f"expected a log path or a mapping, got {got}")
        return tuple(logs)

    def mapping(
        self, node: Node, where: str, known: Sequence[str] | None = None, allow_null: bool = True
    ) -> dict[str, tuple[Node, Node]]:
        """A mapping node's entries by key, in file order, after checking keys, duplicates and merges."""
        if allow_null and node.tag == _NULL_TAG:
            return {}
        if not isinstance(node, MappingNode):
            value = self.construct(node, where) if isinstance(node, ScalarNode) else None
            raise self.error(node, where, f"expected a mapping, got {_kind(node, value)}")
        seen = set()
        for key, _ in node.value:
            # Checked before merging: a key that overrides a merged (<<: *anchor) one is not a duplicate.
            if key.tag != _MERGE_TAG:
                name = self.key(key, where)
                if name in seen:
                    raise self.error(key, where, f"duplicate key {name!r}")
                seen.add(name)
        try:
            self.document.flatten_mapping(node)
        except YamlFileError as exc:
            raise _yaml_error(exc) from exc
        entries: dict[str, tuple[Node, Node]] = {}
        for key, value in node.value:  # after flattening, merged keys come first, so the last one wins
            name = self.key(key, where)
            if known is not None and name not in known:
                raise self.error(key, where, f"unknown key {name!r} (known: {', '.join(sorted(known))})")
            entries[name] = (key, value)
        return entries

    def key(self, node: Node, where: str) -> str:
        if not isinstance(node, ScalarNode):
            raise self.error(node, where, f"a key must be a plain name, got {_kind(node)}")
        return str(node.value)

    def construct(self, node: Node, where: str) -> object:
        """The Python value of a node, by YAML's own rules (``22`` is an int, ``yes`` a bool)."""
        try:
            return self.document.construct(node)
        except YamlFileError as exc:  # e.g. 2024-13-45 resolves as a date and fails
            raise self.error(node, where, exc.message) from exc


def _host(name: str, effective: Mapping[str, object], groups: tuple[str, ...]) -> Host:
    """A ``Host`` from validated settings (each already checked by ``_Reader.var``)."""

    def text(key: str) -> str | None:
        value = effective.get(key)
        return value if isinstance(value, str) else None

    port = effective.get("port")
    logs = effective.get("logs")
    return Host(
        name=name,
        address=text("address"),
        user=text("user"),
        port=port if isinstance(port, int) else None,
        identity_file=text("identity_file"),
        known_hosts=text("known_hosts"),
        jump=text("jump"),
        logs=logs if isinstance(logs, tuple) else (),
        groups=groups,
    )
