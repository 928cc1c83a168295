"""The HTML report in a real headless browser: Debian's chromium driven by Playwright's Python package (its
own browser downloads are never used: ``executable_path`` is the system chromium).

At 1400 and 800 pixels wide, the page of a real sweep of the loopback cluster, and of the demo (run twice on
one history, so it has its changes table), loads with no console error and no request but its own file; the
scatter has one mark per GPU that has both readings, each naming its host and GPU; the GPUs a check flagged,
and only those, are drawn as the flagged shape (``path.gpu.flagged``, the rest ``circle.gpu``); no mark lies
on another; the page is no wider than the window. Screenshots are kept under the test's tmp dir; with
``GPUDIAG_UPDATE_SCREENSHOT=1`` the demo's 1400-pixel view is written to ``docs/html-report.png`` (the
README's picture):

    GPUDIAG_UPDATE_SCREENSHOT=1 python3 -m pytest -q tests/integration/test_html_browser.py -k demo
"""

from __future__ import annotations

import itertools
import json
import math
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cli_run import run_cli

# Many SSH handshakes (or a browser) at once: one worker runs the "bursts" group, one test after another
# (pyproject.toml: --dist loadgroup), so no two bursts share the two cores and read as timeouts.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("bursts")]
REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCENARIOS = ("healthy", "case_study", "bandwidth_bound", "idle", "mixed", "one_lost", "driver_error")
WIDTHS = (1400, 800)
DOCS_PICTURE = REPO / "docs" / "html-report.png"
MARK = 2 * 5.0  # two radii: marks closer than this cover one another


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=REPO)  # in this process: the process is not the point


def plotted_and_flagged(document: dict[str, Any]) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """From the JSON of the same sweep: the GPUs the scatter must plot, and those a check flagged."""
    plotted = sorted((h["host"], g["index"]) for h in document["hosts"] for g in h["gpus"]
                     if g["utilization_pct"] is not None and g["power"] and g["power"]["pct_of_limit"] is not None)
    named = {(h["host"], f["gpu"]) for h in document["hosts"] for f in h["findings"]
             if f["gpu"] is not None and f["severity"] != "ok"}
    return plotted, sorted(set(plotted) & named)


@dataclass
class Seen:
    """What the browser saw of one page at one width."""

    marks: list[tuple[str, int]] = field(default_factory=list)
    flagged: list[tuple[str, int]] = field(default_factory=list)
    tags: dict[str, set[str]] = field(default_factory=dict)  # "flagged"/"plain" -> element names
    centres: list[tuple[float, float]] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    overflow_px: int = 0
    shaded: int = 0


_MARKS_JS = """chart => [...document.querySelectorAll(`#${chart} .gpu`)].map(m => {
  const r = m.getBoundingClientRect();
  return {host: m.dataset.host, gpu: Number(m.dataset.gpu), flagged: m.classList.contains('flagged'),
          tag: m.tagName, x: r.x + r.width / 2, y: r.y + r.height / 2,
          title: m.querySelector('title') ? m.querySelector('title').textContent : ''};
})"""


def look(page_file: Path, width: int, screenshot: Path, chart: str = "scatter") -> Seen:
    """Open ``page_file`` at ``width`` pixels in headless chromium, with console and request listeners; the
    marks of the chart ``#chart``."""
    playwright = pytest.importorskip("playwright.sync_api", reason="Playwright not installed: pip install playwright")
    if CHROMIUM is None:
        pytest.skip("chromium not installed: apt-get install chromium")
    seen = Seen()
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": width, "height": 1400})
            page.on("request", lambda r: seen.requests.append(r.url))
            page.on("console", lambda m: seen.problems.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: seen.problems.append(str(e)))
            page.goto(page_file.as_uri(), wait_until="load")
            for m in page.evaluate(_MARKS_JS, chart):
                seen.marks.append((m["host"], m["gpu"]))
                if m["flagged"]:
                    seen.flagged.append((m["host"], m["gpu"]))
                seen.tags.setdefault("flagged" if m["flagged"] else "plain", set()).add(m["tag"])
                seen.centres.append((m["x"], m["y"]))
                seen.titles.append(m["title"])
            seen.overflow_px = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
            seen.shaded = page.locator(f"#{chart} rect.busy-low-power, #{chart} rect.starved").count()
            page.screenshot(path=str(screenshot))
        finally:
            browser.close()
    seen.marks.sort()
    seen.flagged.sort()
    return seen


def check(seen: Seen, page_file: Path, plotted: list[tuple[str, int]], flagged: list[tuple[str, int]]) -> None:
    """What every page must show in the browser, at every width."""
    assert seen.requests == [page_file.as_uri()] and seen.problems == []
    assert seen.marks == plotted and seen.shaded == 1  # one mark per GPU
    assert seen.flagged == flagged and flagged  # the flagged ones, and only those, drawn as flagged
    assert seen.tags == {"flagged": {"path"}, "plain": {"circle"}}  # a different shape, not only a colour
    close = [(a, b) for a, b in itertools.combinations(range(len(seen.centres)), 2)
             if math.dist(seen.centres[a], seen.centres[b]) < MARK * 0.8]  # 0.8: the SVG may be scaled down
    assert not close, [(seen.marks[a], seen.marks[b]) for a, b in close]
    assert seen.overflow_px <= 0


def test_html_report_in_headless_chromium(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(f"{sshd_cluster.inventory_defaults()}hosts:\n" + "".join(
        f"  {s}: {{address: {sshd_cluster.address_of(s)}}}\n" for s in SCENARIOS))
    page_file, json_file = tmp_path / "report.html", tmp_path / "report.json"
    args = ("sweep", "-i", str(inventory), "--samples", "1", "--interval", "0")
    html_run = cli(*args, "--format", "html", "--output", str(page_file))
    assert html_run.returncode == 2, html_run.stderr  # driver_error: critical
    assert html_run.stdout.startswith(f"wrote {page_file}: ") and html_run.stdout.count("\n") == 1  # page: file
    assert cli(*args, "--format", "json", "--output", str(json_file), "--quiet").returncode == 2
    plotted, flagged = plotted_and_flagged(json.loads(json_file.read_text()))
    assert len(plotted) > 20
    for width in WIDTHS:
        seen = look(page_file, width, tmp_path / f"report-{width}.png")
        check(seen, page_file, plotted, flagged)
        assert any(t.startswith("case_study GPU 0 ") and "of its enforced power limit" in t for t in seen.titles)
        assert (tmp_path / f"report-{width}.png").stat().st_size > 10_000


def test_demo_html_report_in_headless_chromium(tmp_path: Path) -> None:
    """The demo, as the README shows it: its second run on one history, so the changes table is there."""
    page_file, json_file, history = tmp_path / "demo.html", tmp_path / "demo.json", tmp_path / "h.sqlite"
    for _ in range(2):
        assert cli("sweep", "--demo", "--format", "html", "-o", str(page_file), "--history", str(history),
                   "--quiet").returncode == 2
    assert cli("sweep", "--demo", "--format", "json", "-o", str(json_file), "--quiet").returncode == 2
    plotted, flagged = plotted_and_flagged(json.loads(json_file.read_text()))
    assert len(plotted) == 40 and len(flagged) == 17  # BUSY_LOW_POWER 8, POWER_LIMIT_REDUCED 8, XID 1
    text = page_file.read_text()
    assert '<table id="changes">' in text and '<table id="not-read">' in text and "train-h200-05" in text
    for width in WIDTHS:
        seen = look(page_file, width, tmp_path / f"demo-{width}.png")
        check(seen, page_file, plotted, flagged)
    if os.environ.get("GPUDIAG_UPDATE_SCREENSHOT") == "1":
        shutil.copyfile(tmp_path / "demo-1400.png", DOCS_PICTURE)


H200 = REPO / "tests" / "data" / "h200_580.159_processes"
WORKLOADS = ("idle", "spin", "tiny_graph", "gemv", "copy", "small_gemm", "gemm", "eager_decode")


def test_sm_activity_chart_in_headless_chromium(tmp_path: Path) -> None:
    """Where SM activity was measured (the real H200's NVML GPM recordings, one host per workload, through the
    parser and the checks): the second chart has one mark per measured GPU, the starved ones flagged."""
    from gpudiag.checks import CheckSettings, evaluate
    from gpudiag.collect.parse import parse_probe
    from gpudiag.model import HostReport, HostStatus, SweepReport
    from gpudiag.report import OutputFormat, render

    hosts = []
    for workload in WORKLOADS:
        readings = parse_probe(json.loads((H200 / f"{workload}_nvml.json").read_text()))
        found = evaluate(workload, HostStatus.OK, None, readings, CheckSettings())
        hosts.append(HostReport(host=workload, address=None, status=HostStatus.OK, readings=readings,
                                findings=tuple(found)))
    report = SweepReport(started_at="2026-01-01T00:00:00Z", duration_s=1.0, hosts=tuple(hosts),
                         settings=CheckSettings())
    page_file = tmp_path / "gpm.html"
    page_file.write_text(render(report, OutputFormat.HTML))
    document = json.loads(render(report, OutputFormat.JSON))
    plotted, flagged = plotted_and_flagged(document)
    measured = sorted((h["host"], g["index"]) for h in document["hosts"] for g in h["gpus"]
                      if g["sm_active_pct"] is not None)
    assert len(measured) == 7 and ("idle", 0) not in measured  # idle: GPM gave no sample
    assert flagged == [("eager_decode", 0), ("small_gemm", 0), ("spin", 0), ("tiny_graph", 0)]
    for width in WIDTHS:
        check(look(page_file, width, tmp_path / f"gpm-{width}.png"), page_file, plotted, flagged)
        seen = look(page_file, width, tmp_path / f"gpm-activity-{width}.png", chart="sm-activity")
        check(seen, page_file, measured, flagged)
        assert any(t.startswith("spin GPU 0 ") and "SM activity 0.76% (nvml gpm)" in t for t in seen.titles)
