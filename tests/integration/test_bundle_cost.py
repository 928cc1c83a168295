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
import gc
collecting = gc.isenabled()
import pynvml
from gpudiag_node import context, gpm, nvml
sys.stderr.write(repr(([n for n in compiled if n != "<gpudiag>"], sorted(sys.modules), collecting)))
"""
HEAVY = {"json", "re", "enum", "subprocess", "threading", "functools", "collections", "string", "shutil",
         "ctypes.util", "signal", "selectors", "importlib.util", "warnings"}


def _run(script: bytes, *, stdin: bytes = b"") -> tuple[dict[str, object], list[str], set[str]]:
    doc, compiled, modules, _ = _run_collecting(script, stdin=stdin)
    return doc, compiled, modules


def _run_collecting(script: bytes, *, stdin: bytes = b"") -> tuple[dict[str, object], list[str], set[str], bool]:
    """The document, what was compiled, the modules loaded, and whether the cyclic GC was on at the end."""
    done = subprocess.run([sys.executable, "-I", "-S", "-c", DRIVER, loader(script, watched=False)],
                          input=script + stdin, capture_output=True, timeout=60,
                          env={"PATH": "/nonexistent", "LC_ALL": "C"})
    assert done.returncode == 0, done.stderr
    compiled, modules, collecting = eval(done.stderr.decode())  # noqa: S307 - our own driver's repr
    return json.loads(done.stdout.splitlines()[0]), compiled, set(modules), collecting


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


def test_a_one_shot_collector_runs_without_the_cyclic_gc_and_a_streaming_one_with_it() -> None:
    """The imports' collections cost a one-shot node 1-2 ms to free nothing before its os._exit; a collector that
    stays (gpudiag watch) must collect its cycles."""
    one_shot = _run_collecting(bundle({"samples": 1, "interval_s": 0.0, "source": "auto"}))
    assert one_shot[0]["nvidia_smi"]["status"] == "missing" and one_shot[3] is False
    streaming = _run_collecting(bundle({"samples": 1, "interval_s": 0.0, "source": "auto", "stream": True}),
                                stdin=b"\n")
    assert streaming[0]["stream"]["round"] == 1 and streaming[3] is True
