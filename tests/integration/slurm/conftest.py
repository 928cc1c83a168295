"""The ``slurm_cluster`` fixture: a real one-machine Slurm (slurmctld, one slurmd per node, munge) for the session.

Its nodes stand for simulated GPU nodes of the loopback ``sshd_cluster``: each node's ``NodeAddr`` is the
address that plays the scenario named in :data:`NODES`, so a sweep of Slurm-selected nodes goes through the real
sshd. Without Slurm or munge (or without root) the tests skip with the reason, unless ``GPUDIAG_REQUIRE_SLURM=1``
(``.ci/run`` sets it): then the fixture fails, so CI cannot pass by skipping them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from slurm_cluster import SlurmCluster, SlurmUnavailable, running_slurm

# node name -> the loopback scenario it plays (its NodeAddr is that scenario's address)
NODES = {"gpu01": "healthy", "gpu02": "ecc", "gpu03": "idle", "gpu04": "driver_error"}
PARTITIONS = {"gpu": ("gpu01", "gpu02", "gpu03"), "debug": ("gpu04",)}


@pytest.fixture(scope="session")
def slurm_cluster(sshd_cluster) -> Iterator[SlurmCluster]:  # type: ignore[no-untyped-def]
    """Slurm's nodes gpu01..gpu04 on loopback, partitions gpu (gpu01-03) and debug (gpu04), started once."""
    nodes = {name: sshd_cluster.address_of(scenario) for name, scenario in NODES.items()}
    started = time.monotonic()
    try:
        with running_slurm(nodes, PARTITIONS) as cluster:
            print(f"slurm cluster up in {time.monotonic() - started:.1f} s")
            yield cluster
    except SlurmUnavailable as exc:
        if os.environ.get("GPUDIAG_REQUIRE_SLURM") == "1":
            pytest.fail(f"GPUDIAG_REQUIRE_SLURM=1 but {exc}")
        pytest.skip(str(exc))


@pytest.fixture
def slurm(slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[SlurmCluster]:
    """The session's cluster, every node idle and no job before and after the test; ``SLURM_CONF`` set here."""
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    slurm_cluster.reset()
    yield slurm_cluster
    slurm_cluster.reset()
