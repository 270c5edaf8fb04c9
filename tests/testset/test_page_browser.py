"""testset.html in headless Chromium at desktop and phone width: nothing cut off outside a scroll box that says
it scrolls, every section there, no script needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragmetrics.testset import TestSet
from ragmetrics.testset.output import write_testset

pytestmark = pytest.mark.browser

OVERFLOW = """
const out = [];
for (const el of document.querySelectorAll('body *')) {
  if (el.closest('.scroll')) continue;
  const r = el.getBoundingClientRect();
  if (r.width > 0 && r.right > window.innerWidth + 1) out.push(el.tagName + ' ' + (el.className || ''));
}
return out;
"""


@pytest.mark.parametrize("width", [1400, 390])
def test_the_page_fits_its_width(builtin_testset: TestSet, tmp_path: Path, chromium_driver: Any, width: int) -> None:
    paths = write_testset(builtin_testset, tmp_path / "ts")
    driver = chromium_driver(width, 900)
    driver.get(paths["html"].as_uri())
    assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert driver.execute_script(OVERFLOW) == []
    headings = [h.text for h in driver.find_elements("tag name", "h2")]
    assert headings[:2] == ["Coverage of the corpus", "Question kinds and languages"] or "Coverage of the corpus" in headings
    assert {"Filters", "Qrels", "Questions"} <= set(headings)
    boxes = driver.execute_script(
        "return [...document.querySelectorAll('.scroll')].map(b => [b.scrollWidth > b.clientWidth + 1,"
        " b.previousElementSibling && b.previousElementSibling.classList.contains('hint')]);"
    )
    for overflowing, hinted in boxes:
        if overflowing:
            assert hinted, "a table wider than its box must say that it scrolls"
    if width == 1400:
        driver.save_screenshot(str(tmp_path / "testset.png"))
