"""What a node's python3 does with the bundle beyond reading the GPUs: the bundle run by a child ``python3 -I -S``
as the loader runs it, with a driver that counts what it compiles and lists what it imported.

A python3 that reads this interpreter's bytecode compiles nothing but the bundle's own text; another (here: the
bundle told another magic number) compiles the modules it imports from their sources, and prints the same
document. Neither imports the standard library's heavy modules: json (re, enum), subprocess, threading,
functools, collections, string, shutil, ctypes.util (bench/node_cost.py measures what that saves)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

from gpudiag.collect.bundle import bundle
from gpudiag.collect.remote import loader

# Runs the loader with compile() counting (past the loader's own, of the bundle's code), then imports what the
# NVML path imports (the binding cut, the reader and the node context: NVML itself cannot load here) and lists
# every module loaded.
DRIVER = """
import builtins, sys
real, compiled = builtins.compile, []
def counting(source, name, *args, **kwargs):
    compiled.append(name)
    return real(source, name, *args, **kwargs)
builtins.compile = counting
import os
def leave(code):  # the bundle leaves through os._exit, past the interpreter's finalization: come back here
    sys.stdout.flush()
    raise SystemExit(code)
os._exit = leave
try:
    exec(sys.argv[1])  # the loader a node runs, reading the bundle from stdin
except SystemExit:
    pass
import pynvml
from gpudiag_node import context, gpm, nvml
sys.stderr.write(repr(([n for n in compiled if n != "<gpudiag>"], sorted(sys.modules))))
"""
HEAVY = {"json", "re", "enum", "subprocess", "threading", "functools", "collections", "string", "shutil",
         "ctypes.util", "signal", "selectors", "importlib.util", "warnings"}


def _run(script: bytes) -> tuple[dict[str, object], list[str], set[str]]:
    done = subprocess.run([sys.executable, "-I", "-S", "-c", DRIVER, loader(script, watched=False)], input=script,
                          capture_output=True, timeout=60, env={"PATH": "/nonexistent", "LC_ALL": "C"})
    assert done.returncode == 0, done.stderr
    compiled, modules = eval(done.stderr.decode())  # noqa: S307 - our own driver's repr of two lists
    return json.loads(done.stdout), compiled, set(modules)


def test_the_same_interpreter_compiles_nothing_and_imports_nothing_heavy() -> None:
    doc, compiled, modules = _run(bundle({"samples": 1, "interval_s": 0.0, "source": "auto"}))
    assert doc["nvidia_smi"]["status"] == "missing"  # the collection ran: no NVML, no nvidia-smi here
    assert compiled == []
    assert {"pynvml", "gpudiag_node.nvml", "gpudiag_node.probe", "ctypes"} <= modules
    assert modules & HEAVY == set()


def test_another_interpreter_compiles_the_sources_into_the_same_document() -> None:
    script = bundle({"samples": 1, "interval_s": 0.0, "source": "auto"})
    other = script.replace(repr(importlib.util.MAGIC_NUMBER).encode(), repr(b"\x00\x00\r\n").encode(), 1)
    assert other != script
    doc, compiled, modules = _run(other)
    assert sorted(compiled) == sorted(f"<gpudiag:{m}>" for m in modules if m.startswith(("gpudiag_node.", "pynvml")))
    assert "<gpudiag:gpudiag_node.probe>" in compiled and "<gpudiag:pynvml>" in compiled
    assert modules & HEAVY == set()
    same, _, _ = _run(script)
    for volatile in (doc, same):
        volatile.pop("nvml_unavailable")  # names the library search's paths, the same in both
    assert doc == same
