"""The ``sshd_cluster`` fixture: a real OpenSSH ``sshd`` on loopback playing simulated GPU nodes.

The cluster itself lives in :mod:`loopback` (so the benchmarks and an installed package can
start it too); this file only starts it once per test session and skips when OpenSSH is not installed.
The names the tests use are re-exported from here.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from loopback import (
    EXTRA_HEALTHY_HOSTS,
    NO_NVIDIA_SMI,
    NO_PYTHON,
    SCENARIO_ADDRESSES,
    SshdCluster,
    SshdUnavailable,
    extra_address,
    running_cluster,
)

__all__ = ["EXTRA_HEALTHY_HOSTS", "NO_NVIDIA_SMI", "NO_PYTHON", "SCENARIO_ADDRESSES", "SshdCluster",
           "SshdUnavailable", "extra_address", "running_cluster", "sshd_cluster"]


@pytest.fixture(scope="session")
def sshd_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdCluster]:
    """The loopback cluster, started once for the test session (skips when OpenSSH is not installed)."""
    try:
        with running_cluster(tmp_path_factory.mktemp("sshd_cluster")) as cluster:
            yield cluster
    except SshdUnavailable as exc:
        pytest.skip(str(exc))
