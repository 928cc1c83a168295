"""Folding, as clush folds: hosts that say the same become one host range, GPUs of a host one index range,
every host's own name and address taken out first; ``--no-fold`` shows every row. The JSON keeps all."""

from __future__ import annotations

import json

import pytest
from builders import finding, gpu, host_report, sweep

from gpudiag.model import HostStatus, Severity
from gpudiag.report.fold import HOST_PLACEHOLDER, counted_label, generic, index_ranges
from gpudiag.report.json_report import render_json
from gpudiag.report.table import render_table


def _dead(n: int) -> object:
    """``n`` hosts refused, each naming its own address in its error and its finding, as the transport does."""
    hosts = []
    for i in range(1, n + 1):
        name, address = f"gpu{i:02d}", f"10.0.0.{i}"
        error = f"connection refused by {address}:22 (host up, nothing listening)"
        hosts.append(host_report(name, status=HostStatus.UNREACHABLE, address=address, error=error, findings=[
            finding(host=name, gpu=None, code="HOST_UNREACHABLE", severity=Severity.CRITICAL,
                    summary=f"{name} did not answer: {error}")]))
    return sweep(*hosts)


def test_fifty_dead_hosts_are_three_lines_not_a_hundred_and_fifty():
    text = render_table(_dead(50), width=80)

    assert "gpu[01-50] (50 hosts): unreachable: connection refused by <host>:22 (host up," in text
    findings = text.split("Findings\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert findings == ["gpu[01-50] (50 hosts)", "  CRITICAL  HOST_UNREACHABLE",
                        "      <host> did not answer: connection refused by <host>:22 (host up, nothing",
                        "      listening)"]


def test_no_fold_shows_every_host_with_its_own_words():
    text = render_table(_dead(3), width=120, fold=False)

    assert [line for line in text.splitlines() if line.startswith("gpu0") and ": unreachable" in line] == [
        f"gpu0{i}: unreachable: connection refused by 10.0.0.{i}:22 (host up, nothing listening)" for i in (1, 2, 3)]
    assert HOST_PLACEHOLDER not in text


def test_a_group_of_one_says_its_own_address():
    report = sweep(*_dead(2).hosts, host_report("gpu09", status=HostStatus.TIMEOUT))

    text = render_table(report, width=120)

    assert "gpu[01-02] (2 hosts): unreachable: connection refused by <host>:22" in text
    assert "gpu09: timeout: no answer within 30 s" in text


def test_folding_is_rendering_only_the_json_keeps_every_host_and_finding():
    document = json.loads(render_json(_dead(50)))

    assert len(document["hosts"]) == 50
    assert sum(len(h["findings"]) for h in document["hosts"]) == 50


def test_gpus_of_a_host_with_the_same_finding_are_one_line_and_every_line_without_fold():
    same = [finding(host="n1", gpu=i, code="POWER_LIMIT_REDUCED", severity=Severity.WARNING,
                    summary=f"GPU {i} enforced power limit is 450 W") for i in range(8)]
    report = sweep(host_report("n1", gpus=[gpu(index=i) for i in range(8)], findings=same))

    folded = render_table(report, width=160)
    unfolded = render_table(report, width=160, fold=False)

    assert "POWER_LIMIT_REDUCED  gpu 0-7  8 GPUs; gpu 0 GPU 0 enforced power limit is 450 W" in folded
    assert sum("POWER_LIMIT_REDUCED" in line for line in unfolded.splitlines()) == 8 + 1  # + the summary's count


def test_gpu_rows_that_read_the_same_fold_and_no_fold_keeps_them():
    report = sweep(host_report("n1", gpus=[gpu(index=i) for i in range(4)] + [gpu(index=4, temperature_c=80.0)]))

    def gpu_column(text: str) -> list[str]:
        rows = text.split("───\n", 1)[1].split("\n\n", 1)[0].splitlines()
        return [line.split()[1] if line.startswith("n1") else line.split()[0] for line in rows if line.strip()]

    assert gpu_column(render_table(report, width=160)) == ["0-3", "4"]
    assert gpu_column(render_table(report, width=160, fold=False)) == ["0", "1", "2", "3", "4"]


@pytest.mark.parametrize(
    ("text", "host", "address", "expected"),
    [
        ("refused by 10.0.0.1:22", "gpu01", "10.0.0.1", "refused by <host>:22"),
        ("refused by 10.0.0.12:22", "gpu12", "10.0.0.1", "refused by 10.0.0.12:22"),  # not a prefix of another
        ("no SSH login to gpu01 within 3 s", "gpu01", None, "no SSH login to <host> within 3 s"),
        ("gpu01-bmc is down", "gpu01", None, "gpu01-bmc is down"),
        ("gpu01.example.com: no route", "gpu01.example.com", None, "<host>: no route"),
    ],
)
def test_generic_takes_out_only_the_hosts_own_name(text, host, address, expected):
    assert generic(text, host_report(host, status=HostStatus.UNREACHABLE, address=address)) == expected


def test_labels_and_index_ranges():
    assert counted_label(["gpu01"]) == "gpu01"
    assert counted_label([f"gpu{i:02d}" for i in range(1, 51)]) == "gpu[01-50] (50 hosts)"
    assert index_ranges([5, 0, 1, 2, 7, 6]) == "0-2,5-7"
