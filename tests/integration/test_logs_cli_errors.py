"""gpudiag grep and gpudiag signatures through the console entry point (in this process, tests/cli_run.py): the
CLI's one-line errors (exit 3) and the signatures text. Split from tests/unit/report/test_logs_report.py (the
text: there)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from cli_run import run_cli


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)  # in this process: what is printed and the exit status, not the process


def test_cli_errors_are_one_line_and_exit_3(tmp_path: Path) -> None:
    bad_pack = tmp_path / "bad.yaml"
    bad_pack.write_text("pack: bad\nsignatures:\n  - {name: x, regex: '(unclosed'}\n")
    for args, message in [
        (("grep", "localhost", "--signature", "nope"), "gpudiag: --signature nope: no such signature (known: "),
        (("sweep", "localhost", "--pack", str(bad_pack)),
         f"gpudiag: --pack {bad_pack}: signatures[0] (x): regex does not compile: "),
        (("signatures", "--pack", "nope"), "gpudiag: --pack nope: no such pack (known: sglang, vllm"),
        (("signatures", "--pack", str(bad_pack)), f"gpudiag: {bad_pack}: signatures[0] (x): regex does not"),
    ]:
        done = _cli(*args)
        assert (done.returncode, done.stdout) == (3, ""), (args, done.stderr)
        assert done.stderr.startswith(message) and done.stderr.count("\n") == 1, done.stderr


def test_cli_signatures_shows_one_pack_or_a_user_pack(tmp_path: Path) -> None:
    pack = tmp_path / "site.yaml"
    pack.write_text("pack: site\ndescription: ours\nsignatures:\n  - {name: site_oops, regex: oops, meaning: m}\n")
    done = _cli("signatures", "--pack", "xid", "--pack", str(pack))
    assert done.returncode == 0
    assert [line for line in done.stdout.splitlines() if not line.startswith(" ")] == [
        "xid (built-in; the kernel log (@kernel), last 24 h): NVIDIA driver Xid and SXid events from the kernel "
        "log, mapped to GPUs", "", f"site ({pack}; log files): ours"]
