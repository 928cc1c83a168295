"""Controller side (never sent to a node): cut a module's source down to what some code uses from it.

The NVML binding (nvidia-ml-py's ``pynvml.py``, 330 KB, 8000 lines) travels in every collector bundle, and
a node compiles it from source at every sweep: 45 ms of an H200 node's CPU, more than the NVML queries
themselves. The collector calls some 30 of its 440 functions. :func:`prune` keeps the top-level statements
those need, transitively, and drops the rest; what is kept is the binding's own text, line for line.

Kept: every statement that does something when the module loads (``from x import *``, calls, ``if``/``try``
blocks, assignments whose value calls something), every name the roots reach, and every name starting with one
of ``keep_prefixes`` (pynvml turns each ``NVML_ERROR_*`` constant into an exception class by scanning its own
globals). Dropped: functions, classes and plain constant assignments nothing reaches, docstrings, and imports
of names nothing kept uses (pynvml's ``from ctypes.util import find_library``, for Windows, costs a Linux node
shutil and subprocess: 15 ms). A name counts as reached when it appears anywhere in a kept statement as a name,
an attribute or a string (so a ``getattr(module, "name")`` is followed too): that keeps too much at times, never
too little.

``stand_ins`` replace a kept ``import MODULE`` with a few lines of source when the kept code asks MODULE only for
the attributes listed (``string.capwords``: ``import string`` imports ``re``), and a ``from MODULE import NAMES``
when NAMES are among them; otherwise the import stays.

When the source does not parse, or two statements share a line, the source is returned whole.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping


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
    if isinstance(stmt, (ast.Import, ast.ImportFrom)) and all(a.name != "*" for a in stmt.names):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(stmt, ast.Assign) and not any(isinstance(n, ast.Call) for n in ast.walk(stmt.value)):
        names = {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if all(isinstance(t, (ast.Name, ast.Tuple)) for t in stmt.targets) and names:
            return names
    return None


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _asks_only(kept: Iterable[ast.stmt], module: str, allowed: frozenset[str]) -> bool:
    """Whether the statements use ``module`` only as ``module.NAME`` with NAME in ``allowed``."""
    as_value = set()
    for stmt in kept:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == module:
                if node.attr not in allowed:
                    return False
                as_value.add(id(node.value))
    return all(id(node) in as_value for stmt in kept for node in ast.walk(stmt)
               if isinstance(node, ast.Name) and node.id == module)


def _stand_in(stmt: ast.stmt, kept: list[ast.stmt], stand_ins: Mapping[str, tuple[frozenset[str], str]]) -> str | None:
    """The stand-in's text for ``import MODULE`` or ``from MODULE import NAMES``, when it gives all they are
    used for; else None (the import stays)."""
    if any(alias.asname is not None for alias in getattr(stmt, "names", ())):
        return None
    if isinstance(stmt, ast.Import) and len(stmt.names) == 1 and stmt.names[0].name in stand_ins:
        allowed, text = stand_ins[stmt.names[0].name]
        return text if _asks_only([k for k in kept if k is not stmt], stmt.names[0].name, allowed) else None
    if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module is not None \
            and stmt.module in stand_ins:
        allowed, text = stand_ins[stmt.module]
        return text if {alias.name for alias in stmt.names} <= allowed else None
    return None


def prune(source: str, roots: Iterable[str], keep_prefixes: tuple[str, ...] = (),
          stand_ins: Mapping[str, tuple[frozenset[str], str]] | None = None) -> str:
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
    kept_stmts = [stmt for stmt, keep in zip(tree.body, kept, strict=True) if keep]
    out = []
    for stmt, (first, last), keep in zip(tree.body, spans, kept, strict=True):
        if keep:
            text = _stand_in(stmt, kept_stmts, stand_ins or {})
            out.append("".join(lines[first - 1:last]) if text is None else text)
    return "".join(out)
