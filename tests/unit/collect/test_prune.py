"""The NVML binding travels cut down to what the collector's NVML reader uses (agent/gpudiag/collect/prune.py)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from gpudiag.collect.bundle import NODE_DIR, NVML_READER_FILES, nvml_binding, pynvml_source
from gpudiag.collect.prune import names_used, prune


def load(source: str | bytes, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    sys.modules[name] = module  # pynvml looks itself up in sys.modules to add its exception classes
    try:
        exec(compile(source, name, "exec"), module.__dict__)
    finally:
        del sys.modules[name]
    return module


@pytest.fixture(scope="module")
def full_and_cut() -> tuple[types.ModuleType, types.ModuleType, bytes]:
    source = pynvml_source()
    assert source is not None, "nvidia-ml-py is a dependency of gpudiag"
    cut = nvml_binding()
    assert cut is not None
    return load(source, "pynvml_full"), load(cut, "pynvml_cut"), cut


def test_the_cut_has_everything_the_reader_asks_for(full_and_cut: tuple[types.ModuleType, types.ModuleType,
                                                                         bytes]) -> None:
    full, cut, _ = full_and_cut
    asked = set().union(*(names_used((NODE_DIR / name).read_text()) for name in NVML_READER_FILES))
    wanted = {name for name in asked if hasattr(full, name)}
    assert {"nvmlInit", "nvmlShutdown", "nvmlDeviceGetPowerUsage", "NVML_CLOCK_SM", "NVMLError_NotSupported",
            "NVMLError_GpuIsLost", "nvmlDeviceGetTotalEnergyConsumption", "nvmlDeviceGetFieldValues",
            "NVML_FI_DEV_POWER_INSTANT"} <= wanted
    assert sorted(name for name in wanted if not hasattr(cut, name)) == []
    assert cut.NVML_CLOCK_SM == full.NVML_CLOCK_SM and issubclass(cut.NVMLError_NotSupported, cut.NVMLError)


def test_the_cut_is_a_small_part_of_the_binding(full_and_cut: tuple[types.ModuleType, types.ModuleType,
                                                                     bytes]) -> None:
    source = pynvml_source()
    assert source is not None
    # About 28 KB with the GPM and process getters: 12% of the oldest allowed binding (234 KB), 10% of 13.590's.
    assert len(full_and_cut[2]) < len(source) / 6


def test_without_the_library_the_cut_fails_as_the_binding_does(full_and_cut: tuple[types.ModuleType,
                                                                                   types.ModuleType, bytes],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    full, cut, _ = full_and_cut
    for module in (full, cut):
        monkeypatch.setattr(module, "CDLL", lambda *_: (_ for _ in ()).throw(OSError("not here")))
    with pytest.raises(full.NVMLError_LibraryNotFound):
        full.nvmlInit()
    with pytest.raises(cut.NVMLError_LibraryNotFound):
        cut.nvmlInit()


def test_the_cut_is_kept_in_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = nvml_binding()
    cached = list((tmp_path / "gpudiag").glob("pynvml-*.py"))
    assert len(cached) == 1 and cached[0].read_bytes() == first
    assert nvml_binding() == first


SOURCE = '''"""A module."""
import os
from ctypes import *
from shutil import which  # nothing kept uses it: dropped
import json as unused_json

LIMIT = 3
UNUSED = 4
ERR_ONE = 1
handle = CDLL  # a plain name: droppable


def helper(x):
    return x + LIMIT + len(os.sep)


def decorate(fn):
    return fn


@decorate
def wanted(x):
    return helper(x)


def unused():
    return UNUSED


class Base(object):
    pass


class Struct(Base):
    _fields_ = [("a", int)]


def by_name():
    return globals()["Struct"]


lock = make_lock()


def make_lock():
    return None


_register()
'''


def test_prune_keeps_what_the_roots_reach_and_what_acts_on_load() -> None:
    cut = prune(SOURCE, {"wanted", "by_name"}, keep_prefixes=("ERR_",))
    kept = {line.split("(")[0].split()[-1] for line in cut.splitlines() if line.startswith(("def ", "class "))}
    assert kept == {"helper", "decorate", "wanted", "Base", "Struct", "by_name", "make_lock"}
    assert "LIMIT = 3" in cut and "ERR_ONE = 1" in cut and "lock = make_lock()" in cut and "_register()" in cut
    assert "UNUSED" not in cut and "handle = CDLL" not in cut and '"""A module."""' not in cut
    assert "import os" in cut and "from ctypes import *" in cut
    assert "which" not in cut and "json" not in cut  # imports of names nothing kept uses
    assert "@decorate\ndef wanted(x):" in cut  # decorators travel with their function


STAND_IN_SOURCE = '''import string
from functools import wraps
def f(fn):
    return wraps(fn)(string.capwords("a_b", "_"))
'''
STAND_INS = {"string": (frozenset({"capwords"}), "class string:  # stand-in\\n    capwords = None\\n"),
             "functools": (frozenset({"wraps"}), "def wraps(f):  # stand-in\\n    return f\\n")}


def test_an_import_gives_way_to_its_stand_in_only_when_the_cut_asks_it_for_nothing_else() -> None:
    cut = prune(STAND_IN_SOURCE, {"f"}, stand_ins=STAND_INS)
    assert "import string" not in cut and "from functools" not in cut and cut.count("# stand-in") == 2
    # string asked for something more, functools for two names: the imports stay
    more = STAND_IN_SOURCE.replace('"a_b"', "string.ascii_letters").replace("import wraps", "import wraps, partial")
    assert prune(more, {"f"}, stand_ins=STAND_INS) == more
    # the module itself passed around (not only its attributes) keeps the import
    bare = STAND_IN_SOURCE + "def g():\n    return string\n"
    assert "import string" in prune(bare, {"f", "g"}, stand_ins=STAND_INS)


def test_the_bundled_binding_loads_no_module_its_stand_ins_replace(full_and_cut: tuple[types.ModuleType,
                                                                                      types.ModuleType,
                                                                                      bytes]) -> None:
    """The cut binding costs the node no string, re, functools, threading or ctypes.util, and its stand-ins do
    what the standard library's functions did: the error classes have the same names, the wrappers theirs."""
    full, cut, text = full_and_cut
    imported = {line.split()[1] for line in text.decode().splitlines() if line.startswith(("import ", "from "))}
    assert imported <= {"ctypes", "sys", "os"}, imported
    assert sorted(n for n in dir(full) if n.startswith("NVMLError_") and hasattr(cut, n)) == \
        sorted(n for n in dir(cut) if n.startswith("NVMLError_"))
    assert cut.NVMLError_GpuIsLost.__name__ == full.NVMLError_GpuIsLost.__name__ == "NVMLError_GpuIsLost"
    assert cut.nvmlDeviceGetName.__name__ == "nvmlDeviceGetName" and cut.nvmlDeviceGetName.__wrapped__
    lock = cut.libLoadLock
    assert lock.acquire(False) and not lock.acquire(False)
    lock.release()


@pytest.mark.parametrize("source", ["a = 1; b = 2\ndef f():\n    return a\n", "def broken(:\n"])
def test_prune_gives_back_what_it_cannot_cut_by_lines(source: str) -> None:
    assert prune(source, {"f"}) == source
