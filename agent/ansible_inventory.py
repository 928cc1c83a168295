"""Ansible inventories (INI and YAML) read as gpudiag inventories: ``gpudiag sweep -i hosts.ini``.

What is read: groups and ``children`` (any depth), host ranges (``gpu[01:16]``, ``[a:f]``, ``[1:9:2]``,
padding as Ansible pads: both ends the same width), ``host:port``, vars on INI host lines, ``[group:vars]``,
a YAML group's ``vars``, and the ``host_vars/`` and ``group_vars/`` folders next to the file (``<name>``,
``<name>.yml``, ``.yaml``, ``.json``, or a folder of such files). Of the variables, gpudiag uses
``ansible_host``, ``ansible_user``, ``ansible_port``, ``ansible_ssh_private_key_file`` (and their older
``ansible_ssh_*`` spellings), and from ``ansible_ssh_common_args``/``ansible_ssh_extra_args`` the options
``-o ProxyJump=`` / ``-J`` (the jump host) and ``-o UserKnownHostsFile=``; other SSH options are left to the
SSH config. Every other variable is ignored.

Precedence follows Ansible's: the inventory file's group vars from ``all`` down (a child group over its parent,
then by name), then ``group_vars/`` files in the same order, then the host's own vars in the file, then its
``host_vars/`` file.

Not supported, each with one line naming the file (and line): an executable dynamic inventory script, an
inventory plugin configuration (``plugin:``), Ansible Vault (an encrypted file or a ``!vault`` value), a Jinja2
template (``{{ }}``) in a variable gpudiag uses, a ``ProxyCommand``, and a ProxyJump through several hops.
For the first three, ``ansible-inventory -i SOURCE --list --yaml > hosts.yml`` writes a static inventory.

YAML is loaded here with PyYAML's safe loader (the YAML loader module of gpudiag.inventory can take over).
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import string
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode

from gpudiag.inventory import InventoryError
from gpudiag.model import Host

VAULT_HEADER = "$ANSIBLE_VAULT;"
_SECTION = re.compile(r"^\s*\[([^\]\s]+)\]\s*(?:[#;].*)?$")
_RANGE = re.compile(r"\[([^\]]*)\]")
_JUMP = re.compile(r"(?:[^@\s:,]+@)?[^@\s:/,]+(?::([0-9]+))?")
_VAR_FILE_SUFFIXES = ("", ".yml", ".yaml", ".json")
_GROUP_KEYS = ("children", "hosts", "vars")
_ALIASES = {"ansible_ssh_host": "ansible_host", "ansible_ssh_user": "ansible_user",
            "ansible_ssh_port": "ansible_port", "ansible_private_key_file": "ansible_ssh_private_key_file"}


def detect(file: str, data: bytes) -> str | None:
    """``"ini"`` or ``"yaml"`` when ``data`` is an Ansible inventory, None when it is gpudiag's own format.

    Raises ``InventoryError`` at once for what gpudiag cannot read: a dynamic inventory script, a vault file.
    """
    if data.startswith(VAULT_HEADER.encode()):
        raise InventoryError(f"{file}:1: an Ansible Vault encrypted file: gpudiag cannot decrypt it; decrypt it "
                             "(ansible-vault view) or write a static inventory with ansible-inventory --list --yaml")
    if data.startswith(b"#!") and os.access(file, os.X_OK):
        raise InventoryError(f"{file}:1: an executable Ansible dynamic inventory script: gpudiag does not run "
                             f"it; write a static one with ansible-inventory -i {file} --list --yaml > hosts.yml")
    text = data.decode("utf-8", errors="replace")
    if any(_SECTION.match(line) for line in text.splitlines()):
        return "ini"
    try:  # composed, not constructed: Ansible's own tags (!vault, !unsafe) must not fail the detection
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None  # gpudiag's reader reports the syntax error with its line
    if isinstance(root, MappingNode):
        top = {str(k.value): v for k, v in root.value if isinstance(k, ScalarNode)}
        if "plugin" in top:
            plugin = top["plugin"].value if isinstance(top["plugin"], ScalarNode) else "?"
            raise InventoryError(f"{file}:1: an Ansible inventory plugin configuration (plugin: {plugin}): "
                                 f"gpudiag reads static inventories; ansible-inventory -i {file} --list --yaml "
                                 "writes one")
        gpudiag_keys = {"defaults", "groups", "hosts", "checks"}
        group_like = all(_is_null(v) or (isinstance(v, MappingNode) and all(
            isinstance(k, ScalarNode) and k.value in _GROUP_KEYS for k, _ in v.value)) for v in top.values())
        if "all" in top or (top and group_like and not set(top) <= gpudiag_keys):
            return "yaml"
        return None
    plain = isinstance(root, ScalarNode) and not _is_null(root)
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


def load_ansible(file: str, data: bytes, kind: str) -> AnsibleInventory:
    """The Ansible inventory in ``data`` (``kind`` from :func:`detect`); raises ``InventoryError`` (one line)."""
    tree = _Tree(file)
    text = data.decode("utf-8", errors="strict")
    if kind == "ini":
        _read_ini(tree, text)
    else:
        _read_yaml(tree, text)
    return tree.inventory(Path(file).parent, kind)


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
            raise InventoryError(f"{where}: group name {name!r}: use letters, digits, '_', '.' and '-'")
        return self.groups.setdefault(name, _Group(name))

    def add_host(self, pattern: str, group: str, host_vars: Mapping[str, object], where: str) -> None:
        name_part, port = pattern, None
        if pattern.count(":") == 1 and not pattern.endswith("]") and pattern.rsplit(":", 1)[1].isdigit():
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
            hosts.append(_host(host, merged, tuple(n for n in mine if n not in ("all", "ungrouped"))))
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
            raise InventoryError(f"{self.file}: group {name!r} is its own child (a loop in children)")
        group = self.groups[name]
        found = set(group.hosts)
        for child in group.children:
            found |= self._members(child, seen | {name})
        return found

    def _depth(self, name: str, seen: set[str]) -> int:
        parents = self.groups[name].parents - seen
        return 0 if not parents else 1 + max(self._depth(p, seen | {name}) for p in parents)


def expand_range(pattern: str, where: str) -> tuple[str, ...]:
    """Ansible's host ranges: ``gpu[01:16]``, ``gpu[1:9:2]``, ``node[a:c]``; several brackets multiply."""
    match = _RANGE.search(pattern)
    if not match:
        if not pattern or any(c.isspace() or c in "[]," for c in pattern):
            raise InventoryError(f"{where}: bad host name {pattern!r}")
        return (pattern,)
    head, tail = pattern[: match.start()], pattern[match.end():]
    parts = match.group(1).split(":")
    if len(parts) not in (2, 3):
        raise InventoryError(f"{where}: host range {match.group(0)!r}: expected [start:end] or [start:end:step]")
    begin, end, step_text = parts[0] or "0", parts[1], parts[2] if len(parts) == 3 else "1"
    if not step_text.isdigit() or int(step_text) < 1:
        raise InventoryError(f"{where}: host range {match.group(0)!r}: the step must be a positive integer")
    step = int(step_text)
    if begin.isdigit() and end.isdigit():
        if begin.startswith("0") and len(begin) > 1 and len(begin) != len(end):
            raise InventoryError(f"{where}: host range {match.group(0)!r}: pad both ends to the same width "
                                 "(Ansible's rule)")
        width = len(begin) if begin.startswith("0") else 0
        items = [str(n).zfill(width) for n in range(int(begin), int(end) + 1, step)]
    elif len(begin) == len(end) == 1 and begin in string.ascii_letters and end in string.ascii_letters:
        letters = string.ascii_letters
        items = list(letters[letters.index(begin): letters.index(end) + 1: step])
    else:
        raise InventoryError(f"{where}: host range {match.group(0)!r}: expected numbers or single letters")
    if not items:
        raise InventoryError(f"{where}: host range {match.group(0)!r} is empty (it runs backwards)")
    rests = expand_range(tail, where) if _RANGE.search(tail) else (tail,)
    names = tuple(f"{head}{item}{rest}" for item in items for rest in rests)
    bad = next((n for n in names if any(c.isspace() or c in "[]," for c in n)), None)
    if bad is not None:
        raise InventoryError(f"{where}: bad host name {bad!r}")
    return names


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
                raise InventoryError(f"{where}: section [{header.group(1)}]: expected [group], [group:vars] or "
                                     "[group:children]")
            group = tree.group(name, where).name
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:
            raise InventoryError(f"{where}: cannot read this line: {exc}") from None
        if not words:
            continue
        if section == "vars":
            key, eq, value = line.partition("=")
            if not eq or not key.strip():
                raise InventoryError(f"{where}: [{group}:vars]: expected key=value, got {line!r}")
            tree.groups[group].vars[key.strip()] = (_ini_value(value.strip(), where), where)
        elif section == "children":
            if len(words) != 1:
                raise InventoryError(f"{where}: [{group}:children]: expected one group name a line")
            tree.link(group, words[0], where)
        else:
            host_vars = {}
            for word in words[1:]:
                key, eq, value = word.partition("=")
                if not eq or not key:
                    raise InventoryError(f"{where}: expected key=value after the host name, got {word!r}")
                host_vars[key] = _ini_value(value, where)
            tree.add_host(words[0], group, host_vars, where)


def _ini_value(value: str, where: str) -> object:
    if value.startswith(VAULT_HEADER):
        raise InventoryError(f"{where}: an Ansible Vault value: gpudiag cannot decrypt it")
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        try:  # Ansible reads a quoted value as a Python literal: the quotes go
            literal = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
        return literal if isinstance(literal, str) else value
    return int(value) if value.isdigit() else value


class _Vault(Exception):
    pass


class _Loader(yaml.SafeLoader):
    """The safe loader plus Ansible's tags: ``!unsafe`` is a plain string, ``!vault`` is refused."""


def _vault(loader: yaml.SafeLoader, node: Node) -> object:
    raise _Vault(node.start_mark.line + 1)


_Loader.add_constructor("!vault", _vault)
_Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))  # type: ignore[arg-type]


def _compose(file: str, text: str) -> tuple[_Loader, Node | None]:
    loader = _Loader(text)
    try:
        return loader, loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise InventoryError(f"{file}:{mark.line + 1 if mark else 1}: YAML syntax error: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise InventoryError(f"{file}: YAML error: {' '.join(str(exc).split())}") from None


def _value(loader: _Loader, file: str, node: Node) -> object:
    try:
        return loader.construct_object(node, deep=True)
    except _Vault as exc:
        raise InventoryError(f"{file}:{exc.args[0]}: an Ansible Vault value (!vault): gpudiag cannot decrypt it") \
            from None
    except yaml.YAMLError as exc:
        raise InventoryError(f"{file}:{node.start_mark.line + 1}: cannot read this value: {exc}") from None


def _entries(file: str, node: Node | None, where: str) -> Iterator[tuple[str, Node, str]]:
    """A mapping's (key, value node, "file:line"); null is empty."""
    if node is None or _is_null(node):
        return
    if not isinstance(node, MappingNode):
        raise InventoryError(f"{file}:{node.start_mark.line + 1}: {where}: expected a mapping")
    for key, value in node.value:
        yield str(key.value), value, f"{file}:{key.start_mark.line + 1}"


def _read_yaml(tree: _Tree, text: str) -> None:
    loader, root = _compose(tree.file, text)
    for name, body, where in _entries(tree.file, root, "the inventory"):
        _read_group(tree, loader, name, body, where)


def _read_group(tree: _Tree, loader: _Loader, name: str, body: Node, where: str) -> None:
    group = tree.group(name, where)
    for key, value, at in _entries(tree.file, body, f"group {name!r}"):
        if key == "hosts":
            for pattern, host_body, host_at in _entries(tree.file, value, f"group {name!r} hosts"):
                host_vars = {k: _value(loader, tree.file, v) for k, v, _ in
                             _entries(tree.file, host_body, f"host {pattern!r}")}
                tree.add_host(pattern, group.name, host_vars, host_at)
        elif key == "vars":
            for var, node, var_at in _entries(tree.file, value, f"group {name!r} vars"):
                group.vars[var] = (_value(loader, tree.file, node), var_at)
        elif key == "children":
            for child, child_body, child_at in _entries(tree.file, value, f"group {name!r} children"):
                tree.link(group.name, child, child_at)
                _read_group(tree, loader, child, child_body, child_at)
        else:
            raise InventoryError(f"{at}: group {name!r}: unknown key {key!r} (Ansible's are {', '.join(_GROUP_KEYS)})")


def _var_files(folder: Path, name: str) -> dict[str, tuple[object, str]]:
    """The vars of ``host_vars/<name>`` or ``group_vars/<name>`` (a file, or a folder of files), later files win."""
    paths = [folder / f"{name}{suffix}" for suffix in _VAR_FILE_SUFFIXES if (folder / f"{name}{suffix}").is_file()]
    if (folder / name).is_dir():
        paths += sorted(p for p in (folder / name).iterdir() if p.is_file() and p.suffix in _VAR_FILE_SUFFIXES)
    found: dict[str, tuple[object, str]] = {}
    for path in paths:
        file = str(path)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InventoryError(f"{file}: cannot read: {exc.strerror or exc}") from None
        if data.startswith(VAULT_HEADER.encode()):
            raise InventoryError(f"{file}:1: an Ansible Vault encrypted file: gpudiag cannot decrypt it")
        loader, root = _compose(file, data.decode("utf-8", errors="replace"))
        for key, node, where in _entries(file, root, "a vars file"):
            found[key] = (_value(loader, file, node), where)
    return found


def _host(name: str, merged: Mapping[str, tuple[object, str]], groups: tuple[str, ...]) -> Host:
    values: dict[str, tuple[object, str]] = {}
    for key, item in merged.items():
        values[_ALIASES.get(key, key)] = item

    def text(key: str) -> str | None:
        if key not in values:
            return None
        value, where = values[key]
        if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
            raise InventoryError(f"{where}: {key}: expected a string, got {value!r}")
        if "{{" in str(value) or "{%" in str(value):
            raise InventoryError(f"{where}: {key}: a Jinja2 template ({value}): gpudiag does not evaluate templates")
        return str(value)

    port_text = text("ansible_port")
    if port_text is not None and not (port_text.isdigit() and 1 <= int(port_text) <= 65535):
        raise InventoryError(f"{values['ansible_port'][1]}: ansible_port: expected 1-65535, got {port_text!r}")
    jump, known_hosts = None, None
    for key in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        args = text(key)
        if args is not None:
            jump, known_hosts = _ssh_args(args, values[key][1], jump, known_hosts)
    return Host(name=name, address=text("ansible_host"), user=text("ansible_user"),
                port=int(port_text) if port_text else None, identity_file=text("ansible_ssh_private_key_file"),
                known_hosts=known_hosts, jump=jump, groups=groups)


def _ssh_args(args: str, where: str, jump: str | None, known_hosts: str | None) -> tuple[str | None, str | None]:
    """The jump host and known_hosts file that ``ansible_ssh_common_args`` asks for."""
    try:
        words = shlex.split(args)
    except ValueError as exc:
        raise InventoryError(f"{where}: ansible_ssh_common_args: {exc}") from None
    options: list[tuple[str, str]] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word in ("-o", "-J") and index + 1 < len(words):
            value, index = words[index + 1], index + 2
        elif word.startswith(("-o", "-J")) and len(word) > 2:
            value, index = word[2:], index + 1
        else:
            index += 1
            continue
        if word.startswith("-J"):
            options.append(("proxyjump", value))
        else:
            key, _, option = value.replace(" ", "=", 1).partition("=")
            options.append((key.lower(), option.strip()))
    for key, value in options:
        if key == "proxyjump":
            if not _JUMP.fullmatch(value):
                raise InventoryError(f"{where}: ProxyJump {value!r}: gpudiag takes one jump host, [user@]host[:port]")
            jump = value
        elif key == "proxycommand":
            raise InventoryError(f"{where}: ProxyCommand is not supported: use -o ProxyJump=[user@]bastion[:port]")
        elif key == "userknownhostsfile":
            known_hosts = value.split()[0] if value else None
    return jump, known_hosts
