"""The HTML report in a real headless browser: Debian's chromium driven by Playwright's Python package (its
own browser downloads are never used: ``executable_path`` is the system chromium). The page of a real sweep of
the loopback cluster loads with no console error and no network request, the scatter has one point per GPU
that has both readings, each naming its host and GPU, and a screenshot is kept under the test's tmp dir."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCENARIOS = ("healthy", "case_study", "bandwidth_bound", "idle", "mixed", "one_lost", "driver_error")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpudiag", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=120)


def test_html_report_in_headless_chromium(sshd_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    playwright = pytest.importorskip("playwright.sync_api", reason="Playwright not installed: pip install playwright")
    if CHROMIUM is None:
        pytest.skip("chromium not installed: apt-get install chromium")
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(f"{sshd_cluster.inventory_defaults()}hosts:\n" + "".join(
        f"  {s}: {{address: {sshd_cluster.address_of(s)}}}\n" for s in SCENARIOS))
    page_file, json_file = tmp_path / "report.html", tmp_path / "report.json"
    args = ("sweep", "-i", str(inventory), "--samples", "1", "--interval", "0")
    html_run = cli(*args, "--format", "html", "--output", str(page_file))
    assert html_run.returncode == 2, html_run.stderr  # driver_error: critical
    assert html_run.stdout.startswith(f"wrote {page_file}: ") and html_run.stdout.count("\n") == 1  # page: file
    assert cli(*args, "--format", "json", "--output", str(json_file), "--quiet").returncode == 2
    gpus = [(h["host"], g["index"]) for h in json.loads(json_file.read_text())["hosts"] for g in h["gpus"]
            if g["utilization_pct"] is not None and g["power"] and g["power"]["pct_of_limit"] is not None]
    assert len(gpus) > 20

    requests: list[str] = []
    problems: list[str] = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 900})
            page.on("request", lambda r: requests.append(r.url))
            page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(page_file.as_uri(), wait_until="load")
            points = page.locator("#scatter circle.gpu")
            shown = sorted((points.nth(i).get_attribute("data-host"), int(points.nth(i).get_attribute("data-gpu")))
                           for i in range(points.count()))
            titles = [points.nth(i).locator("title").text_content() for i in range(points.count())]
            shaded = page.locator("#scatter rect.busy-low-power").count()
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert requests == [page_file.as_uri()] and problems == []
    assert shown == sorted(gpus) and shaded == 1
    assert any(t and t.startswith("case_study GPU 0 ") and "of its enforced power limit" in t for t in titles)
    assert (tmp_path / "report.png").stat().st_size > 10_000
