"""The command layer has no import cycle, and ``gpudiag --help`` loads no heavy layer.

The graph is read from the source (every ``import`` at any depth: module top, inside functions, under
``TYPE_CHECKING``), so a cycle hidden behind a lazy import is found too: the one that the logs commands
had, importing helpers back from the app module inside its commands, never failed at import time.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
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
    assert {"gpudiag.cli.request", "gpudiag.sweep.runner"} <= graph["gpudiag.cli.build"]
    assert "gpudiag.cli.build" in graph["gpudiag.cli.commands.sweep"]  # inside the command
    assert "gpudiag.cli.common" in graph["gpudiag.cli.commands.logs"]
    assert "gpudiag.sweep.runner" in graph["gpudiag.cli.common"]  # a lazy import, inside a function
    assert "gpudiag.model.choices" in graph["gpudiag.collect.remote"]
    assert "gpudiag.logs.plan" in graph["gpudiag.cli.request"]  # under TYPE_CHECKING and inside functions


def test_no_import_cycle() -> None:
    assert _cycles(_import_graph()) == []


def test_a_lazy_import_back_is_a_cycle() -> None:
    # What the logs commands did before: `from gpudiag.cli.app import _fail` inside a command.
    graph = dict(_import_graph())
    graph["gpudiag.cli.commands.logs"] = graph["gpudiag.cli.commands.logs"] | {"gpudiag.cli.app"}
    assert _cycles(graph) == [["gpudiag.cli.app", "gpudiag.cli.commands.logs"]]
