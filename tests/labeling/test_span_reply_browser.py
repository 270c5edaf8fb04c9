"""A span's reply that comes back after the labeller has moved to another item: the page must not draw the
old item's spans over the new item's passages (nor take the old item back as the one shown)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.chunking import Document
from ragmetrics.labeling.server import LabelServer
from ragmetrics.labeling.team import Overlap, TeamQueue

from .helpers import team_queue_over, wait_on_page

pytestmark = pytest.mark.browser

DOCUMENTS = [
    Document("bridges", "The old bridge opened in 1901. It is 300 m long. The new bridge opened in 1999."),
    Document(
        "trains", "The first train ran in 1850. Trains now run every ten minutes. Tickets cost two euros."
    ),
]


class HeldSpans(TeamQueue):
    """A team queue whose span replies wait (after the span is stored) until the test lets them go: the
    reply of a slow server, arriving after the person has moved on."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stored = threading.Event()
        self.release = threading.Event()

    def select_span(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        reply = super().select_span(*args, **kwargs)
        self.stored.set()
        assert self.release.wait(30)
        return reply


def test_a_span_reply_for_an_item_no_longer_shown_is_not_drawn(
    chromium_driver: Callable[[int, int], Any], tmp_path: Path
) -> None:
    queue = team_queue_over(tmp_path, DOCUMENTS, ["ann"], Overlap(1, 1.0), sentences=1, queue=HeldSpans)
    server = LabelServer(queue.session, team=queue).start()
    driver = chromium_driver(1200, 1000)
    try:
        driver.get(queue.link(server.url, "ann"))
        body = driver.find_element("tag name", "body")
        wait_on_page(lambda: body.get_attribute("data-ready") == "true", driver)
        first = body.get_attribute("data-position")
        # select the first context's first word and mark it: the server stores it and holds the reply
        driver.execute_script(
            "const node = document.querySelectorAll('#fields ol.contexts li .text')[0].firstChild;"
            "const range = document.createRange(); range.setStart(node, 0); range.setEnd(node, 3);"
            "const s = window.getSelection(); s.removeAllRanges(); s.addRange(range);"
        )
        driver.find_element("css selector", "#span-tools button[data-grade='2']").click()
        assert queue.stored.wait(15)
        # meanwhile the person labels this item and moves to the next one
        key = queue.status("ann")["choices"][0]["key"]
        body.send_keys(key)
        wait_on_page(lambda: body.get_attribute("data-labelled") == "1", driver)
        body.send_keys("\n")
        wait_on_page(lambda: body.get_attribute("data-position") not in (None, first), driver)
        assert body.get_attribute("data-spans") == "0"
        queue.release.set()  # the old item's reply arrives now
        wait_on_page(lambda: body.get_attribute("data-span-replies") == "1" or body.get_attribute("data-spans") != "0",
              driver)  # fmt: skip
        assert body.get_attribute("data-spans") == "0"
        assert driver.find_elements("css selector", "#fields mark") == []
        assert body.get_attribute("data-position") != first
    finally:
        queue.release.set()
        server.stop()
