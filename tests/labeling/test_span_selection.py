"""Selecting the answering text on the labelling page records a span of the passage's document."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.chunking import ChunkingConfig, Document, chunk_documents, read_span_qrels, write_chunks
from ragmetrics.labeling.server import TOKEN_HEADER, LabelServer
from ragmetrics.labeling.spans import LABELLED_SPANS_FILE
from ragmetrics.labeling.testset_session import TestsetLabelSession
from ragmetrics.testset.build import build_testset
from ragmetrics.testset.output import write_testset

DOCUMENTS = [
    Document("bridges", "The old bridge opened in 1901. It is 300 m long. The new bridge opened in 1999."),
    Document(
        "trains", "The first train ran in 1850. Trains now run every ten minutes. Tickets cost two euros."
    ),
]


def _post(server: LabelServer, body: dict[str, Any]) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    headers = {"Content-Type": "application/json", TOKEN_HEADER: server.token}
    connection.request("POST", "/api/span", body=json.dumps(body).encode(), headers=headers)
    response = connection.getresponse()
    data = json.loads(response.read())
    connection.close()
    return response.status, data


def test_a_selection_in_a_passage_becomes_a_span_of_its_document(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    write_chunks(corpus, chunk_documents(DOCUMENTS, ChunkingConfig(method="sentences", size=2, overlap=1)))
    folder = tmp_path / "ts"
    write_testset(build_testset(str(corpus), size=3, seed=0, judge_checks=False, min_terms=2), folder)
    session = TestsetLabelSession(folder, "qrels", folder / "labels.jsonl")
    passage = session.item(0)["texts"]["contexts"][0]
    server = LabelServer(session).start()
    try:
        status, answer = _post(server, {"position": 0, "start": 4, "end": 14, "grade": 3})
        assert status == 200, answer
        texts = {d.id: d.text for d in DOCUMENTS}
        spans = read_span_qrels(folder / LABELLED_SPANS_FILE, texts)  # its text checked against the document
        (span,) = spans.judgments()
        assert texts[span.doc_id][span.start : span.end] == passage[4:14] == span.text
        assert span.grade == 3 and answer["spans"] == [{"start": 4, "end": 14, "grade": 3}]

        # a corrected selection replaces the one it overlaps
        status, answer = _post(server, {"position": 0, "start": 8, "end": 20, "grade": 2})
        assert status == 200 and answer["spans"] == [{"start": 8, "end": 20, "grade": 2}]
        assert len(read_span_qrels(folder / LABELLED_SPANS_FILE).judgments()) == 1

        status, answer = _post(server, {"position": 0, "start": 5, "end": len(passage) + 1, "grade": 1})
        assert status == 400 and "not inside the passage" in answer["error"]
        status, answer = _post(server, {"position": 0, "start": 0, "end": 3, "grade": 7})
        assert status == 400 and "grade 7" in answer["error"]
    finally:
        server.stop()


@pytest.mark.browser
def test_selecting_text_on_the_page_marks_it_and_stores_the_span(
    chromium_driver: Callable[[int, int], Any], tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    write_chunks(corpus, chunk_documents(DOCUMENTS, ChunkingConfig(method="sentences", size=2, overlap=1)))
    folder = tmp_path / "ts"
    write_testset(build_testset(str(corpus), size=3, seed=0, judge_checks=False, min_terms=2), folder)
    session = TestsetLabelSession(folder, "qrels", folder / "labels.jsonl")
    server = LabelServer(session).start()
    driver = chromium_driver(1200, 1000)
    try:
        driver.get(server.url)
        body = driver.find_element("tag name", "body")
        _wait(lambda: body.get_attribute("data-ready") == "true")
        position = int(body.get_attribute("data-position"))
        passage = session.item(position)["texts"]["contexts"][0]
        # what a person's drag does: a selection over characters 4..14 of the passage
        driver.execute_script(
            "const node = document.querySelector('#fields ol.contexts li .text').firstChild;"
            "const range = document.createRange(); range.setStart(node, 4); range.setEnd(node, 14);"
            "const s = window.getSelection(); s.removeAllRanges(); s.addRange(range);"
        )
        driver.find_element("css selector", "#span-tools button[data-grade='3']").click()
        _wait(lambda: body.get_attribute("data-spans") == "1")
        assert driver.find_element("css selector", "#fields mark").text == passage[4:14]
        (span,) = read_span_qrels(folder / LABELLED_SPANS_FILE, {d.id: d.text for d in DOCUMENTS}).judgments()
        assert (span.text, span.grade) == (passage[4:14], 3)
    finally:
        server.stop()


def _wait(condition: Callable[[], object], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")
