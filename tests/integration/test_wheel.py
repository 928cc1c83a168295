"""The wheel ships the product and nothing else, and the product works from it.

The wheel is built offline from a copy of the checkout (``pip wheel --no-build-isolation``: the setuptools
beside pytest, no download), its file list is checked, it is installed into a folder of its own, and
``python -m gpudiag sweep --demo`` runs from there in a temporary working directory: neither the
checkout nor the editable install is what runs (the test checks where ``gpudiag`` was imported from).
The demo reads its scenarios and fake ``nvidia-smi`` from the installed package data, and sends the
collector bundle built from the installed ``gpudiag_node`` files, so a data file left out of the wheel
fails here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
# What the copy leaves out: the checkout's own build products and caches (the strict editable install's
# links live in build/), never sources.
_NOT_SOURCES = shutil.ignore_patterns(".git", "build", "dist", ".venv", "*.egg-info", "__pycache__",
                                      ".pytest_cache", ".mypy_cache", ".ruff_cache")
# Data files, by the package-data patterns of pyproject.toml; everything else in the package is a module.
_DATA = ("gpudiag/py.typed", "gpudiag/logs/packs/*.yaml", "gpudiag/demo/scenarios/*.json",
         "gpudiag/demo/fake_nvidia_smi", "gpudiag_node/*.sh")


def _is_shipped(name: str) -> bool:
    if name.startswith("gpudiag-") and name.split("/", 1)[0].endswith(".dist-info"):
        return True
    if not name.startswith(("gpudiag/", "gpudiag_node/")):
        return False
    return name.endswith(".py") or any(Path(name).match(pattern) for pattern in _DATA)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    shutil.copytree(REPO, work / "src", ignore=_NOT_SOURCES)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation",
                            "--disable-pip-version-check", "-q", "-w", str(work / "dist")],
                           cwd=work / "src", capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr
    (path,) = (work / "dist").glob("gpudiag-*.whl")
    return path


def test_wheel_holds_only_the_two_packages(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert [n for n in names if not _is_shipped(n)] == []
    top = {n.split("/", 1)[0] for n in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"gpudiag", "gpudiag_node"}
    # The harness stays in tests/, whatever it is called inside the package.
    assert not [n for n in names if Path(n).name in ("loopback.py", "make_base.py", "conftest.py")]
    # And what the product needs at run time is there.
    for needed in ("gpudiag/__main__.py", "gpudiag/cli/app.py", "gpudiag_node/probe.py", "gpudiag_node/probe.sh",
                   "gpudiag/demo/fake_nvidia_smi", "gpudiag/demo/scenarios/healthy.json",
                   "gpudiag/logs/packs/xid.yaml", "gpudiag/py.typed"):
        assert needed in names
    dist_info = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
    assert zipfile.ZipFile(wheel).read(dist_info).decode().split() == ["gpudiag", "gpudiag_node"]


def test_demo_sweep_runs_from_the_installed_wheel(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile",
                                "--disable-pip-version-check", "-q", "--target", str(site), str(wheel)],
                               capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    installed_names = sorted(p.name for p in site.iterdir() if p.name != "bin")  # bin/: the console script
    assert len(installed_names) == 3 and installed_names[0] == "gpudiag" and installed_names[2] == "gpudiag_node"
    assert installed_names[1].startswith("gpudiag-") and installed_names[1].endswith(".dist-info")
    run_dir = tmp_path / "cwd"
    run_dir.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    where = subprocess.run([sys.executable, "-c", "import gpudiag.cli.app, gpudiag.collect.bundle as b; "
                            "print(gpudiag.cli.app.__file__); print(b.NODE_DIR)"],
                           cwd=run_dir, env=env, capture_output=True, text=True, timeout=60)
    assert where.returncode == 0, where.stderr
    for line in where.stdout.split():
        assert Path(line).resolve().is_relative_to(site.resolve()), line
    swept = subprocess.run([sys.executable, "-m", "gpudiag", "sweep", "--demo", "--format", "json",
                            "--samples", "1", "--interval", "0"],
                           cwd=run_dir, env=env, capture_output=True, text=True, timeout=120)
    assert swept.returncode == 2, swept.stderr  # the demo has one unreachable host: CRITICAL
    report = json.loads(swept.stdout)
    status = {host["host"]: host["status"] for host in report["hosts"]}
    assert list(status.values()).count("unreachable") == 1
    assert len(status) == 6 and list(status.values()).count("ok") == 5
    for host in report["hosts"]:
        if host["status"] == "ok":
            assert len(host["gpus"]) == 8
            assert all(isinstance(gpu["power"]["readings"]["power_draw"], float) and gpu["name"].startswith("NVIDIA")
                       for gpu in host["gpus"])
