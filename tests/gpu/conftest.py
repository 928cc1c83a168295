"""tests/gpu: the collectors on a real NVIDIA GPU (run on the device machine; skipped elsewhere)."""

from __future__ import annotations

import shutil

import pytest


def _nvml_loads() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        return True
    except Exception:  # noqa: BLE001 - any failure means "no usable GPU here"
        return False


HAVE_GPU = shutil.which("nvidia-smi") is not None and _nvml_loads()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/gpu/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.gpu)
            if not HAVE_GPU:
                item.add_marker(pytest.mark.skip(reason="needs an NVIDIA GPU with nvidia-smi and NVML"))
