"""A hung nvidia-smi is a finding of a host that answered, not a host timeout: each call on the node has its own
bound, well inside the deadline; past it the call (and what it started) is killed and the document says which
call hung and for how long. The real collectors (Python and POSIX sh) run here with the fake nvidia-smi in its
``hang`` scenario on PATH, through the local transport (the real command line, no SSH)."""

from __future__ import annotations

import json

import pytest
from builders import host_report, sweep

from gpudiag.checks import CheckSettings, evaluate
from gpudiag.collect.parse import parse_probe
from gpudiag.collect.remote import call_bound_s
from gpudiag.model import HostStatus, NodeReadings, Severity, SmiStatus, host_status_label
from gpudiag.report import OutputFormat, ReportView, render
from gpudiag.report.json_report import from_document, to_document


@pytest.mark.parametrize(("deadline_s", "samples", "interval_s", "bound_s"), [
    (30.0, 5, 0.5, 13.8),  # the defaults: well inside the deadline
    (3.0, 1, 0.0, 1.5),
    (2.0, 5, 0.5, 1.0),  # never below 1 s: a real nvidia-smi needs up to a second
])
def test_the_call_bound_leaves_room_inside_the_deadline(deadline_s: float, samples: int, interval_s: float,
                                                        bound_s: float) -> None:
    assert call_bound_s(deadline_s, samples, interval_s) == bound_s


def _hung_readings(gpus_read: bool) -> NodeReadings:
    doc = {"schema": "gpudiag.probe/2", "collector": "python", "host": {"hostname": "gpu01", "kernel": "6.8"},
           "nvidia_smi": {"path": "/usr/bin/nvidia-smi"}, "fields": [["index", "index"]],
           "samples": [{"t_s": 0, "exit": 0 if gpus_read else 124, "stdout": "0\n1\n" if gpus_read else "",
                        "stderr": "" if gpus_read else "no answer in 9 s: killed"}],
           "hung": [{"call": "nvidia-smi topo" if gpus_read else "nvidia-smi --query-gpu", "after_s": 9.2}],
           "problems": []}
    return parse_probe(doc)


def test_the_finding_says_which_call_hung_and_for_how_long() -> None:
    node = _hung_readings(gpus_read=False)
    (finding,) = [f for f in evaluate("gpu01", HostStatus.OK, None, node, CheckSettings())
                  if f.code == "NVIDIA_SMI_HUNG"]
    assert finding.severity is Severity.CRITICAL and finding.gpu is None
    assert finding.summary == ("nvidia-smi --query-gpu did not answer in 9.2 s and was killed (no GPU could be "
                               "read): the driver is wedged - look for Xid errors in dmesg; the GPUs usually need "
                               "a reset or the node a reboot")
    assert finding.evidence == {"call": "nvidia-smi --query-gpu", "after_s": 9.2, "hung_calls": 1, "gpus_read": 0}
    # The GPUs were read, then another call (the topology) hung: still critical, and the GPUs keep their rows.
    later = _hung_readings(gpus_read=True)
    assert later.smi_status is SmiStatus.OK and len(later.gpus) == 2
    (other,) = [f for f in evaluate("gpu01", HostStatus.OK, None, later, CheckSettings())
                if f.code == "NVIDIA_SMI_HUNG"]
    assert other.summary.startswith("nvidia-smi topo did not answer in 9.2 s and was killed (the GPUs were read")


def test_the_status_says_the_gpus_hung_beside_ok_and_survives_json() -> None:
    node = _hung_readings(gpus_read=False)
    host = host_report("gpu01", readings=node)
    assert host_status_label(host) == "ok, gpus: hung"
    table = render(sweep(host), OutputFormat.TABLE, ReportView(width=200))
    assert "ok, gpus: hung" in table
    back = from_document(json.loads(json.dumps(to_document(sweep(host)))))
    assert back.hosts[0].readings is not None and back.hosts[0].readings.hung_calls == node.hung_calls
