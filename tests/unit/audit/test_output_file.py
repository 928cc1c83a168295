"""``--output FILE`` (``-o``) takes the report; stdout gets one summary line, nothing with ``--quiet``; the
exit code still says the state of the cluster. Before, the whole report went to the file and to stdout, so
``gpudiag sweep --demo --format json -o b.json`` flooded the terminal with a JSON document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import finding, gpu, host_report, sweep

from gpudiag.audit.scheduled import AuditOptions, audit
from gpudiag.model import HostStatus
from gpudiag.model.request import OutputRequest
from gpudiag.report import OutputFormat


def report():  # type: ignore[no-untyped-def]
    return sweep(host_report("gpu01", gpus=[gpu(index=0)], findings=[finding(gpu=0)]),
                 host_report("gpu02", status=HostStatus.TIMEOUT, error="no answer within 30 s"))


@pytest.mark.parametrize("fmt", [OutputFormat.JSON, OutputFormat.TABLE, OutputFormat.HTML])
def test_output_file_takes_the_report_and_stdout_one_summary_line(tmp_path: Path, fmt: OutputFormat) -> None:
    out = tmp_path / "r.out"
    outcome = audit(report(), OutputRequest(format=fmt), AuditOptions(output=out))
    assert outcome.exit_code == 2 and not outcome.report_shown
    assert outcome.stdout.startswith(f"wrote {out}: 2 hosts (") and "\n" not in outcome.stdout
    assert outcome.stdout.endswith("; exit 2: critical findings")
    text = out.read_text()
    if fmt is OutputFormat.JSON:
        assert json.loads(text)["summary"]["exit_code"] == 2
    assert "gpu02" in text
    quiet = audit(report(), OutputRequest(format=fmt, quiet=True), AuditOptions(output=out))
    assert (quiet.stdout, quiet.exit_code) == ("", 2)


def test_without_output_the_report_goes_to_stdout() -> None:
    shown = audit(report(), OutputRequest(format=OutputFormat.JSON), AuditOptions())
    assert shown.report_shown and json.loads(shown.stdout)["summary"]["exit_code"] == 2
