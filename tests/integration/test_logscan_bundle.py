"""The bundle carries log patterns and paths as data: the whole bundle run by a child ``python3 -`` on hostile
names, nothing run. Split from tests/unit/node/test_logscan.py (the scanner on files: there)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gpudiag.collect.bundle import bundle

ECHO = {"name": "sglang_server_args", "regex": r"server_args=ServerArgs\("}


def source(path: Path | str, *signatures: dict[str, object], **extra: object) -> dict[str, object]:
    return {"path": str(path), "signatures": list(signatures), "echoes": [ECHO], **extra}


def test_the_bundle_carries_patterns_and_paths_as_data(tmp_path: Path) -> None:
    """Quotes, $(), backticks and ; in a pattern or a path: found as literal text, nothing run."""
    canary = tmp_path / "pwned"
    folder = tmp_path / "logs $(touch pwned) `touch pwned`"  # run in tmp_path: a shell would create ./pwned
    folder.mkdir()
    log = folder / "it's; a \"log\".log"
    hostile = "'; touch pwned; echo '$(touch pwned)`touch pwned`"
    log.write_text(f"before\n{hostile}\nafter\n")
    import re

    config = {"samples": 1, "interval_s": 0, "gpus": False, "dcgm": False,
              "logs": [source(log, {"name": "hostile", "regex": re.escape(hostile)},
                              {"name": "quote", "regex": "'; touch"})]}
    done = subprocess.run([sys.executable, "-"], input=bundle(config, with_nvml=False), capture_output=True,
                          timeout=60, env={"PATH": os.environ["PATH"], "LC_ALL": "C"}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (scan,) = json.loads(done.stdout)["logs"]
    assert scan["status"] == "ok" and scan["resolved"] == str(log)
    assert scan["matches"]["hostile"]["first"]["text"] == hostile
    assert scan["matches"]["quote"]["count"] == 1
    assert not canary.exists()
