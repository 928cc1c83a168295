"""Controller side: packs what runs on the node (``node/``: ``probe.py``, its helpers, ``probe.sh``) into one script.

Nothing in ``node/`` imports from the controller. The controller reads these files as text and sends them over the
SSH channel as one script (:func:`bundle`; :mod:`gpudiag.collect.remote`'s loader runs it, and so would ``python3 -``):
the node needs nothing installed, not even the NVML binding, which travels inside the bundle.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import json
import marshal
import os
import zlib
from collections.abc import Mapping
from pathlib import Path

import gpudiag_node

HERE = Path(__file__).resolve().parent
NODE_DIR = Path(gpudiag_node.__file__).resolve().parent  # what runs on the node
NODE_PACKAGE = "gpudiag_node"

# The node-side modules the probe imports (``from . import proc``), each by its file's stem.
NODE_MODULES = ("jsoncodec", "wire", "rows", "readings", "nvml", "links", "topology", "dcgm", "logscan", "logfork",
                "context", "proc", "processes", "gpm", "nccl_ras", "smi", "stream", "active", "active_test", "probe")
NVML_READER_FILES = ("nvml.py", "readings.py", "gpm.py", "links.py", "topology.py")

_BOOTSTRAP = '''# gpudiag collector bundle: run as `python3 -`. Modules travel compressed and are imported on demand.
# Plain classes and binascii: importlib.abc and base64 alone would double the collector's start-up; the
# configuration is JSON read by gpudiag_node.jsoncodec (the json package would import re). ModuleSpec from
# the import system already loaded, not from importlib.machinery (which imports importlib and warnings).
# No cyclic garbage collection in a one-shot collector: the imports' classes and code objects set off
# collections that walk every object so far (1-2 ms of a node's CPU), to free nothing before os._exit. A
# streaming collector turns it back on (gpudiag_node.probe.main_with_config).
import gc
gc.disable()
import binascii, marshal, os, sys, zlib
try:
    from _frozen_importlib import ModuleSpec
    from _frozen_importlib_external import MAGIC_NUMBER
except ImportError:
    from importlib.machinery import ModuleSpec
    MAGIC_NUMBER = None
_CONFIG = %(config)s


class _BundleImporter(object):
    """The modules of the payload: a line per module and form, "NAME s|c BASE64": its source (s) and its code
    as the controller's interpreter compiled it (c; marshal), used only by the same bytecode format (the
    magic number of .pyc files), where it spares the node compiling the module (most of its cost)."""

    def __init__(self, payload):
        self.sources, self.code = {}, {}
        for line in payload.split(b"\\n"):
            if line:
                name, form, blob = line.split(b" ", 2)
                (self.code if form == b"c" else self.sources)[name.decode("ascii")] = blob
        if MAGIC_NUMBER != %(magic)r:
            self.code = {}

    def find_spec(self, name, path=None, target=None):
        if name == "%(package)s":  # the package itself: empty, a parent for the relative imports
            return ModuleSpec(name, self, is_package=True)
        return ModuleSpec(name, self) if name in self.sources else None

    def create_module(self, spec):
        return None

    def get_source(self, name):  # importlib's InspectLoader: the active test runs its module's text (active.py)
        blob = self.sources.get(name)
        return zlib.decompress(binascii.a2b_base64(blob)).decode("utf-8") if blob else None

    def exec_module(self, module):
        name = module.__name__
        if name in self.code:
            code = marshal.loads(zlib.decompress(binascii.a2b_base64(self.code[name])))
        elif name in self.sources:
            source = zlib.decompress(binascii.a2b_base64(self.sources[name]))
            code = compile(source, "<gpudiag:%%s>" %% name, "exec")
        else:
            return
        exec(code, module.__dict__)


def _main(payload):
    sys.meta_path.insert(0, _BundleImporter(payload))
    from %(package)s import jsoncodec, probe
    code = probe.main_with_config(jsoncodec.loads(_CONFIG), leaves=True)
    # Out at once, its answer written: the interpreter's finalization (every module torn down, the collections)
    # and a one-shot round's nvmlShutdown (the exit frees the same: 3 ms less on the H200) cost a node CPU and
    # do nothing for the controller.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)


# The payload, last: the loader (gpudiag.collect.remote) compiles only what is above and hands _main these bytes
# (tokenizing 170 KB of literal costs a node 2-5 ms); `python3 -` compiles the whole and runs this line.
%(call)s%(payload)s%(end)s'''
PAYLOAD_CALL = "_main(b'''"
PAYLOAD_END = "''')\n"


def _blob(data: bytes) -> str:
    return base64.b64encode(zlib.compress(data, 9)).decode("ascii")


@functools.lru_cache(maxsize=64)
def _travelling(name: str, source: bytes) -> tuple[str, str | None]:
    """A module as it travels: its source, and its code as this interpreter compiles it (marshal), or None where
    this interpreter cannot compile it. Once per process and module text: a sweep builds many bundles."""
    try:
        # As the node's bootstrap compiles it (no __future__ flag of this module), without docstrings: 15% less
        # to send, and nothing on the node reads a __doc__ or has an assert (tests/unit/collect/test_bundle.py).
        code = compile(source, f"<gpudiag:{name}>", "exec", dont_inherit=True, optimize=2)
    except SyntaxError:
        return _blob(source), None
    return _blob(source), _blob(marshal.dumps(code))


def pynvml_source() -> bytes | None:
    """The controller's nvidia-ml-py binding (one pure-Python file), or None when it is not installed."""
    spec = importlib.util.find_spec("pynvml")
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin).read_bytes()


# What the binding imports from the standard library only for a function or two, when the imports cost a node
# more than NVML's answers (on their own, with nothing else of the collector importing them): ``import string``
# (for capwords, when the module loads) imports re and enum, ``from functools import wraps`` and ``import
# threading`` (for one Lock) import collections. The cut gets these few lines instead, as long as it asks the
# module for nothing else (gpudiag.collect.prune): what the standard library does, for what the binding uses.
STAND_INS = {
    "string": (frozenset({"capwords"}),
               "class string(object):  # gpudiag: `import string`, for the binding's one use of it\n"
               "    @staticmethod\n"
               "    def capwords(s, sep=None):\n"
               "        return (sep or ' ').join(map(str.capitalize, s.split(sep)))\n"),
    "threading": (frozenset({"Lock"}),
                  "class threading(object):  # gpudiag: `import threading`, for the binding's one use of it\n"
                  "    from _thread import allocate_lock as Lock  # what threading.Lock is\n"),
    "functools": (frozenset({"wraps"}),
                  "def wraps(wrapped):  # gpudiag: `from functools import wraps`, as functools.update_wrapper\n"
                  "    def decorate(wrapper):\n"
                  "        for name in ('__module__', '__name__', '__qualname__', '__doc__', '__annotations__'):\n"
                  "            if hasattr(wrapped, name):\n"
                  "                setattr(wrapper, name, getattr(wrapped, name))\n"
                  "        wrapper.__dict__.update(getattr(wrapped, '__dict__', {}))\n"
                  "        wrapper.__wrapped__ = wrapped\n"
                  "        return wrapper\n"
                  "    return decorate\n"),
}


def nvml_binding() -> bytes | None:
    """The binding as it travels: pynvml cut down to what ``nvml.py`` uses (``gpudiag.collect.prune``), so a node
    compiles 28 KB instead of 330 KB at every sweep. The cut takes ~60 ms here, so it is kept in
    ``$XDG_CACHE_HOME/gpudiag`` (``~/.cache/gpudiag``) under a hash of its inputs; without a writable cache
    it is just made again. A cut that does not compile is never sent: the whole binding goes instead."""
    source = pynvml_source()
    if source is None:
        return None
    # What the NVML reader asks the binding for: its own code and the table of readings it walks.
    reader = b"\n".join((NODE_DIR / name).read_bytes() for name in NVML_READER_FILES)
    key = hashlib.sha256(b"\0".join([source, reader, (HERE / "prune.py").read_bytes(),
                                     repr(sorted(STAND_INS.items())).encode()])).hexdigest()[:32]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpudiag" / f"pynvml-{key}.py"
    try:
        return cache.read_bytes()
    except OSError:
        pass
    from gpudiag.collect.prune import names_used, prune

    cut = prune(source.decode("utf-8"), names_used(reader.decode("utf-8")), keep_prefixes=("NVML_ERROR_",),
                stand_ins=STAND_INS)
    try:
        compile(cut, "pynvml", "exec")
    except SyntaxError:
        return source
    data = cut.encode("utf-8")
    try:  # atomically: concurrent sweeps may write the same entry
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
        partial.write_bytes(data)
        os.replace(partial, cache)
    except OSError:
        pass
    return data


def bundle(config: Mapping[str, object], *, with_nvml: bool = True, with_code: bool = True) -> bytes:
    """One ``python3 -`` script: the probe, its node-side modules (and pynvml) and ``config`` as data.

    ``config`` travels as a JSON string inside the script, never through a shell. ``with_code``: the modules'
    code compiled here travels too, for a node whose python3 reads this interpreter's bytecode (a node of
    another version compiles the sources, as without it). :func:`payload_span` says where the modules are.
    """
    modules = {f"{NODE_PACKAGE}.{name}": (NODE_DIR / f"{name}.py").read_bytes() for name in NODE_MODULES}
    nvml = nvml_binding() if with_nvml else None
    if nvml is not None:
        modules["pynvml"] = nvml
    lines = []
    for name, source in modules.items():
        source_blob, code_blob = _travelling(name, source)
        lines.append(f"{name} s {source_blob}")
        if code_blob is not None and with_code:
            lines.append(f"{name} c {code_blob}")
    return (_BOOTSTRAP % {"magic": importlib.util.MAGIC_NUMBER, "config": repr(json.dumps(dict(config))),
                          "package": NODE_PACKAGE, "call": PAYLOAD_CALL, "payload": "\n".join(lines),
                          "end": PAYLOAD_END}).encode()


def payload_span(script: bytes) -> tuple[int, int, int]:
    """(end of the code, start and end of the payload) in a :func:`bundle`: the code is ``script[:code_end]``;
    ``_main(script[start:end])`` runs it as ``python3 -`` running the whole script would."""
    code_end = script.rindex(PAYLOAD_CALL.encode())
    return code_end, code_end + len(PAYLOAD_CALL), len(script) - len(PAYLOAD_END)


def fallback_source() -> str:
    """The POSIX-shell collector, run when the node has no python3."""
    return (NODE_DIR / "probe.sh").read_text()
