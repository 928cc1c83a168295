"""What travels in the collector bundle (agent/gpudiag/collect/bundle.py): the sources, and this interpreter's code."""

from __future__ import annotations

import ast
import binascii
import importlib.util
import marshal
import re
import types
import zlib

from gpudiag.collect.bundle import NODE_DIR, NODE_MODULES, bundle, nvml_binding


def _literal(script: bytes, name: str) -> object:
    match = re.search(rb"^%s = (\{.*?\})" % name.encode(), script, re.M)
    assert match is not None, name
    return ast.literal_eval(match.group(1).decode())


def _unpack(blob: str) -> bytes:
    return zlib.decompress(binascii.a2b_base64(blob))


def test_each_module_travels_as_source_and_as_this_interpreters_code() -> None:
    script = bundle({"samples": 1})
    sources, code = _literal(script, "_SOURCES"), _literal(script, "_CODE")
    assert isinstance(sources, dict) and isinstance(code, dict)
    assert set(code) == set(sources) == {f"gpudiag_node.{n}" for n in NODE_MODULES} | {"pynvml"}
    # used only where the node's bytecode format is this one
    assert f"if MAGIC_NUMBER == {importlib.util.MAGIC_NUMBER!r} else {{}}".encode() in script
    probe = marshal.loads(_unpack(code["gpudiag_node.probe"]))
    assert isinstance(probe, types.CodeType) and probe.co_filename == "<gpudiag:gpudiag_node.probe>"
    assert _unpack(sources["gpudiag_node.probe"]) == (NODE_DIR / "probe.py").read_bytes()


def test_without_code_only_the_sources_travel() -> None:
    assert _literal(bundle({"samples": 1}, with_code=False), "_CODE") == {}


def test_the_code_is_compiled_as_the_node_compiles_the_source() -> None:
    """No __future__ flag of the controller's modules leaks into the node's code (bundle.py has annotations)."""
    code = marshal.loads(_unpack(_literal(bundle({"samples": 1}), "_CODE")["gpudiag_node.probe"]))  # type: ignore[index]
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
