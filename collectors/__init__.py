"""What runs on the node: ``probe.py`` (stdlib Python), its helpers, and ``probe.sh`` (POSIX fallback).

Nothing here imports from ``agent``. The controller reads these files as text and sends them over the
SSH channel as one script for ``python3 -`` (:func:`bundle`): the node needs nothing installed, not even
the NVML binding, which travels inside the bundle.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import zlib
from pathlib import Path
from typing import Mapping

HERE = Path(__file__).resolve().parent

# Node-side modules, by the name the probe imports them under, and their files here.
NODE_MODULES = {"gpudiag_nvml": "nvml.py", "gpudiag_dcgm": "dcgm.py", "gpudiag_logscan": "logscan.py",
                "gpudiag_context": "context.py"}

_BOOTSTRAP = '''# gpudiag collector bundle: run as `python3 -`. Modules travel compressed and are imported on demand.
import base64, importlib.abc, importlib.util, json, sys, zlib
_SOURCES = %(sources)s
_CONFIG = %(config)s


class _BundleImporter(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name in _SOURCES:
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        source = zlib.decompress(base64.b64decode(_SOURCES[module.__name__]))
        exec(compile(source, "<gpudiag:%%s>" %% module.__name__, "exec"), module.__dict__)


sys.meta_path.insert(0, _BundleImporter())
'''


def _blob(data: bytes) -> str:
    return base64.b64encode(zlib.compress(data, 9)).decode("ascii")


def pynvml_source() -> bytes | None:
    """The controller's nvidia-ml-py binding (one pure-Python file), or None when it is not installed."""
    spec = importlib.util.find_spec("pynvml")
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin).read_bytes()


def probe_source() -> bytes:
    """The Python collector's own source (runs alone too: ``python3 - < probe.py``)."""
    return (HERE / "probe.py").read_bytes()


def bundle(config: Mapping[str, object], *, with_nvml: bool = True) -> bytes:
    """One ``python3 -`` script: the probe, its node-side modules (and pynvml) and ``config`` as data.

    ``config`` travels as a JSON string inside the script, never through a shell.
    """
    sources = {name: _blob((HERE / file).read_bytes()) for name, file in NODE_MODULES.items()}
    nvml = pynvml_source() if with_nvml else None
    if nvml is not None:
        sources["pynvml"] = _blob(nvml)
    head = _BOOTSTRAP % {"sources": repr(sources), "config": repr(json.dumps(dict(config)))}
    return head.encode() + b"\n" + probe_source()  # the probe's __main__ block finds _CONFIG


def fallback_source() -> str:
    """The POSIX-shell collector, run when the node has no python3."""
    return (HERE / "probe.sh").read_text()
