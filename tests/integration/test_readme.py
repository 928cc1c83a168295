"""The README's first two command blocks run, each command doing what its comment says.

The blocks are read from README.md itself (the first two ```sh blocks), so a command added there without a
check here fails (:data:`CHECKS` must name every command). They run with a copy of the checkout as the
working directory (what they create, ``.venv``, ``a.json``, ``build/``, lands in the copy, not in this
checkout) and a temporary HOME and XDG folders.

What is honestly not the README's command, and why:

- ``pip install .`` runs as ``pip install --no-deps --no-build-isolation .``: the test machines have no
  network. The venv gets the dependencies of the interpreter running this test through a ``.pth`` file of
  its site-packages folders (never its editable installs), and the test checks that ``gpudiag`` is then
  imported from the venv.
- ``python -m pytest -q`` (the whole suite) runs as ``python -m pytest -q --collect-only``: running the
  suite inside the suite would recurse; collecting it proves the command works from the venv.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# Its tests share a module-scoped fixture: one worker runs them all, else each worker builds it again
# (with --dist loadgroup; the default, --dist loadfile, keeps a file on one worker).
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("test_readme")]

REPO = Path(__file__).resolve().parents[2]
_NOT_SOURCES = shutil.ignore_patterns(".git", "build", "dist", ".venv", "*.egg-info", "__pycache__",
                                      ".pytest_cache", ".mypy_cache", ".ruff_cache", "a.json", "b.json")


def sh_blocks(markdown: str) -> list[str]:
    """The bodies of the ```sh blocks, in order."""
    return re.findall(r"^```sh\n(.*?)^```", markdown, flags=re.M | re.S)


def commands(block: str) -> list[str]:
    """The commands of a block: comment lines dropped, a line ending in ``&&`` or ``\\`` joined with the next,
    a trailing ``# comment`` cut."""
    joined: list[str] = []
    pending = ""
    for line in block.splitlines():
        if not line.strip() or (line.lstrip().startswith("#") and not pending):
            continue
        text = (pending + " " + line.strip()) if pending else line.strip()
        if text.endswith(("&&", "\\")):
            pending = text.rstrip("\\").rstrip()
            continue
        pending = ""
        joined.append(re.sub(r"\s+#\s.*$", "", text).strip())
    assert not pending, f"a command is left open at the end of the block: {pending}"
    return joined


README = (REPO / "README.md").read_text()
INSTALL = "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/gpudiag sweep --demo"
TESTS = ".venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest -q"


def test_the_first_block_is_on_the_first_screen() -> None:
    """The two set-up commands (install and sweep the demo; the tests) are within the first 24 lines."""
    first_screen = "\n".join(README.splitlines()[:24])
    assert commands(sh_blocks(first_screen + "\n```\n")[0]) == [INSTALL, TESTS]


class Node:
    """The copy of the checkout and the environment the README's commands run in."""

    def __init__(self, root: Path) -> None:
        self.src = root / "src"
        shutil.copytree(REPO, self.src, ignore=_NOT_SOURCES)
        home = root / "home"
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
                    "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
                    "XDG_STATE_HOME": str(home / ".local" / "state"), "USER": os.environ.get("USER", "gpudiag")}
        for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
            Path(self.env[name]).mkdir(parents=True)

    def sh(self, command: str, *, timeout: float = 300, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["sh", "-c", command], cwd=self.src, env=env or self.env, capture_output=True,
                              text=True, timeout=timeout)

    def activated(self) -> dict[str, str]:
        """What ``. .venv/bin/activate`` sets."""
        venv = self.src / ".venv"
        return dict(self.env, VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{self.env['PATH']}")


def _offline_deps(venv: Path) -> None:
    """The dependencies the README's ``pip install .`` would download: the running interpreter's
    site-packages folders, put first on the venv's path by a .pth file, so that its build backend (a
    setuptools that builds wheels) wins over the old one a venv may bundle. Those folders' own .pth files
    (an editable install's import hook) are not processed: ``gpudiag`` comes from the venv."""
    (site,) = venv.glob("lib/python3*/site-packages")
    folders = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and Path(p).is_dir()]
    (site / "zz_test_readme_deps.pth").write_text(f"import sys; sys.path[1:1] = {folders!r}\n")


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Node:
    return Node(tmp_path_factory.mktemp("readme"))


@pytest.fixture(scope="module")
def installed(node: Node) -> subprocess.CompletedProcess[str]:
    """The README's first command: create the venv, install, sweep the demo."""
    assert commands(sh_blocks(README)[0])[0] == INSTALL
    made = node.sh("python3 -m venv .venv", timeout=120)
    assert made.returncode == 0, made.stderr
    _offline_deps(node.src / ".venv")
    pip = node.sh(".venv/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation .")
    assert pip.returncode == 0, pip.stdout + pip.stderr
    where = node.sh(".venv/bin/python -c 'import gpudiag; print(gpudiag.__file__)'")
    assert where.stdout.startswith(str(node.src / ".venv")), where.stdout + where.stderr  # the venv's copy runs
    return node.sh(".venv/bin/gpudiag sweep --demo")


def test_install_and_sweep_the_demo(installed: subprocess.CompletedProcess[str]) -> None:
    # "exit code is 2: one node does not answer, which is a critical finding"
    assert installed.returncode == 2, installed.stderr
    out = installed.stdout
    for word in ("sglang-glm5", "BUSY_LOW_POWER", "LOG_EXPECTED_ABSENT", "train-h200-05", "HOST_UNREACHABLE"):
        assert word in out
    assert "hosts     6: 5 answered, 1 unreachable" in out and out.rstrip().endswith("exit 2: critical findings")


def test_the_test_command(node: Node, installed: subprocess.CompletedProcess[str]) -> None:
    assert commands(sh_blocks(README)[0])[1] == TESTS
    pip = node.sh(".venv/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e '.[test]'")
    assert pip.returncode == 0, pip.stdout + pip.stderr
    collected = node.sh(".venv/bin/python -m pytest -q --collect-only -p no:cacheprovider")
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr
    assert re.search(r"^\d+ tests collected", collected.stdout, flags=re.M), collected.stdout[-500:]


def _one_line_to(path: str) -> Callable[[Node, subprocess.CompletedProcess[str]], None]:
    def check(node: Node, done: subprocess.CompletedProcess[str]) -> None:
        # "one summary line each, and the exit code says the state of what was swept (1: warnings, 2: critical)"
        doc = json.loads((node.src / path).read_text())
        assert done.returncode == doc["summary"]["exit_code"] in (1, 2), done.stderr
        assert done.stdout.startswith(f"wrote {path}: ") and done.stdout.count("\n") == 1, done.stdout
    return check


def _version_and_help(node: Node, done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("gpudiag ") and "Usage: gpudiag" in done.stdout
    for command in ("sweep", "merge", "watch", "grep", "signatures"):  # every command takes -h
        assert node.sh(f"gpudiag {command} -h", env=node.activated()).returncode == 0


def _merged(node: Node, done: subprocess.CompletedProcess[str]) -> None:
    # "one report of both, and one exit code (2: a node does not answer)"
    assert done.returncode == 2, done.stderr
    assert "hosts     6: 5 answered, 1 unreachable" in done.stdout and "train-h200-05" in done.stdout


def _watched(node: Node, done: subprocess.CompletedProcess[str]) -> None:
    # "the live view, two refreshes"
    refreshes = [line for line in done.stdout.splitlines() if line.startswith("refresh ")]
    assert [r.split(" at ")[0] for r in refreshes] == ["refresh 1/2", "refresh 2/2"], done.stdout[-2000:]
    assert all("6 hosts (5 answered, 1 unreachable)" in r for r in refreshes) and "unexpected" not in done.stdout
    assert done.returncode == 2, done.stderr


def _grepped(node: Node, done: subprocess.CompletedProcess[str]) -> None:
    # "60 decode lines in the case-study server's log, found as its process's stdout (exit 2: a node does not
    # answer)"
    assert done.returncode == 2, done.stderr
    block = done.stdout.split("sglang-glm5 (1 host)")[1].split("(1 host)")[0]
    assert "sglang-glm5.log: 60 matching lines" in block and "Decode batch" in block


def _signatures(node: Node, done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stderr
    assert all(f"{pack} (built-in" in done.stdout for pack in ("sglang", "vllm", "flashinfer", "nccl", "xid"))


# Every command of the README's second block, in order, with what its comment claims.
CHECKS: dict[str, Callable[[Node, subprocess.CompletedProcess[str]], None]] = {
    "gpudiag --version; gpudiag -h": _version_and_help,
    "gpudiag sweep --demo --shard 1/2 --format json -o a.json": _one_line_to("a.json"),
    "gpudiag sweep --demo --shard 2/2 --format json -o b.json": _one_line_to("b.json"),
    "gpudiag merge a.json b.json": _merged,
    "gpudiag watch --demo --count 2": _watched,
    "gpudiag grep --demo --signature sglang_decode_batch": _grepped,
    "gpudiag signatures": _signatures,
}


def test_more_of_the_demo(node: Node, installed: subprocess.CompletedProcess[str]) -> None:
    activate, *rest = commands(sh_blocks(README)[1])
    assert activate == ". .venv/bin/activate"  # "then plain `gpudiag`"
    found = node.sh(". .venv/bin/activate && command -v gpudiag")
    assert found.returncode == 0 and found.stdout.strip() == str(node.src / ".venv" / "bin" / "gpudiag")
    assert rest == list(CHECKS), "the README's second block changed: say here what each command must do"
    for command in rest:
        CHECKS[command](node, node.sh(command, env=node.activated()))
