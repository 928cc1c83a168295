"""The module map of the two packages: how many modules, import arrows between them, floors (the longest chain of
imports), and the arrows between layers. A cycle is an error (import-linter and tests/unit/cli/test_cli_imports.py
rule them out).

    python3 ci/module_map.py

Reads the graph with grimp (import-linter's own reader), so lazy imports and TYPE_CHECKING imports count.
"""

from __future__ import annotations

import collections
import graphlib
import sys

import grimp


def _layer(module: str) -> str:
    """``gpudiag.report.table`` → ``report``; a gpudiag_node module is the node side."""
    if module.startswith("gpudiag_node"):
        return "node"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def main() -> None:
    graph = grimp.build_graph("gpudiag", "gpudiag_node")
    modules = sorted(graph.modules)
    edges = {(a, b) for a in modules for b in graph.find_modules_directly_imported_by(a) if b != a}
    imports: dict[str, set[str]] = {m: set() for m in modules}
    for a, b in edges:
        imports[a].add(b)
    floor: dict[str, int] = {}
    try:  # graphlib orders the modules so that each comes after what it imports; a cycle has no such order
        for module in graphlib.TopologicalSorter(imports).static_order():
            floor[module] = 1 + max((floor[m] for m in imports[module]), default=0)
    except graphlib.CycleError as exc:
        sys.exit(f"an import cycle: {' -> '.join(exc.args[1])}")
    print(f"{len(modules)} modules, {len(edges)} import arrows, {max(floor.values())} floors, 0 cycles")
    between = collections.Counter((_layer(a), _layer(b)) for a, b in edges if _layer(a) != _layer(b))
    print(f"arrows between layers ({len(between)} pairs):")
    for (a, b), n in sorted(between.items()):
        print(f"  {a:10s} -> {b:10s} {n}")


if __name__ == "__main__":
    main()
