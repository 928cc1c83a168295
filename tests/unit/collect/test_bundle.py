"""What travels in the collector bundle (agent/gpudiag/collect/bundle.py): the sources, and this interpreter's code."""

from __future__ import annotations

import ast
import binascii
import importlib.util
import marshal
import types
import zlib

from gpudiag.collect.bundle import NODE_DIR, NODE_MODULES, bundle, nvml_binding, payload_span


def _payload(script: bytes) -> dict[tuple[str, str], bytes]:
    """{(module, "s" or "c"): its source or its marshalled code}, from the payload at the end of the bundle."""
    _, start, end = payload_span(script)
    found = {}
    for line in script[start:end].decode().splitlines():
        name, form, blob = line.split(" ", 2)
        found[name, form] = zlib.decompress(binascii.a2b_base64(blob))
    return found


def test_each_module_travels_as_source_and_as_this_interpreters_code() -> None:
    script = bundle({"samples": 1})
    payload = _payload(script)
    modules = {f"gpudiag_node.{n}" for n in NODE_MODULES} | {"pynvml"}
    assert set(payload) == {(m, form) for m in modules for form in "sc"}
    # used only where the node's bytecode format is this one
    assert f"if MAGIC_NUMBER != {importlib.util.MAGIC_NUMBER!r}:".encode() in script
    probe = marshal.loads(payload["gpudiag_node.probe", "c"])
    assert isinstance(probe, types.CodeType) and probe.co_filename == "<gpudiag:gpudiag_node.probe>"
    assert payload["gpudiag_node.probe", "s"] == (NODE_DIR / "probe.py").read_bytes()


def test_without_code_only_the_sources_travel() -> None:
    assert {form for _, form in _payload(bundle({"samples": 1}, with_code=False))} == {"s"}


def test_the_payload_is_what_the_literal_of_the_whole_script_holds() -> None:
    """The loader hands _main the payload's raw bytes; ``python3 -`` compiles the literal: the same bytes."""
    script = bundle({"samples": 1})
    code_end, start, end = payload_span(script)
    call = ast.parse(script[code_end:]).body[0]
    assert isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
    literal = call.value.args[0]
    assert isinstance(literal, ast.Constant) and literal.value == script[start:end]
    compile(script[:code_end], "<gpudiag>", "exec")  # the code alone compiles


def test_the_code_is_compiled_as_the_node_compiles_the_source() -> None:
    """No __future__ flag of the controller's modules leaks into the node's code (bundle.py has annotations)."""
    code = marshal.loads(_payload(bundle({"samples": 1}))["gpudiag_node.probe", "c"])
    assert not code.co_flags & 0x1000000  # CO_FUTURE_ANNOTATIONS


def test_nothing_on_the_node_reads_a_docstring_or_asserts() -> None:
    """The code travels compiled without docstrings and asserts (optimize=2): only right while no node module
    (nor the binding cut) reads a __doc__ or relies on an assert."""
    cut = nvml_binding()
    assert cut is not None
    texts = {name: (NODE_DIR / f"{name}.py").read_text() for name in NODE_MODULES} | {"pynvml": cut.decode()}
    for name, text in texts.items():
        for node in ast.walk(ast.parse(text)):
            assert not isinstance(node, ast.Assert), f"{name}:{node.lineno}: an assert"
            assert not (isinstance(node, ast.Attribute) and node.attr == "__doc__"), f"{name}:{node.lineno}"
            assert not (isinstance(node, ast.Name) and node.id == "__doc__"), f"{name}:{node.lineno}"
