"""Three people label one queue at once in headless Chromium, each through their own link; one browser is
killed mid-way. Every item ends with exactly the labels its overlap asks, none lost or duplicated, the killed
person's held item handed on (skipped where Chromium, ChromeDriver or selenium is missing)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.labeling.server import LabelServer
from ragmetrics.labeling.session import LabelSession
from ragmetrics.labeling.team import TeamQueue, parse_overlap
from ragmetrics.trust.labels import load_labels

from .helpers import make_report

pytestmark = pytest.mark.browser


def _labeller(driver: Any, url: str, key: str, stop_after: int | None, done: list[int], errors: list[str]) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    try:
        driver.get(url)
        body = driver.find_element("tag name", "body")
        deadline = time.monotonic() + 90
        count = 0
        while time.monotonic() < deadline:
            if body.get_attribute("data-done") == "true":
                break
            position = body.get_attribute("data-position")
            reveal = driver.find_element("id", "reveal")
            if body.get_attribute("data-ready") != "true" or position is None or reveal.is_displayed():
                if reveal.is_displayed():
                    ActionChains(driver).send_keys(Keys.ENTER).perform()
                time.sleep(0.05)
                continue
            if body.get_attribute("data-waiting") == "true":
                time.sleep(0.1)
                continue
            assert driver.find_element("id", "judge-score").get_attribute("textContent") == ""  # no anchoring
            ActionChains(driver).send_keys(key).perform()
            wait = time.monotonic() + 10
            while not reveal.is_displayed() and time.monotonic() < wait:
                if driver.find_element("id", "error").is_displayed():
                    break
                time.sleep(0.05)
            if reveal.is_displayed():
                count += 1
                done[0] = count
                if stop_after is not None and count >= stop_after:
                    return  # this person stops here: the test kills the browser
                ActionChains(driver).send_keys(Keys.ENTER).perform()
                while body.get_attribute("data-position") == position and time.monotonic() < wait:
                    if body.get_attribute("data-done") == "true" or body.get_attribute("data-waiting") == "true":
                        break
                    time.sleep(0.05)
        else:
            errors.append(f"{url}: timed out; page error {driver.find_element('id', 'error').text!r}")
    except Exception as exc:  # recorded for the test thread
        errors.append(f"{type(exc).__name__}: {exc}")


def _kill(driver: Any) -> None:
    """Kill the browser and its driver outright (SIGKILL), as a crashed machine or a closed laptop would."""
    import psutil

    process = psutil.Process(driver.service.process.pid)
    for child in process.children(recursive=True):
        child.send_signal(signal.SIGKILL)
    os.kill(process.pid, signal.SIGKILL)


def test_three_people_label_one_queue_at_once(chromium_driver: Callable[[int, int], Any], tmp_path: Path) -> None:
    make_report(tmp_path / "report", count=14)
    session = LabelSession(tmp_path / "report", "faithfulness", tmp_path / "labels.jsonl")
    queue = TeamQueue(session, ["ann", "bob", "cyd"], overlap=parse_overlap("2:0.5"), lease_s=2.0, seed=1)
    server = LabelServer(session, team=queue).start()
    drivers = {name: chromium_driver(1000, 1100) for name in queue.labellers}
    counts = {name: [0] for name in queue.labellers}
    errors: list[str] = []
    try:
        threads = {
            name: threading.Thread(target=_labeller, args=(drivers[name], queue.link(server.url, name), key,
                                                           2 if name == "cyd" else None, counts[name], errors))
            for name, key in (("ann", "y"), ("bob", "n"), ("cyd", "y"))
        }  # fmt: skip
        for thread in threads.values():
            thread.start()
        threads["cyd"].join(timeout=60)
        # cyd answered twice and took the next item: now the browser dies with the item held
        deadline = time.monotonic() + 10
        while not any("cyd" in holders for holders in queue._holds.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        _kill(drivers["cyd"])
        for name in ("ann", "bob"):
            threads[name].join(timeout=120)
        assert not errors, errors
        assert queue.complete()
    finally:
        server.stop()
    labels = load_labels(tmp_path / "labels.jsonl").labels
    per_item: dict[str, list[str]] = {}
    for label in labels:
        per_item.setdefault(label.sample_id, []).append(str(label.labeller))
    assert {s: len(v) for s, v in per_item.items()} == queue.required  # exactly k each: none lost, none extra
    assert all(len(set(v)) == len(v) for v in per_item.values())  # never one person twice on an item
    given = {name: sum(1 for v in per_item.values() if name in v) for name in queue.labellers}
    assert given["cyd"] == 2 and given["ann"] > 0 and given["bob"] > 0
    assert sum(given.values()) == sum(queue.required.values())
