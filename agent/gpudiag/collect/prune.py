"""Controller side (never sent to a node): cut a module's source down to what some code uses from it.

The NVML binding (nvidia-ml-py's ``pynvml.py``, 330 KB, 8000 lines) travels in every collector bundle, and
a node compiles it from source at every sweep: 45 ms of an H200 node's CPU, more than the NVML queries
themselves. The collector calls some 30 of its 440 functions. :func:`prune` keeps the top-level statements
those need, transitively, and drops the rest; what is kept is the binding's own text, line for line.

Kept: every statement that does something when the module loads (imports, calls, ``if``/``try`` blocks,
assignments whose value calls something), every name the roots reach, and every name starting with one of
``keep_prefixes`` (pynvml turns each ``NVML_ERROR_*`` constant into an exception class by scanning its own
globals). Dropped: functions, classes and plain constant assignments nothing reaches, docstrings. A name
counts as reached when it appears anywhere in a kept statement as a name, an attribute or a string (so a
``getattr(module, "name")`` is followed too): that keeps too much at times, never too little.

When the source does not parse, or two statements share a line, the source is returned whole.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable


def names_used(code: str) -> set[str]:
    """Every name, attribute and identifier-like string in ``code``: what it may ask a module for."""
    return _used(ast.parse(code))


def _used(node: ast.AST) -> set[str]:
    found: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            found.add(child.id)
        elif isinstance(child, ast.Attribute):
            found.add(child.attr)
        elif isinstance(child, ast.Constant) and isinstance(child.value, str) and child.value.isidentifier():
            found.add(child.value)
    return found


def _bound(stmt: ast.stmt) -> set[str] | None:
    """The names a droppable statement binds; None for a statement that must stay (it acts on load)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, ast.Assign) and not any(isinstance(n, ast.Call) for n in ast.walk(stmt.value)):
        names = {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if all(isinstance(t, (ast.Name, ast.Tuple)) for t in stmt.targets) and names:
            return names
    return None


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def prune(source: str, roots: Iterable[str], keep_prefixes: tuple[str, ...] = ()) -> str:
    """``source`` with only the top-level statements that ``roots`` (and loading the module) need."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    spans = []
    for stmt in tree.body:
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        spans.append((first, stmt.end_lineno or stmt.lineno))
    if any(a[1] >= b[0] for a, b in zip(spans, spans[1:], strict=False)):
        return source  # statements sharing a line cannot be cut apart by lines

    needed = set(roots)
    kept = [False] * len(tree.body)
    bound = [_bound(stmt) for stmt in tree.body]
    for i, stmt in enumerate(tree.body):
        if bound[i] is None and not _is_docstring(stmt):
            kept[i] = True
            needed |= _used(stmt)
    changed = True
    while changed:
        changed = False
        for i, stmt in enumerate(tree.body):
            names = bound[i]
            if kept[i] or names is None:
                continue
            if names & needed or any(n.startswith(keep_prefixes) for n in names):
                kept[i] = changed = True
                needed |= _used(stmt)
    lines = source.splitlines(keepends=True)
    return "".join("".join(lines[first - 1:last]) for (first, last), keep in zip(spans, kept, strict=True) if keep)
