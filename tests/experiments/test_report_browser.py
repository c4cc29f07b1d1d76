"""The results page renders in headless Chromium and shows every plot."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from experiments.framework import Experiment, execute
from experiments.framework.report import build_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (make setup installs it)")

_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def test_report_renders_every_plot(tmp_path: Path, squares: Experiment) -> None:
    from playwright.sync_api import sync_playwright

    for _ in range(3):
        execute(squares, quick=True, base=tmp_path / "results", progress=lambda _: None)
    page_path, plots = build_report(tmp_path / "results", tmp_path / "report.html")
    assert plots == 3
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(page_path.as_uri())
            images = page.evaluate(
                "Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight])")
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
            title = page.title()
        finally:
            browser.close()
    assert title == "AI Fabric Lab results"
    assert len(images) == 3
    assert all(done and width > 100 and height > 100 for done, width, height in images)
    assert (tmp_path / "report.png").stat().st_size > 10_000
