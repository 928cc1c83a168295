"""The module map of the two packages: how many modules, import arrows between them, floors (the longest chain of
imports once cycles are folded), cycles, and the arrows between layers.

    python3 ci/module_map.py

Reads the graph with grimp (import-linter's own reader), so lazy imports and TYPE_CHECKING imports count.
"""

from __future__ import annotations

import collections
import functools
import sys

import grimp


def _layer(module: str) -> str:
    """``gpudiag.report.table`` → ``report``; a gpudiag_node module is the node side."""
    if module.startswith("gpudiag_node"):
        return "node"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _components(modules: list[str], edges: set[tuple[str, str]]) -> dict[str, str]:
    """Each module → the representative of its strongly connected component (Tarjan)."""
    graph: dict[str, set[str]] = collections.defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    component: dict[str, str] = {}

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component[w] = v
                if w == v:
                    break

    sys.setrecursionlimit(10_000)
    for v in modules:
        if v not in index:
            visit(v)
    return component


def main() -> None:
    graph = grimp.build_graph("gpudiag", "gpudiag_node")
    modules = sorted(graph.modules)
    edges = {(a, b) for a in modules for b in graph.find_modules_directly_imported_by(a) if b != a}
    component = _components(modules, edges)
    folded: dict[str, set[str]] = collections.defaultdict(set)
    for a, b in edges:
        if component[a] != component[b]:
            folded[component[a]].add(component[b])

    @functools.cache
    def floor(c: str) -> int:
        return 1 + max((floor(d) for d in folded[c]), default=0)

    cycles = [c for c, n in collections.Counter(component.values()).items() if n > 1]
    floors = max(floor(component[m]) for m in modules)
    print(f"{len(modules)} modules, {len(edges)} import arrows, {floors} floors, {len(cycles)} cycles")
    between = collections.Counter((_layer(a), _layer(b)) for a, b in edges if _layer(a) != _layer(b))
    print(f"arrows between layers ({len(between)} pairs):")
    for (a, b), n in sorted(between.items()):
        print(f"  {a:10s} -> {b:10s} {n}")


if __name__ == "__main__":
    main()
