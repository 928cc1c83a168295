"""YAML files (inventories, signature packs), read one way: the only module that imports yaml.

ruff's banned-api rule (``pyproject.toml``) keeps it so. Both readers get the same safe loader (PyYAML's
``SafeLoader``: plain data, no Python objects) and the same limits, so ``gpudiag inventory``, ``gpudiag sweep``
and ``--pack`` refuse the same files with the same one-line message naming the file and the line:

* a file over :data:`MAX_BYTES` is not read (PyYAML's pure-Python parser reads about 1 MB/s);
* an alias bomb (``&a [x, x]``, ``&b [*a, *a]``, ... : a few hundred bytes that stand for a billion values)
  is refused before anything is built from it: the composed nodes are counted with every alias expanded, as
  a reader of the value would walk them, and more than :data:`MAX_VALUES` is an error. So is an alias inside
  its own anchor (a value that contains itself) and nesting deeper than :data:`MAX_DEPTH`.

:func:`compose` keeps the nodes (each knows its line, which the inventory's messages name); :func:`load`
builds plain Python data (the packs). ``compose(..., ansible_tags=True)`` reads Ansible's files (inventories,
``host_vars/``, ``group_vars/``): ``!unsafe`` is a plain string there and ``!vault`` is refused with one line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_VALUES", "Document", "MappingNode", "Node", "ScalarNode",
           "SequenceNode", "YamlFileError", "compose", "load", "read_text"]

MAX_BYTES = 4 * 1024 * 1024
MAX_VALUES = 1_000_000  # every mapping, list and scalar, aliases expanded: ~10 per host of a 100,000-host file
MAX_DEPTH = 64  # an inventory or pack nests 5 or 6 levels


class _AnsibleVault(Exception):
    """A ``!vault`` value met while constructing; :meth:`Document.construct` names the file and line."""


class _AnsibleLoader(yaml.SafeLoader):
    """The safe loader plus Ansible's own tags: ``!unsafe`` is a plain string, ``!vault`` is refused."""


def _vault(loader: yaml.SafeLoader, node: Node) -> object:
    raise _AnsibleVault(node.start_mark.line + 1)


def _unsafe(loader: yaml.SafeLoader, node: Node) -> object:
    if not isinstance(node, ScalarNode):
        raise yaml.constructor.ConstructorError(None, None, "!unsafe on a value that is not a string",
                                                node.start_mark)
    return loader.construct_scalar(node)


_AnsibleLoader.add_constructor("!vault", _vault)
_AnsibleLoader.add_constructor("!unsafe", _unsafe)


class YamlFileError(Exception):
    """A YAML file cannot be used. ``str()`` is one line: ``FILE:LINE: MESSAGE`` (no line when none applies)."""

    def __init__(self, file: str, line: int | None, message: str) -> None:
        super().__init__(f"{file}:{line}: {message}" if line is not None else f"{file}: {message}")
        self.file = file
        self.line = line
        self.message = message


def read_text(path: str | os.PathLike[str], what: str) -> str:
    """The UTF-8 text of the file at ``path`` (``what`` names it in errors: "inventory", "pack")."""
    file = os.fspath(path)
    try:
        with open(file, "rb") as stream:
            data = stream.read(MAX_BYTES + 1)
    except OSError as exc:
        raise YamlFileError(file, None, f"cannot read the {what}: {exc.strerror or exc}") from exc
    if len(data) > MAX_BYTES:
        raise YamlFileError(file, None, f"the {what} is larger than {MAX_BYTES // 2**20} MiB: not read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlFileError(file, data.count(b"\n", 0, exc.start) + 1, "not UTF-8 text") from exc


@dataclass(frozen=True, slots=True)
class Document:
    """A composed YAML document: the node tree (checked against the limits) and the loader that reads values."""

    file: str
    root: Node | None
    loader: yaml.SafeLoader

    def construct(self, node: Node) -> object:
        """The Python value of a node, by YAML's own rules (``22`` is an int, ``yes`` a bool)."""
        try:
            return self.loader.construct_object(node, deep=True)
        except _AnsibleVault as exc:
            raise YamlFileError(self.file, exc.args[0], "an Ansible Vault value (!vault): gpudiag cannot decrypt "
                                                        "it") from None
        except (yaml.YAMLError, ValueError) as exc:  # e.g. 2024-13-45 resolves as a date and fails
            reason = exc.problem if isinstance(exc, yaml.MarkedYAMLError) and exc.problem else str(exc)
            raise YamlFileError(self.file, node.start_mark.line + 1,
                                "cannot read this value: " + " ".join(reason.split())) from exc

    def flatten_mapping(self, node: MappingNode) -> None:
        """Resolve the merge keys (``<<: *anchor``) of a mapping node in place; merged keys come first."""
        try:
            self.loader.flatten_mapping(node)
        except yaml.YAMLError as exc:
            raise _error(self.file, "", exc) from exc

    def with_ansible_tags(self) -> Document:
        """The same nodes, their values read as ``compose(..., ansible_tags=True)`` reads them (for a file found
        to be an Ansible inventory after it was composed); this document's loader is dropped."""
        self.loader.dispose()
        return Document(self.file, self.root, _AnsibleLoader(""))

    def close(self) -> None:
        """Drop the loader's state (the nodes stay usable)."""
        self.loader.dispose()


class _FastLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's parser (about 8 times faster: 100,000 inventory hosts compose in 2 s, not 17), with the
    same Python resolver and constructor as yaml.SafeLoader."""


class _FastAnsibleLoader(_FastLoader):
    """_FastLoader with _AnsibleLoader's constructors (!unsafe, !vault)."""


_FastAnsibleLoader.yaml_constructors = _AnsibleLoader.yaml_constructors


def _fast_compose(text: str, ansible_tags: bool) -> tuple[Node | None, yaml.SafeLoader | None]:
    """The document's nodes composed by libyaml; (None, None) where it is missing or refuses the text
    (the caller then composes with PyYAML's parser, whose error messages the tests and users know)."""
    if not getattr(yaml, "__with_libyaml__", False):
        return None, None
    loader = (_FastAnsibleLoader if ansible_tags else _FastLoader)(text)
    try:
        return loader.get_single_node(), loader
    except (yaml.YAMLError, RecursionError, ValueError):
        loader.dispose()
        return None, None


def compose(file: str, text: str, *, ansible_tags: bool = False) -> Document:
    """Parse ``text`` (read from ``file``) into one document's nodes; raises :class:`YamlFileError`.

    ``ansible_tags``: the values are Ansible's (``!unsafe`` reads as a string, ``!vault`` is refused)."""
    if len(text) > MAX_BYTES:
        raise YamlFileError(file, None, f"larger than {MAX_BYTES // 2**20} MiB: not read")
    root, loader = _fast_compose(text, ansible_tags)
    if loader is None:  # libyaml missing or the text refused: PyYAML's own parser, for its messages
        try:
            # the reader refuses control characters here, before parsing
            loader = (_AnsibleLoader if ansible_tags else yaml.SafeLoader)(text)
        except yaml.YAMLError as exc:
            raise _error(file, text, exc) from exc
        try:
            root = loader.get_single_node()
        except yaml.YAMLError as exc:
            loader.dispose()
            raise _error(file, text, exc) from exc
        except RecursionError as exc:  # PyYAML composes nested values recursively
            loader.dispose()
            raise YamlFileError(file, None, f"YAML error: nested deeper than {MAX_DEPTH} levels") from exc
    if root is not None:
        try:
            _check_limits(file, root)
        except YamlFileError:
            loader.dispose()
            raise
    return Document(file, root, loader)


def load(file: str, text: str) -> object:
    """Plain data (dicts, lists, scalars) from ``text``, after the same checks as :func:`compose`."""
    document = compose(file, text)
    try:
        if document.root is None:
            return None
        try:
            return document.loader.construct_document(document.root)
        except (yaml.YAMLError, ValueError) as exc:
            if isinstance(exc, yaml.YAMLError):
                raise _error(file, text, exc) from exc
            raise YamlFileError(file, None, "YAML error: " + " ".join(str(exc).split())) from exc
    finally:
        document.close()


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [child for pair in node.value for child in pair]
    return []


def _check_limits(file: str, root: Node) -> None:
    """Count the values as a reader would meet them (an alias counts its whole anchor again), depth first.

    The nodes form a graph in which an alias is the anchored node itself, so each node's expanded count is
    worked out once (memoized): the work is linear in the file, whatever the count. A node met again while
    its own children are being counted is an alias inside its anchor (a cycle).
    """
    counts: dict[int, int] = {}
    heights: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        line = node.start_mark.line + 1
        if children_done:
            open_nodes.discard(key)
            children = [id(child) for child in _children(node)]
            counts[key] = 1 + sum(counts.get(child, 1) for child in children)  # absent: a scalar
            heights[key] = 1 + max((heights.get(child, 1) for child in children), default=0)
            if counts[key] > MAX_VALUES:
                raise YamlFileError(file, line, f"YAML error: its aliases expand to more than {MAX_VALUES:,} "
                                                "values (an alias bomb?): refused")
            if heights[key] > MAX_DEPTH:
                raise YamlFileError(file, line, f"YAML error: nested deeper than {MAX_DEPTH} levels")
            continue
        if key in counts:
            continue
        if key in open_nodes:
            raise YamlFileError(file, line, "YAML error: an alias inside its own anchor (a value that "
                                            "contains itself): refused")
        open_nodes.add(key)
        stack.append((node, True))
        # Scalars (most nodes) count 1 and have no children: never pushed, never memoized.
        stack.extend((child, False) for child in reversed(_children(node))
                     if not isinstance(child, ScalarNode) and id(child) not in counts)


def _error(file: str, text: str, exc: yaml.YAMLError) -> YamlFileError:
    """A PyYAML error as one line with the file and the line it points at."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        message = exc.problem or exc.context or "invalid YAML"
        if exc.problem and exc.context:
            # PyYAML splits some sentences in two: "expected a single document" + "but found another".
            joined = exc.problem.startswith("but ")
            message = f"{exc.context}, {exc.problem}" if joined else f"{exc.problem} ({exc.context})"
        return YamlFileError(file, mark.line + 1 if mark else None, f"YAML syntax error: {message}")
    if isinstance(exc, yaml.reader.ReaderError):
        return YamlFileError(file, text.count("\n", 0, exc.position) + 1, f"YAML error: {exc.reason}")
    return YamlFileError(file, None, "YAML error: " + " ".join(str(exc).split()))
