"""report.html and history.html read in a real browser (headless Chromium through Selenium) at 1400 px and at
phone width: significance shading on every significant row, green for better and red for worse, nothing
hidden, a sortable per-query table, no empty sections; the history page shows the nights with an injected
drop and a judge change (skipped where Chromium, ChromeDriver or selenium are absent)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.nightly.artifacts import write_artifacts
from ragmetrics.nightly.pipeline import run_pipeline

from .conftest import ConfigWriter

pytestmark = pytest.mark.browser  # skipped where Chromium or selenium is missing (tests/conftest.py)
GOOD_BG, BAD_BG = "rgba(226, 242, 230, 1)", "rgba(251, 227, 225, 1)"


@pytest.fixture
def browser(chromium_driver: Callable[[int, int], Any]) -> Any:
    return chromium_driver(1400, 1000)


def _report_page(qa_dir: Path, write_config: ConfigWriter, runs: list[dict[str, str]]) -> Path:
    config = write_config(runs=runs, output={"dir": "out", "plots": False})
    outcome = run_pipeline(config, progress=False, write=False)
    _, written = write_artifacts(outcome.report, qa_dir / "out", formats=["json", "html"], plots=False)
    return written["report.html"]


def _page_fits(driver: Any) -> bool:
    return bool(driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1"))


def test_the_report_reads_at_a_glance(qa_dir: Path, write_config: ConfigWriter, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    page = _report_page(qa_dir, write_config, [
        {"source": "dataset", "name": "pipeline"},
        {"source": "file", "path": "weaker.trec", "name": "weaker"},
    ])  # fmt: skip
    browser.get(page.as_uri())
    assert browser.find_element(By.TAG_NAME, "html").get_attribute("data-ready") == "1"
    # the summary: nothing hidden at 1400 px
    fits = browser.execute_script(
        "var t = document.querySelector('table.summary'); return t.scrollWidth <= t.parentNode.clientWidth;"
    )
    assert fits and _page_fits(browser)
    # every significant comparison row shaded, green when the candidate is better, red when worse
    rows = browser.find_elements(By.CSS_SELECTOR, "table.pairs tbody tr")
    significant = [r for r in rows if r.find_elements(By.TAG_NAME, "td")[7].text.endswith("*")]
    assert significant, "the weaker run should differ significantly on some metric"
    for row in significant:
        cell = row.find_elements(By.TAG_NAME, "td")[0]
        colour = cell.value_of_css_property("background-color")
        assert colour == BAD_BG  # weaker (candidate) is worse than pipeline on every metric it differs
    # the summary marks the pair both ways: [a] on the better run, a red mark on the worse
    summary = browser.find_element(By.CSS_SELECTOR, "table.summary").text
    assert "[b]" in summary and "▼[a]" in summary
    # the per-query table sorts by a difference column: the query the weaker run lost most on comes first
    header = browser.find_element(
        By.CSS_SELECTOR, "#perquery thead th[data-m='0'][title='weaker minus pipeline']"
    )
    header.click()
    values = [
        float(v) if v else None
        for v in browser.execute_script(
            "var col = Array.prototype.indexOf.call(arguments[0].parentNode.children, arguments[0]);"
            "return Array.prototype.map.call(document.querySelectorAll('#perquery tbody tr'),"
            " function (r) { return r.cells[col].getAttribute('data-v'); });",
            header,
        )
    ]
    numbers = [v for v in values if v is not None]
    assert numbers == sorted(numbers) and numbers[0] < 0
    # the metric picker shows every metric's columns
    Select(browser.find_element(By.ID, "metric")).select_by_value("all")
    shown = [
        th for th in browser.find_elements(By.CSS_SELECTOR, "#perquery thead th[data-m]") if th.is_displayed()
    ]
    assert len({th.get_attribute("data-m") for th in shown}) >= 3
    # phone width: the page itself never scrolls sideways (wide tables scroll in their own box)
    browser.set_window_size(390, 844)
    browser.get(page.as_uri())
    assert _page_fits(browser)


def test_a_one_run_report_has_no_comparison_section(
    qa_dir: Path, write_config: ConfigWriter, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    page = _report_page(qa_dir, write_config, [{"source": "dataset", "name": "pipeline"}])
    browser.get(page.as_uri())
    headings = [h.text for h in browser.find_elements(By.TAG_NAME, "h2")]
    assert "Summary" in headings and "Paired comparisons" not in headings
    assert all(h.text.strip() for h in browser.find_elements(By.TAG_NAME, "h2"))


@pytest.mark.slow
def test_the_history_of_six_quickstart_nights(tmp_path: Path, browser: Any) -> None:
    """examples/history_demo.py: the built-in collection six times, a change injected on night 3 and the judge's
    model changed on night 5; history.html shows the failed nights and the judge change."""
    from selenium.webdriver.common.by import By

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    try:
        import history_demo
    finally:
        sys.path.pop(0)
    codes = history_demo.build(tmp_path / "out")
    assert codes[:2] == [0, 0] and codes[2] == 1  # the injected change fails the gate
    browser.get((tmp_path / "out" / "history.html").as_uri())
    figures = browser.find_elements(By.CSS_SELECTOR, "figure.series")
    assert len(figures) == 29
    rerank = browser.find_element(
        By.CSS_SELECTOR, "figure.series[data-run='bm25_embed_rerank'][data-metric='ndcg@10']"
    )
    statuses = [c.get_attribute("data-status") for c in rerank.find_elements(By.CSS_SELECTOR, "circle.night")]
    assert statuses[:2] == ["no_baseline", "ok"] and set(statuses[2:]) == {"regression"}
    judged = browser.find_element(
        By.CSS_SELECTOR, "figure.series[data-run='pipeline'][data-metric='faithfulness']"
    )
    kinds = [g.get_attribute("data-kind") for g in judged.find_elements(By.CSS_SELECTOR, "g.change")]
    assert any("judge" in k for k in kinds)
    changes = browser.find_element(By.CSS_SELECTOR, "ul.changes").text
    assert "judge model" in changes and "config changed: runs" in changes
    assert _page_fits(browser)
    browser.set_window_size(390, 844)
    browser.get((tmp_path / "out" / "history.html").as_uri())
    assert _page_fits(browser)
    # At phone width the drift table scrolls in its box, which says so, with one-line rows (they were ~140 px).
    heights = browser.execute_script(
        "return [...document.querySelectorAll('table.drifts tbody tr')].map(r => r.getBoundingClientRect().height)"
    )
    assert heights and max(heights) < 45, heights
    hint = browser.execute_script(
        "const box = document.querySelector('table.drifts').parentElement;"
        "return getComputedStyle(box, '::before').content;"
    )
    assert "scrolls sideways" in hint
