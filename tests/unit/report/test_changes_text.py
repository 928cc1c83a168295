"""``--only-changes`` as text (issue 19, item 4): folded as the report folds, by host then GPU; each change a
line naming host, GPUs, code and the action to take, its sentence under it, all within 80 columns (issue 30
item 8: the lines were 160 wide, mostly a log's path, with no action)."""

from __future__ import annotations

from pathlib import Path

from builders import finding, gpu, host_report, sweep

from gpudiag.audit.history import History
from gpudiag.model import Action
from gpudiag.report.changes_text import fit, render_changes

T0 = 1_748_779_200.0
LONG = "GPU {i} reads 100% utilization but draws 13% of its 700 W limit; " + "and a long tail of words " * 12


def _changes(tmp_path: Path):  # type: ignore[no-untyped-def]
    gpus = [gpu(index=i) for i in range(8)]
    with History.open(tmp_path / "h.sqlite") as history:
        history.record(sweep(host_report("b01", gpus), host_report("a01", gpus)), now_s=T0)
        shuffled = (7, 2, 1, 4, 3, 5, 0, 6)
        b = host_report("b01", gpus, [finding(host="b01", gpu=i, summary=LONG.format(i=i), action=Action.WATCH)
                                      for i in shuffled])
        a = host_report("a01", gpus, [finding(host="a01", gpu=3, code="XID", summary="Xid 79 on GPU 3",
                                              action=Action.REBOOT_NODE)])
        return history.record(sweep(b, a, started_at="2025-06-01T12:05:00Z"), now_s=T0 + 300).changes


def test_only_changes_folds_orders_and_fits(tmp_path: Path) -> None:
    changes = _changes(tmp_path)
    for width in (80, 160):
        lines = render_changes(changes, width=width).splitlines()

        assert max(len(line) for line in lines) <= min(width, 80)  # a pipe is a cron mail: 80 at most
        heads = [line for line in lines if not line.startswith(" ")]
        assert heads[1:] == ["NEW       CRITICAL a01 GPU 3  XID  action: reboot_node",
                             "NEW       CRITICAL b01 GPUs 0-7  BUSY_LOW_POWER  action: watch"]
        under = lines[lines.index(heads[2]) + 1:]
        assert len(under) == 2 and under[0].startswith("    8 GPUs; GPU 0 reads 100%") and under[1].endswith("…")
        assert lines[2] == "    Xid 79 on GPU 3"


def test_a_long_host_name_keeps_its_action(tmp_path: Path) -> None:
    gpus = [gpu(index=0)]
    name = "a-very-long-host-name-of-a-cluster-that-names-its-racks-and-rows-r12-u42"
    with History.open(tmp_path / "h.sqlite") as history:
        history.record(sweep(host_report(name, gpus)), now_s=T0)
        found = host_report(name, gpus, [finding(host=name, gpu=0, code="ECC_UNCORRECTED", summary="1 error",
                                                  action=Action.RESET_GPU)])
        changes = history.record(sweep(found, started_at="2025-06-01T12:05:00Z"), now_s=T0 + 300).changes
    lines = render_changes(changes).splitlines()

    assert max(len(line) for line in lines) <= 80
    assert lines[2:] == ["    action: reset_gpu", "    1 error"]


def test_fit_cuts_at_a_space() -> None:
    assert fit("short", 80) == "short"
    assert fit("aaaa bbbb cccc dddd", 12) == "aaaa bbbb…"
    assert len(fit("x" * 200, 80)) == 80
