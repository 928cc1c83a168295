"""The node's systemd-detect-virt calls (collectors/gpudiag_node/context.py): one plain call where it answers both
questions (bare metal, a VM), a second only for a container or an id it does not know, and always what
``--vm`` and ``--container`` answer. Against a stand-in that follows systemd's rule (a container first, then a VM)
and logs its calls, run through the node's real process path."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpudiag_node import context

FAKE = """#!/bin/sh
echo "${*:-plain}" >> "$FAKE_VIRT_LOG"
case "$1" in
    --vm) answer=$FAKE_VM ;;
    --container) answer=$FAKE_CONTAINER ;;
    *) if [ "$FAKE_CONTAINER" != none ]; then answer=$FAKE_CONTAINER; else answer=$FAKE_VM; fi ;;
esac
echo "$answer"
[ "$answer" != none ]
"""


@pytest.mark.parametrize(("vm", "container", "calls"), [
    ("none", "none", ["plain"]), ("kvm", "none", ["plain"]), ("google", "none", ["plain"]),
    ("kvm", "docker", ["plain", "--vm"]), ("none", "podman", ["plain", "--vm"]),
    ("a-new-hypervisor", "none", ["plain", "--vm", "--container"])])
def test_detect_virt_answers_as_its_two_questions_in_fewer_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  vm: str, container: str, calls: list[str]) -> None:
    fake = tmp_path / "systemd-detect-virt"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    log = tmp_path / "calls"
    env = {"FAKE_VM": vm, "FAKE_CONTAINER": container, "FAKE_VIRT_LOG": str(log)}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    asked = {kind: subprocess.run([str(fake), f"--{kind}"], capture_output=True, text=True, check=False)
             for kind in ("vm", "container")}
    log.unlink()
    expected = {}
    for kind, done in asked.items():
        expected[kind], expected[f"{kind}_exit"] = done.stdout.strip(), done.returncode
    assert context.detect_virt(10.0) == expected
    assert log.read_text().split("\n")[:-1] == calls
