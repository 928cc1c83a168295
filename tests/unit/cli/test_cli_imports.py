"""The command layer has no import cycle, and what ``gpudiag --version`` and ``gpudiag -h`` import is bounded.

The graph is read from the source (every ``import`` at any depth: module top, inside functions, under
``TYPE_CHECKING``), so a cycle hidden behind a lazy import is found too: the one that the logs commands
had, importing helpers back from the app module inside its commands, never failed at import time.

What a command line loads at start-up is the *eager* part of the graph: the imports a module runs when it is
imported (its top level, class bodies, ``try``/``if`` blocks, not function bodies nor ``if TYPE_CHECKING``),
and the packages above each module. Those sets are checked by name here, not by time (bench/startup.py
measures the CPU): ``--version`` is the entry point and the standard library; ``-h`` and ``--help`` are the
command line, the model and the report's package (an option's type), never a layer that sweeps, parses or
checks, nor asyncssh, PyYAML or rich.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
PACKAGES = {"gpudiag": REPO / "agent" / "gpudiag", "gpudiag_node": REPO / "collectors" / "gpudiag_node"}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, root in PACKAGES.items():
        for path in root.rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


@functools.cache
def _import_graph() -> dict[str, frozenset[str]]:
    """Each gpudiag module → the gpudiag modules it imports anywhere in its source (read once per session)."""
    modules = _modules()

    def known(name: str) -> str | None:  # gpudiag.logs.plan.Planner → gpudiag.logs.plan
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, frozenset[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: resolved against this module's package
                    anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{anchor}.{base}" if base else anchor
                targets.add(base)
                targets.update(f"{base}.{alias.name}" for alias in node.names)
        graph[name] = frozenset(m for t in targets if (m := known(t)) is not None and m != name)
    return graph


def _cycles(graph: Mapping[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_is_read() -> None:
    graph = _import_graph()
    assert len(graph) > 30
    # The edges this file is about, so that an empty or broken walk cannot pass the test below.
    assert {"gpudiag.cli.commands.logs", "gpudiag.cli.common"} <= graph["gpudiag.cli.app"]
    assert {"gpudiag.model.request", "gpudiag.run.request"} <= graph["gpudiag.cli.build"]
    assert "gpudiag.cli.build" in graph["gpudiag.cli.commands.sweep"]  # inside the command
    assert "gpudiag.cli.common" in graph["gpudiag.cli.commands.logs"]
    assert "gpudiag.run.execute" in graph["gpudiag.cli.common"]  # a lazy import, inside a function
    assert "gpudiag.model.choices" in graph["gpudiag.collect.remote"]
    assert "gpudiag.logs" in graph["gpudiag.run.request"]  # under TYPE_CHECKING and inside functions


def test_no_import_cycle() -> None:
    assert _cycles(_import_graph()) == []


def test_a_lazy_import_back_is_a_cycle() -> None:
    # What the logs commands did before: `from gpudiag.cli.app import _fail` inside a command.
    graph = dict(_import_graph())
    graph["gpudiag.cli.commands.logs"] = graph["gpudiag.cli.commands.logs"] | {"gpudiag.cli.app"}
    assert _cycles(graph) == [["gpudiag.cli.app", "gpudiag.cli.commands.logs"]]


def _eager_nodes(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run when the module is imported: not function bodies, not ``if TYPE_CHECKING``."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.If):
            test = node.test
            if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                    isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
                yield from _eager_nodes(node.orelse)
                continue
            yield from _eager_nodes(node.body)
            yield from _eager_nodes(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                yield from _eager_nodes(block)
        elif isinstance(node, (ast.ClassDef, ast.With)):
            yield from _eager_nodes(node.body)
        else:
            yield node


@functools.cache
def _eager() -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Each gpudiag module → (the gpudiag modules, the other top-level packages) its import runs."""
    modules = _modules()

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    found: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in _eager_nodes(ast.parse(path.read_text(), str(path)).body):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
                base = node.module or ""
                if node.level:
                    anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{anchor}.{base}" if base else anchor
                targets.add(base)
                targets.update(f"{base}.{alias.name}" for alias in node.names)
        ours = {m for t in targets if (m := known(t)) is not None and m != name}
        others = {t.split(".")[0] for t in targets if known(t) is None} - {"gpudiag", "gpudiag_node"}
        found[name] = frozenset(ours), frozenset(others)
    return found


def _loaded_by(root: str) -> tuple[set[str], set[str]]:
    """(gpudiag modules, third-party packages) that importing ``root`` runs: its eager closure, each module's
    packages included (importing gpudiag.cli.app runs gpudiag/__init__ and gpudiag/cli/__init__ first)."""
    eager = _eager()
    seen: set[str] = set()
    others: set[str] = set()
    todo = [root]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for module in (".".join(parts[:i]) for i in range(1, len(parts) + 1)):
            if module in eager and module not in seen:
                seen.add(module)
                ours, third = eager[module]
                others |= {t for t in third if t not in sys.stdlib_module_names}
                todo.extend(ours)
    return seen, others


def test_the_eager_walk_sees_what_an_import_runs() -> None:
    # Edges this walk must find and must leave out, so that the bounds below cannot pass on an empty walk.
    ours, third = _eager()["gpudiag.cli.app"]
    assert {"gpudiag.cli.commands.sweep", "gpudiag.cli.params"} <= ours and "typer" in third
    assert "gpudiag.cli.build" not in _eager()["gpudiag.cli.commands.sweep"][0]  # inside the command
    assert "gpudiag.run.request" not in _eager()["gpudiag.cli.common"][0]  # under TYPE_CHECKING
    assert "gpudiag.model.changes" in _loaded_by("gpudiag.cli.build")[0]  # through gpudiag.model.request


def test_version_imports_the_entry_point_and_the_standard_library_only() -> None:
    # `gpudiag --version` never imports typer: the entry point answers before the app is imported.
    for root in ("gpudiag.cli.entry", "gpudiag.__main__"):
        ours, third = _loaded_by(root)
        assert ours <= {"gpudiag", "gpudiag.__main__", "gpudiag.cli", "gpudiag.cli.entry", "gpudiag.cli.version"}
        assert third == set(), (root, third)


def test_help_imports_the_command_line_and_the_model_only() -> None:
    # `gpudiag -h`, `gpudiag sweep -h`: the app and every command module, their options' types (the model, the
    # report's formats), and the defaults the help quotes (gpudiag.model.settings, read when shown).
    ours, third = _loaded_by("gpudiag.cli.app")
    ours |= _loaded_by("gpudiag.model.settings")[0]
    allowed_layers = {"gpudiag.cli", "gpudiag.model"}
    allowed = {"gpudiag", "gpudiag.report", "gpudiag.report.view"}
    assert {m for m in ours if m not in allowed and ".".join(m.split(".")[:2]) not in allowed_layers} == set()
    assert third == {"typer"}
