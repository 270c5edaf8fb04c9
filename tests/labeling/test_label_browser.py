"""Ten samples labelled from the keyboard in headless Chromium, the labels file checked (skipped where Debian's
chromium and chromium-driver or the selenium package are absent)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.labeling.server import LabelServer
from ragmetrics.labeling.session import LabelSession
from ragmetrics.trust.labels import load_labels

from .helpers import HOSTILE, make_report

pytestmark = pytest.mark.browser  # skipped where Chromium or selenium is missing (tests/conftest.py)


@pytest.fixture
def browser(chromium_driver: Callable[[int, int], Any]) -> Any:
    return chromium_driver(1200, 1400)


def _wait(driver: Any, condition: Any, seconds: float = 10.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out; page says: {driver.find_element('id', 'error').text!r}")


def _press(driver: Any, key: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(key).perform()


def test_ten_samples_labelled_from_the_keyboard(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.keys import Keys

    scores = make_report(tmp_path / "report", count=14)
    labels_path = tmp_path / "human_labels.jsonl"
    session = LabelSession(tmp_path / "report", "faithfulness", labels_path, target=10)
    server = LabelServer(session).start()
    given: dict[str, float] = {}
    try:
        browser.get(server.url)
        body = browser.find_element("tag name", "body")
        _wait(browser, lambda: body.get_attribute("data-ready") == "true")
        for n in range(10):
            position = int(_wait(browser, lambda: body.get_attribute("data-position")))
            sample_id = browser.find_element("id", "sample-id").text
            reveal = browser.find_element("id", "reveal")
            # No anchoring: the judge's verdict is not on the page before the person answers.
            assert not reveal.is_displayed()
            assert browser.find_element("id", "judge-score").get_attribute("textContent") == ""
            assert browser.find_element("id", "judge-reason").get_attribute("textContent") == ""
            assert f"reason for {sample_id}" not in browser.page_source
            key, value = ("y", 1.0) if n % 3 else ("n", 0.0)
            _press(browser, key)
            _wait(browser, reveal.is_displayed)
            shown = browser.find_element("id", "judge-score").text
            assert float(shown) == pytest.approx(scores[sample_id], abs=0.005)
            given[sample_id] = value
            assert position == session.order.index(sample_id)
            _press(browser, Keys.ENTER)
            if n < 9:
                _wait(browser, lambda at=str(position): body.get_attribute("data-position") != at)
        _wait(browser, lambda: body.get_attribute("data-done") == "true")
        assert browser.title != "pwned"  # the sample with markup in its context was shown as text
        browser.save_screenshot(str(tmp_path / "done.png"))
        _press(browser, "q")
        assert server.wait(10)
    finally:
        server.stop()
    labels = load_labels(labels_path)
    got = {lab.sample_id: lab.value for lab in labels.labels}
    assert got == given and len(got) == 10
    assert {lab.run for lab in labels.labels} == {"pipeline"}
    assert {lab.metric for lab in labels.labels} == {"faithfulness"}
    # The first ten of the order were labelled: the score-stratified prefix, not ten arbitrary samples.
    assert set(got) == set(session.order[:10])


def test_hostile_text_is_shown_as_text(browser: Any, tmp_path: Path) -> None:
    make_report(tmp_path / "report", count=14)
    session = LabelSession(tmp_path / "report", "faithfulness", tmp_path / "labels.csv")
    server = LabelServer(session).start()
    try:
        position = session.order.index("s03")  # its second context is markup with scripts
        browser.get(server.url)
        body = browser.find_element("tag name", "body")
        _wait(browser, lambda: body.get_attribute("data-ready") == "true")
        browser.execute_script("return 1")  # the page's own script runs; the sample's must not
        for _ in range(position):
            _press(browser, "s")
            time.sleep(0.05)
        _wait(browser, lambda: browser.find_element("id", "sample-id").text == "s03")
        contexts = browser.find_element("id", "fields").text
        assert HOSTILE in contexts
        assert browser.title == "ragmetrics label"
        assert not browser.find_elements("css selector", "#fields img, #fields script")
    finally:
        server.stop()


def test_a_second_session_resumes_after_the_last_label(browser: Any, tmp_path: Path) -> None:
    make_report(tmp_path / "report", count=14)
    labels_path = tmp_path / "human_labels.jsonl"
    first = LabelSession(tmp_path / "report", "faithfulness", labels_path)
    for position in range(4):
        first.label(position, 1.0)
    second = LabelSession(tmp_path / "report", "faithfulness", labels_path)
    server = LabelServer(second).start()
    try:
        browser.get(server.url)
        body = browser.find_element("tag name", "body")
        _wait(browser, lambda: body.get_attribute("data-ready") == "true")
        assert body.get_attribute("data-position") == "4"
        assert "4 labelled of 14" in browser.find_element("id", "progress").text
    finally:
        server.stop()
