"""The action ladder in the reports: each finding's and each host's action in the JSON (and read back from
a document written before findings had one), in the table at 80 columns, in the changes document, the HTML
page and the Prometheus text."""

from __future__ import annotations

from builders import finding, gpu, host_report, sweep

from gpudiag.audit.changes import compare
from gpudiag.model import Action, Severity
from gpudiag.report.changes_report import changes_document
from gpudiag.report.html import render_html
from gpudiag.report.json_report import from_document, to_document
from gpudiag.report.prometheus import render_prometheus
from gpudiag.report.table import render_table

XID = finding(host="gpu01", gpu=1, code="XID", severity=Severity.CRITICAL,
              summary="Xid 79 (GPU has fallen off the bus)", evidence={"xid": 79, "count": 1},
              action=Action.REBOOT_NODE)
REMAP = finding(host="gpu01", gpu=3, code="ROW_REMAP_PENDING", severity=Severity.WARNING,
                summary="a row remap waits for a GPU reset", evidence={}, action=Action.RESET_GPU)


def report() -> object:
    return sweep(host_report("gpu01", gpus=[gpu(index=i) for i in range(4)], findings=[REMAP, XID]),
                 host_report("gpu02", gpus=[gpu(index=0)]))


def test_the_json_carries_each_findings_and_each_hosts_action() -> None:
    doc = to_document(report())  # type: ignore[arg-type]
    assert [(h["host"], h["action"], [f["action"] for f in h["findings"]]) for h in doc["hosts"]] == [
        ("gpu01", "reboot_node", ["reset_gpu", "reboot_node"]), ("gpu02", "none", [])]
    assert from_document(doc) == report()


def test_a_document_from_before_actions_reads_each_finding_with_its_codes_action_now() -> None:
    doc = to_document(report())  # type: ignore[arg-type]
    for host in doc["hosts"]:
        host.pop("action")
        for f in host["findings"]:
            f.pop("action")
    (gpu01, _) = from_document(doc).hosts
    assert [(f.code, f.action) for f in gpu01.findings] == [("ROW_REMAP_PENDING", Action.RESET_GPU),
                                                             ("XID", Action.REBOOT_NODE)]


def test_the_table_shows_the_hosts_action_and_each_findings_at_80_columns() -> None:
    text = render_table(report(), width=80)  # type: ignore[arg-type]
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "gpu01  action: reboot_node" in lines
    assert "  CRITICAL  XID  gpu 1  reboot_node" in lines
    assert "  WARNING  ROW_REMAP_PENDING  gpu 3  reset_gpu" in lines
    assert "  actions   reboot_node (1 host)" in lines
    assert not any(line.startswith("gpu02") and "action" in line for line in lines)  # nothing to do: not said


def test_the_changes_document_carries_the_actions() -> None:
    doc = changes_document(compare(report(), ()))  # type: ignore[arg-type]
    assert doc["host_actions"] == {"gpu01": "reboot_node"}
    assert [(c["code"], c["action"]) for c in doc["changes"]] == [("XID", "reboot_node"),
                                                                   ("ROW_REMAP_PENDING", "reset_gpu")]


def test_the_html_page_and_the_prometheus_text_carry_the_actions() -> None:
    page = render_html(report())  # type: ignore[arg-type]
    assert "Actions: reboot_node (1 host)." in page
    assert '<th>GPUs</th><th>action</th><th>what</th>' in page
    assert '<td class="gpus">1</td><td class="nowrap">reboot_node</td>' in page  # the Xid's row
    assert '<td class="gpus">3</td><td class="nowrap">reset_gpu</td>' in page  # the remap's row
    lines = render_prometheus(report()).splitlines()  # type: ignore[arg-type]
    assert 'gpudiag_host_action{host="gpu01",action="reboot_node"} 5' in lines
    assert 'gpudiag_host_action{host="gpu02",action="none"} 0' in lines
