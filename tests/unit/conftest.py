"""The unit tests: one folder per layer of the package they test (``tests/unit/<layer>/``, ``node/`` for
gpudiag_node). No network, no subprocess, no GPU: a test that starts a process or a server is in
``tests/integration/``.

The helpers beside this file - :mod:`builders` (hand-made readings and reports) and :mod:`fake_transport` (a
transport answered by a handler function) - import as top-level modules from every folder: pyproject.toml's
``pythonpath`` puts ``tests/unit`` on ``sys.path``. The test folders have no ``__init__.py`` (rootdir-relative
``prepend`` import mode), so keep each test file's name unique across ``tests/``.
"""

from __future__ import annotations

from no_io import no_process_no_network  # noqa: F401 - the autouse guard: no process, no network

