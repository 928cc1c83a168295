"""Connection pacing against a real sshd that drops every unauthenticated connection past 3
(``MaxStartups 3:100:3``), reached through a bastion: all at once, hosts are lost; paced to one handshake at
a time through the bastion, every host answers. (Two at a time got through too on a quiet machine, but sshd
counts a connection as a startup a moment past the client's login, and under load that moment grew enough
for a third to be dropped: one keeps the margin.)"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpudiag.model import HostStatus
from gpudiag.sweep.runner import SweepOptions, sweep
from gpudiag.transport.pacing import Pacing
from gpudiag.transport.ssh import SshOptions, SshTransport
from loopback import SshdCluster, SshdUnavailable, running_cluster

# Its tests share a module-scoped fixture: one worker runs them all, else each worker builds it again
# (with --dist loadgroup; the default, --dist loadfile, keeps a file on one worker).
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("test_pacing_sshd")]
TARGETS = 30  # two sshds (16 addresses each), ~15 handshakes at once each when nothing paces them
FAST = SweepOptions(samples=1, interval_s=0.0, deadline_s=30.0)


@pytest.fixture(scope="module")
def strict_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdCluster]:
    try:
        with running_cluster(tmp_path_factory.mktemp("strict_sshd"), extra_healthy=TARGETS,
                             scenarios={"127.0.0.2": "healthy"}, max_startups="3:100:3") as cluster:
            yield cluster
    except SshdUnavailable as exc:
        pytest.skip(str(exc))


def _sweep(cluster: SshdCluster, max_startups: int) -> dict[str, HostStatus]:
    bastion = f"{cluster.user}@{cluster.address_of('healthy')}:{cluster.port}"
    hosts = [dataclasses.replace(h, jump=bastion) for h in cluster.extra_hosts()]
    ssh = SshOptions(connect_timeout_s=20.0, ssh_config=[], pacing=Pacing(max_startups=max_startups))
    report = asyncio.run(sweep(hosts, SshTransport(ssh), FAST))
    return {h.host: h.status for h in report.hosts}


def test_unpaced_handshakes_are_dropped_by_max_startups(strict_cluster: SshdCluster) -> None:
    statuses = _sweep(strict_cluster, max_startups=TARGETS)
    lost = [name for name, status in statuses.items() if status is not HostStatus.OK]
    assert lost, "sshd's MaxStartups 3:100:3 dropped nothing: this test cannot show what pacing changes"


def test_paced_handshakes_all_get_through(strict_cluster: SshdCluster, tmp_path: Path) -> None:
    statuses = _sweep(strict_cluster, max_startups=1)
    assert set(statuses.values()) == {HostStatus.OK}, {h: s for h, s in statuses.items() if s is not HostStatus.OK}
    assert len(statuses) == TARGETS
