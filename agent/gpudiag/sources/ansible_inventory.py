"""Ansible inventories (INI and YAML) read as gpudiag inventories: ``gpudiag sweep -i hosts.ini``.

What is read: groups and ``children`` (any depth), host ranges (``gpu[01:16]``, ``[a:f]``, ``[1:9:2]``,
padding as Ansible pads: both ends the same width), ``host:port``, vars on INI host lines, ``[group:vars]``,
a YAML group's ``vars``, and the ``host_vars/`` and ``group_vars/`` folders next to the file (``<name>``,
``<name>.yml``, ``.yaml``, ``.json``, or a folder of such files). The variables gpudiag uses, and how a host
is made of them, are in :mod:`gpudiag.sources.ansible_vars`.

Precedence follows Ansible's: the inventory file's group vars from ``all`` down (a child group over its parent,
then by name), then ``group_vars/`` files in the same order, then the host's own vars in the file, then its
``host_vars/`` file.

Not supported, each with one line naming the file (and line): an executable dynamic inventory script, an
inventory plugin configuration (``plugin:``), Ansible Vault (an encrypted file or a ``!vault`` value), and what
:mod:`gpudiag.sources.ansible_vars` refuses. For the first three, ``ansible-inventory -i SOURCE --list --yaml >
hosts.yml`` writes a static inventory.

YAML is read through :mod:`gpudiag.sources.yaml_file` (its size limit, alias-bomb and depth checks, file:line errors),
with Ansible's tags: ``!unsafe`` is a plain string, ``!vault`` is refused.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from gpudiag.model import Host
from gpudiag.sources.ansible_vars import AnsibleInventoryError, expand_range, host_from_vars
from gpudiag.sources.yaml_file import Document, MappingNode, Node, ScalarNode, compose, read_text

__all__ = ["VAULT_HEADER", "AnsibleInventory", "AnsibleInventoryError", "Detected", "detect", "expand_range",
           "load_ansible"]

VAULT_HEADER = "$ANSIBLE_VAULT;"
_SECTION = re.compile(r"^\s*\[([^\]\s]+)\]\s*(?:[#;].*)?$")
_VAR_FILE_SUFFIXES = ("", ".yml", ".yaml", ".json")
_GROUP_KEYS = ("children", "hosts", "vars")


@dataclass(frozen=True, slots=True)
class Detected:
    """What :func:`detect` found: ``kind`` is ``"ini"``, ``"yaml"`` (an Ansible inventory) or None (gpudiag's own
    format); ``document`` is the composed YAML (None for INI), for the reader that takes the file next."""

    kind: str | None
    document: Document | None = None


def detect(file: str, text: str) -> Detected:
    """Whether ``text`` (read from ``file``) is an Ansible inventory; a YAML file is composed once, here.

    Raises :class:`AnsibleInventoryError` at once for what gpudiag cannot read (a dynamic inventory script, a
    vault file, a plugin configuration) and ``YamlFileError`` for YAML that no reader can take (an alias bomb,
    a syntax error): the same line gpudiag's own reader would give.
    """
    if text.startswith(VAULT_HEADER):
        raise AnsibleInventoryError(f"{file}:1: an Ansible Vault encrypted file: gpudiag cannot decrypt it; decrypt "
                                    "it (ansible-vault view) or write a static inventory with ansible-inventory "
                                    "--list --yaml")
    if text.startswith("#!") and os.access(file, os.X_OK):
        raise AnsibleInventoryError(f"{file}:1: an executable Ansible dynamic inventory script: gpudiag does not "
                                    f"run it; write a static one with ansible-inventory -i {file} --list --yaml > "
                                    "hosts.yml")
    if any(_SECTION.match(line) for line in text.splitlines()):
        return Detected("ini")
    document = compose(file, text)  # composed, not constructed: Ansible's own tags must not fail the detection
    try:
        kind = _yaml_kind(file, document.root)
    except AnsibleInventoryError:
        document.close()
        raise
    if kind == "ini":
        document.close()
        return Detected("ini")
    return Detected(kind, document)


def _yaml_kind(file: str, root: Node | None) -> str | None:
    if isinstance(root, MappingNode):
        top = {str(k.value): v for k, v in root.value if isinstance(k, ScalarNode)}
        if "plugin" in top:
            plugin = top["plugin"].value if isinstance(top["plugin"], ScalarNode) else "?"
            raise AnsibleInventoryError(f"{file}:1: an Ansible inventory plugin configuration (plugin: {plugin}): "
                                        f"gpudiag reads static inventories; ansible-inventory -i {file} --list "
                                        "--yaml writes one")
        gpudiag_keys = {"defaults", "groups", "hosts", "checks"}
        group_like = all(_is_null(v) or (isinstance(v, MappingNode) and all(
            isinstance(k, ScalarNode) and k.value in _GROUP_KEYS for k, _ in v.value)) for v in top.values())
        if "all" in top or (top and group_like and not set(top) <= gpudiag_keys):
            return "yaml"
        return None
    plain = root is not None and isinstance(root, ScalarNode) and not _is_null(root)
    if plain and not file.endswith((".yml", ".yaml")):
        return "ini"  # host names, one a line, with no section: Ansible's ungrouped hosts
    return None


def _is_null(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:null"


@dataclass(frozen=True, slots=True, kw_only=True)
class AnsibleInventory:
    """What an Ansible inventory gives gpudiag: the hosts in order of appearance, each group's members (its
    children's too), and one line saying what was read."""

    hosts: tuple[Host, ...]
    groups: Mapping[str, tuple[str, ...]]
    read_as: str


def load_ansible(file: str, text: str, detected: Detected) -> AnsibleInventory:
    """The Ansible inventory in ``text`` (as :func:`detect` found it); raises :class:`AnsibleInventoryError` or
    ``YamlFileError`` (one line each). The detected document is closed here."""
    tree = _Tree(file)
    if detected.document is None:
        _read_ini(tree, text)
    else:
        document = detected.document.with_ansible_tags()
        try:
            for name, body, where in _entries(file, document.root, "the inventory"):
                _read_group(tree, document, name, body, where)
        finally:
            document.close()
    return tree.inventory(Path(file).parent, detected.kind or "ini")


@dataclass
class _Group:
    name: str
    hosts: dict[str, None] = field(default_factory=dict)
    vars: dict[str, tuple[object, str]] = field(default_factory=dict)  # name -> (value, "file:line")
    children: dict[str, None] = field(default_factory=dict)
    parents: set[str] = field(default_factory=set)


class _Tree:
    """Groups, hosts and vars as read, each var with where it was written (for error lines)."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.groups: dict[str, _Group] = {"all": _Group("all"), "ungrouped": _Group("ungrouped")}
        self.host_vars: dict[str, dict[str, tuple[object, str]]] = {}
        self.order: dict[str, None] = {}

    def group(self, name: str, where: str) -> _Group:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise AnsibleInventoryError(f"{where}: group name {name!r}: use letters, digits, '_', '.' and '-'")
        return self.groups.setdefault(name, _Group(name))

    def add_host(self, pattern: str, group: str, host_vars: Mapping[str, object], where: str) -> None:
        name_part, port = pattern, None
        tail = pattern.rpartition(":")[2]
        if pattern.count(":") == 1 and not pattern.endswith("]") and tail.isascii() and tail.isdigit():
            name_part, port = pattern.rsplit(":", 1)  # Ansible's host:port
        for name in expand_range(name_part, where):
            self.order.setdefault(name)
            self.groups[group].hosts.setdefault(name)
            own = self.host_vars.setdefault(name, {})
            own.update({key: (value, where) for key, value in host_vars.items()})
            if port is not None:
                own["ansible_port"] = (int(port), where)

    def link(self, parent: str, child: str, where: str) -> None:
        self.group(parent, where).children.setdefault(child)
        self.group(child, where).parents.add(parent)

    def inventory(self, folder: Path, kind: str) -> AnsibleInventory:
        for name, group in self.groups.items():
            if name not in ("all", "ungrouped") and not group.parents:
                self.link("all", name, self.file)
        self.link("all", "ungrouped", self.file)
        members = {name: self._members(name, set()) for name in self.groups}
        grouped = {h for name, hs in members.items() if name not in ("all", "ungrouped") for h in hs}
        for host in self.order:  # a host only in "all" (YAML) is ungrouped, as Ansible files it
            if host not in grouped:
                self.groups["ungrouped"].hosts.setdefault(host)
        members = {name: self._members(name, set()) for name in self.groups}
        depth = {name: self._depth(name, set()) for name in self.groups}
        group_files = {n: _var_files(folder / "group_vars", n) for n in self.groups}
        host_files = {h: _var_files(folder / "host_vars", h) for h in self.order}
        ordered = sorted(self.groups, key=lambda n: (depth[n], n))
        hosts = []
        for host in self.order:
            mine = [n for n in ordered if host in members[n]]
            merged: dict[str, tuple[object, str]] = {}
            for name in mine:
                merged.update(self.groups[name].vars)
            for name in mine:
                merged.update(group_files[name])
            merged.update(self.host_vars.get(host, {}))
            merged.update(host_files[host])
            hosts.append(host_from_vars(host, merged, tuple(n for n in mine if n not in ("all", "ungrouped"))))
        named = [n for n in self.groups if n not in ("all", "ungrouped")]
        n_host_files = sum(1 for f in host_files.values() if f)
        n_group_files = sum(1 for f in group_files.values() if f)
        read_as = (f"{self.file}: an Ansible {kind.upper()} inventory: {len(hosts)} hosts in {len(named)} groups"
                   + (f", host_vars for {n_host_files} hosts" if n_host_files else "")
                   + (f", group_vars for {n_group_files} groups" if n_group_files else ""))
        return AnsibleInventory(hosts=tuple(hosts), read_as=read_as,
                         groups=MappingProxyType({n: tuple(h for h in self.order if h in members[n]) for n in named}))

    def _members(self, name: str, seen: set[str]) -> set[str]:
        if name in seen:
            raise AnsibleInventoryError(f"{self.file}: group {name!r} is its own child (a loop in children)")
        group = self.groups[name]
        found = set(group.hosts)
        for child in group.children:
            found |= self._members(child, seen | {name})
        return found

    def _depth(self, name: str, seen: set[str]) -> int:
        parents = self.groups[name].parents - seen
        return 0 if not parents else 1 + max(self._depth(p, seen | {name}) for p in parents)


def _read_ini(tree: _Tree, text: str) -> None:
    group, section = "ungrouped", "hosts"
    for number, raw in enumerate(text.splitlines(), start=1):
        where = f"{tree.file}:{number}"
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        header = _SECTION.match(raw)
        if header:
            name, _, section = header.group(1).partition(":")
            section = section or "hosts"
            if section not in ("hosts", "vars", "children"):
                raise AnsibleInventoryError(f"{where}: section [{header.group(1)}]: expected [group], [group:vars] or "
                                     "[group:children]")
            group = tree.group(name, where).name
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:
            raise AnsibleInventoryError(f"{where}: cannot read this line: {exc}") from None
        if not words:
            continue
        if section == "vars":
            key, eq, value = line.partition("=")
            if not eq or not key.strip():
                raise AnsibleInventoryError(f"{where}: [{group}:vars]: expected key=value, got {line!r}")
            tree.groups[group].vars[key.strip()] = (_ini_value(value.strip(), where), where)
        elif section == "children":
            if len(words) != 1:
                raise AnsibleInventoryError(f"{where}: [{group}:children]: expected one group name a line")
            tree.link(group, words[0], where)
        else:
            host_vars = {}
            for word in words[1:]:
                key, eq, value = word.partition("=")
                if not eq or not key:
                    raise AnsibleInventoryError(f"{where}: expected key=value after the host name, got {word!r}")
                host_vars[key] = _ini_value(value, where)
            tree.add_host(words[0], group, host_vars, where)


def _ini_value(value: str, where: str) -> object:
    if value.startswith(VAULT_HEADER):
        raise AnsibleInventoryError(f"{where}: an Ansible Vault value: gpudiag cannot decrypt it")
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        try:  # Ansible reads a quoted value as a Python literal: the quotes go
            literal = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
        return literal if isinstance(literal, str) else value
    return int(value) if value.isascii() and value.isdigit() else value  # int() reads "２２" as 22


def _entries(file: str, node: Node | None, where: str) -> Iterator[tuple[str, Node, str]]:
    """A mapping's (key, value node, "file:line"); null is empty."""
    if node is None or _is_null(node):
        return
    if not isinstance(node, MappingNode):
        raise AnsibleInventoryError(f"{file}:{node.start_mark.line + 1}: {where}: expected a mapping")
    for key, value in node.value:
        yield str(key.value), value, f"{file}:{key.start_mark.line + 1}"


def _read_group(tree: _Tree, document: Document, name: str, body: Node, where: str) -> None:
    group = tree.group(name, where)
    for key, value, at in _entries(tree.file, body, f"group {name!r}"):
        if key == "hosts":
            for pattern, host_body, host_at in _entries(tree.file, value, f"group {name!r} hosts"):
                host_vars = {k: document.construct(v) for k, v, _ in
                             _entries(tree.file, host_body, f"host {pattern!r}")}
                tree.add_host(pattern, group.name, host_vars, host_at)
        elif key == "vars":
            for var, node, var_at in _entries(tree.file, value, f"group {name!r} vars"):
                group.vars[var] = (document.construct(node), var_at)
        elif key == "children":
            for child, child_body, child_at in _entries(tree.file, value, f"group {name!r} children"):
                tree.link(group.name, child, child_at)
                _read_group(tree, document, child, child_body, child_at)
        else:
            raise AnsibleInventoryError(f"{at}: group {name!r}: unknown key {key!r} (Ansible's are "
                                        f"{', '.join(_GROUP_KEYS)})")


def _var_files(folder: Path, name: str) -> dict[str, tuple[object, str]]:
    """The vars of ``host_vars/<name>`` or ``group_vars/<name>`` (a file, or a folder of files), later files win."""
    paths = [folder / f"{name}{suffix}" for suffix in _VAR_FILE_SUFFIXES if (folder / f"{name}{suffix}").is_file()]
    if (folder / name).is_dir():
        paths += sorted(p for p in (folder / name).iterdir() if p.is_file() and p.suffix in _VAR_FILE_SUFFIXES)
    found: dict[str, tuple[object, str]] = {}
    for path in paths:
        file = str(path)
        text = read_text(file, "vars file")
        if text.startswith(VAULT_HEADER):
            raise AnsibleInventoryError(f"{file}:1: an Ansible Vault encrypted file: gpudiag cannot decrypt it")
        document = compose(file, text, ansible_tags=True)
        try:
            for key, node, where in _entries(file, document.root, "a vars file"):
                found[key] = (document.construct(node), where)
        finally:
            document.close()
    return found
