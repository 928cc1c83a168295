"""A partial run keeps the other hosts of the Prometheus textfile (issue 30 #2). Before, ``--limit sglang-glm5``
rewrote the file with that host alone: every other host's findings and the dead node's ``gpudiag_host_up 0``
vanished from Prometheus until the next full run. Now they stay as the file had them, each marked
``gpudiag_host_carried 1`` with the time of the sweep that read it; the swept hosts are new."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
HOSTS = {"sglang-glm5", "train-h200-01", "infer-h200-02", "spare-h200-03", "train-h200-04", "train-h200-05"}


def demo(prom: Path, *extra: str) -> None:
    done = subprocess.run([sys.executable, "-m", "gpudiag", "sweep", "--demo", "--prom-file", str(prom), "--quiet",
                           *extra], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 or (extra and done.returncode in (0, 1)), done.stderr


def samples(prom: Path, name: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in re.finditer(rf'^{name}{{host="([^"]+)"}} (\S+)$', prom.read_text(),
                                                          re.MULTILINE)}


@pytest.mark.parametrize("selection", [("--limit", "sglang-glm5"), ("--exclude", "train-h200-0[1-5]"),
                                       ("--shard", "1/3")])
def test_a_partial_run_keeps_the_other_hosts_marked_with_their_age(tmp_path: Path,
                                                                   selection: tuple[str, str]) -> None:
    prom = tmp_path / "gpudiag.prom"
    demo(prom)
    full = prom.read_text()
    full_time = samples(prom, "gpudiag_host_last_swept_timestamp_seconds")
    assert set(full_time) == HOSTS and set(samples(prom, "gpudiag_host_carried").values()) == {"0"}
    demo(prom, *selection)
    carried = samples(prom, "gpudiag_host_carried")
    swept = {host for host, value in carried.items() if value == "0"}
    assert set(carried) == HOSTS and 0 < len(swept) < len(HOSTS)
    assert samples(prom, "gpudiag_host_up")["train-h200-05"] == "0"  # the dead node stays dead in Prometheus
    when = samples(prom, "gpudiag_host_last_swept_timestamp_seconds")
    for host in HOSTS - swept:
        assert carried[host] == "1" and when[host] == full_time[host]  # its age: as old as the full run
        kept = [line for line in full.splitlines() if f'host="{host}"' in line
                and not line.startswith(("gpudiag_host_carried", "gpudiag_host_last_swept"))]
        assert kept and all(line in prom.read_text().splitlines() for line in kept)
    for host in swept:
        assert float(when[host]) >= float(full_time[host])
    assert prom.read_text().count("# HELP gpudiag_host_up ") == 1
