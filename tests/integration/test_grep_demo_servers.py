"""``gpudiag grep --demo --signature sglang_decode_batch`` scans the case-study host's SGLang log, found only as
its server's stdout (the demo cluster: real SSH on loopback). Split from tests/unit/node/test_servers_running.py
(how the node finds the servers without reading the GPUs: there)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpudiag.cli.app import app


def test_grep_on_the_demo_scans_the_case_study_servers_log() -> None:
    done = CliRunner().invoke(app, ["grep", "--demo", "sglang-glm5", "--signature", "sglang_decode_batch",
                                    "--format", "json"], env={"PATH": "/usr/bin:/bin"})
    assert done.exit_code == 0, done.output  # a line matched, and the one host answered
    (host,) = json.loads(done.stdout)["hosts"]
    (scan,) = host["logs"]
    assert scan["path"].endswith("sglang-glm5.log") and scan["status"] == "ok"
    assert [m["count"] for m in scan["matches"]] == [60]
