"""Log evidence: signature packs, configuration echoes, expectations, the Xid table, and the scan plan.

A *pack* (YAML, ``agent/gpudiag/logs/packs/*.yaml`` built in, or a user file) holds:

* **signatures**: a named regex, a severity (``info``, ``warning``, ``critical``), what it means and what
  to do, optionally an ``exclude`` regex. ``info`` signatures raise no finding; they are evidence for the
  expectations, for ``gpudiag grep`` and for the facts shown under a host.
* **echoes**: lines that echo configuration (SGLang's ``server_args=ServerArgs(...)``, vLLM's
  ``non-default args: {...}``, a launch command line). They are read as configuration (``ServerFacts``)
  and never counted as a signature match, so a naive "autotune" never matches the server's own arguments.
* **expectations**: "when the configuration says X, expect lines matching Y after startup"; when they are
  absent the finding ``LOG_EXPECTED_ABSENT`` says so, and what it implies.

:mod:`gpudiag.logs.plan` turns a host's ``logs:`` (inventory) and ``--log`` paths into the sources its node
scans; the node compiles the regexes itself (``collectors/gpudiag_node/logscan.py``), nothing goes through a shell.
"""

from gpudiag.logs.packs import Echo, Expectation, Pack, PackError, Registry, Signature, builtin_packs, load_pack
from gpudiag.logs.plan import KERNEL, LogConfigError, LogPlan, LogSource, build_plans
from gpudiag.model.request import LogOptions

__all__ = ["KERNEL", "Echo", "Expectation", "LogConfigError", "LogOptions", "LogPlan", "LogSource", "Pack",
           "PackError", "Registry", "Signature", "build_plans", "builtin_packs", "load_pack"]
