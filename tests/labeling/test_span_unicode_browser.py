"""Selections on the labelling page over text with characters outside the Basic Multilingual Plane (emoji)
and combining marks: the browser's selection offsets are UTF-16 code units, the stored spans are Python
characters (code points), so the page must convert both ways (selecting, and marking the stored spans)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.chunking import Document
from ragmetrics.labeling.server import LabelServer
from ragmetrics.labeling.team import Overlap, TeamQueue
from ragmetrics.labeling.team_spans import team_spans_path

from .helpers import team_queue_over, wait_on_page

pytestmark = pytest.mark.browser

# emoji (two UTF-16 code units each) and a decomposed "é" (e + U+0301) before the answering text
DOCUMENTS = [
    Document(
        "bridges",
        "The old 🌉 bridge 🎉🎉 opened in 1901. Cafe\u0301 🚗 is 300 m long. The new bridge opened in 1999.",
    ),
    Document(
        "trains", "The first 🚂 train ran in 1850. Trains now run every ten minutes. Tickets cost two 💶."
    ),
]
TEXTS = {d.id: d.text for d in DOCUMENTS}


def test_a_selection_after_emoji_is_stored_and_marked_in_characters(
    chromium_driver: Callable[[int, int], Any], tmp_path: Path
) -> None:
    queue = team_queue_over(tmp_path, DOCUMENTS, ["ann"], Overlap(1, 1.0), sentences=2, queue=TeamQueue)
    server = LabelServer(queue.session, team=queue).start()
    driver = chromium_driver(1200, 1000)
    try:
        driver.get(queue.link(server.url, "ann"))
        body = driver.find_element("tag name", "body")
        wait_on_page(lambda: body.get_attribute("data-ready") == "true", driver)
        position = int(body.get_attribute("data-position"))
        item = queue.item("ann", position)
        # the first context with an emoji before a word to select
        index, target = next(
            (i, word)
            for i, text in enumerate(item["texts"]["contexts"])
            for word in ("1901", "1850", "long", "train")
            if word in text and any(ord(c) > 0xFFFF for c in text[: text.index(word)])
        )
        context, place = item["texts"]["contexts"][index], item["passages"][index]
        # what a person's drag over `target` does (the DOM's offsets are UTF-16 code units)
        driver.execute_script(
            "const node = document.querySelectorAll('#fields ol.contexts li .text')[arguments[0]].firstChild;"
            "const at = node.data.indexOf(arguments[1]);"
            "const range = document.createRange(); range.setStart(node, at);"
            "range.setEnd(node, at + arguments[1].length);"
            "const s = window.getSelection(); s.removeAllRanges(); s.addRange(range);",
            index,
            target,
        )
        driver.find_element("css selector", "#span-tools button[data-grade='2']").click()
        wait_on_page(lambda: body.get_attribute("data-spans") == "1", driver)
        marked = driver.find_element("css selector", f"#fields li:nth-child({index + 1}) mark").text
        assert marked == target, (marked, target)
    finally:
        server.stop()
    rows = [json.loads(line) for line in team_spans_path(tmp_path / "labels.jsonl").read_text().splitlines()]
    (row,) = rows
    start = place["start"] + context.index(target)
    assert (row["doc_id"], row["start"], row["end"]) == (place["doc_id"], start, start + len(target))
    assert row["text"] == target == TEXTS[row["doc_id"]][row["start"] : row["end"]]
