"""Where the collector's CUDA version comes from: libcuda, else the driver branch's known version, else the
plain nvidia-smi header, and never a second call after nvidia-smi failed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpudiag_node import rows
from gpudiag_node import smi as probe

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture
def no_libcuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a node (or container) without libcuda.so.1, whatever this test machine has."""
    monkeypatch.setattr(probe, "cuda_version_from_libcuda", lambda: None)


def test_the_driver_branch_gives_what_libcuda_gave_on_the_real_h200(no_libcuda: None) -> None:
    recorded = json.loads((DATA / "h200_580.159_spin" / "probe.json").read_text())
    driver = next(row["driver_version"] for row in rows.rows_read(recorded))

    assert driver == "580.159.04"
    assert probe.cuda_version("/nonexistent/nvidia-smi", driver, 5.0) == (recorded["cuda_version"], "driver branch")


@pytest.mark.parametrize("driver, cuda", [("470.256.02", "11.4"), ("535.183.01", "12.2"), ("550.54.15", "12.4"),
                                          ("570.172.08", "12.8")])
def test_known_branches(no_libcuda: None, driver: str, cuda: str) -> None:
    assert probe.cuda_version("/nonexistent/nvidia-smi", driver, 5.0) == (cuda, "driver branch")
