"""Span selection in a team queue (over HTTP, against the real server on 127.0.0.1): each person marks the
text supporting the answer as spans of documents, checked field by field, stored with their name, merged into
span qrels that `ragmetrics chunk` reads (so chunk qrels follow for any chunking) and the people's agreement
on them (character IoU)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.chunking import (
    ChunkingConfig,
    Document,
    SpanJudgment,
    chunk_documents,
    derive_chunk_qrels,
    read_span_qrels,
    write_chunks,
)
from ragmetrics.errors import InputError
from ragmetrics.labeling.passages import Passages
from ragmetrics.labeling.server import TOKEN_HEADER, LabelServer
from ragmetrics.labeling.session import LabelSession
from ragmetrics.labeling.team import Overlap, TeamQueue
from ragmetrics.labeling.team_spans import TeamSpans, team_spans_path

from .helpers import make_report, team_queue_over

DOCUMENTS = [
    Document("bridges", "The old bridge opened in 1901. It is 300 m long. The new bridge opened in 1999. It is wide."),
    Document("trains", "The first train ran in 1850. Trains now run every ten minutes. Tickets cost two euros."),
]
TEXTS = {d.id: d.text for d in DOCUMENTS}


def _queue(tmp_path: Path, names: list[str], overlap: Overlap, **kw: Any) -> TeamQueue:
    return team_queue_over(tmp_path, DOCUMENTS, names, overlap, count=6, **kw)


def _call(server: LabelServer, path: str, token: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    headers = {TOKEN_HEADER: token, **({"Content-Type": "application/json"} if body is not None else {})}
    request = urllib.request.Request(server.url + path.lstrip("/"), headers=headers,
                                     data=None if body is None else json.dumps(body).encode(),
                                     method="GET" if body is None else "POST")  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _token(queue: TeamQueue, name: str) -> str:
    return next(t for t, n in queue.tokens.items() if n == name)


def _stored(tmp_path: Path) -> list[dict[str, Any]]:
    path = team_spans_path(tmp_path / "labels.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_people_mark_spans_that_become_span_qrels_for_any_chunking(tmp_path: Path) -> None:
    queue = _queue(tmp_path, ["ann", "bob"], Overlap(2, 1.0))
    server = LabelServer(queue.session, team=queue).start()
    try:
        ann, bob = _token(queue, "ann"), _token(queue, "bob")
        position = _call(server, "api/next", ann)[1]["position"]
        assert _call(server, "api/next", bob)[1]["position"] == position  # both label every item (k = 2)
        status, item = _call(server, f"api/item/{position}", ann)
        assert status == 200 and item["passage_spans"] == [[], []]
        first = item["passages"][0]
        doc, base = first["doc_id"], first["start"]
        assert TEXTS[doc][first["start"] : first["end"]] == item["texts"]["contexts"][0]  # places are right
        # ann marks 20 characters of the first passage, bob 10 of them plus 10 beyond (document characters)
        status, answer = _call(server, "api/span", ann, {"position": position, "doc_id": doc,
                                                          "start": base + 4, "end": base + 24, "grade": 3})  # fmt: skip
        assert status == 200, answer
        assert answer["passage_spans"] == [[{"start": 4, "end": 24, "grade": 3}], []]
        status, answer = _call(server, "api/span", bob, {"position": position, "doc_id": doc,
                                                          "start": base + 14, "end": base + 29, "grade": 2})  # fmt: skip
        assert status == 200, answer
        # each sees only their own spans
        assert _call(server, f"api/item/{position}", ann)[1]["passage_spans"][0] == [{"start": 4, "end": 24, "grade": 3}]
        assert _call(server, f"api/item/{position}", bob)[1]["passage_spans"][0] == [{"start": 14, "end": 29, "grade": 2}]
        # a corrected selection replaces the person's own span it overlaps, never the other's
        status, answer = _call(server, "api/span", ann, {"position": position, "doc_id": doc,
                                                          "start": base + 4, "end": base + 19, "grade": 3})  # fmt: skip
        assert status == 200 and answer["passage_spans"][0] == [{"start": 4, "end": 19, "grade": 3}]
    finally:
        server.stop()
    rows = _stored(tmp_path)
    assert sorted((r["labeller"], r["start"] - base, r["end"] - base, r["grade"]) for r in rows) == [
        ("ann", 4, 19, 3), ("bob", 14, 29, 2)]  # fmt: skip
    assert all(TEXTS[r["doc_id"]][r["start"] : r["end"]] == r["text"] for r in rows)

    summary = queue.spans.export(tmp_path / "span_qrels.jsonl", tmp_path / "span_agreement.json")  # type: ignore[union-attr]
    # merged: the characters both marked ([14, 19)), at the lower of their grades; checked against the documents
    (merged,) = read_span_qrels(tmp_path / "span_qrels.jsonl", TEXTS).judgments()
    assert (merged.doc_id, merged.start - base, merged.end - base, merged.grade) == (doc, 14, 19, 2)
    assert merged.query_id == queue.order[position]
    agreement = summary["agreement"]
    assert agreement["questions"] == 1 and agreement["pairs"] == 1
    assert agreement["mean_iou"] == pytest.approx(5 / 25)  # [4, 19) and [14, 29): 5 shared of 25
    assert json.loads((tmp_path / "span_agreement.json").read_text())["agreement"] == agreement
    # any other chunking of the documents gets chunk qrels from them
    other = chunk_documents(DOCUMENTS, ChunkingConfig(method="recursive", size=40, overlap=0))
    qrels = derive_chunk_qrels(read_span_qrels(tmp_path / "span_qrels.jsonl"), other)
    judged = qrels.to_dict()[merged.query_id]
    assert judged and all(next(c for c in other if c.id == cid).doc_id == doc for cid in judged)


def test_bad_spans_are_refused_naming_the_field_and_never_stored(tmp_path: Path) -> None:
    queue = _queue(tmp_path, ["ann", "bob"], Overlap(1, 1.0))
    server = LabelServer(queue.session, team=queue).start()
    try:
        ann, bob = _token(queue, "ann"), _token(queue, "bob")
        position = _call(server, "api/next", ann)[1]["position"]
        first = _call(server, f"api/item/{position}", ann)[1]["passages"][0]
        doc, start, end = first["doc_id"], first["start"], first["end"]
        good = {"position": position, "doc_id": doc, "start": start, "end": end, "grade": 3}
        for change, field in [
            ({"end": start}, "end"),  # start == end
            ({"start": end, "end": start}, "end"),  # start > end
            ({"start": -1}, "start"),  # a negative start is the start's fault
            ({"start": -1, "end": -5}, "start"),
            ({"end": end + 10_000}, "end"),  # past the passage and the document
            ({"start": end + 5_000, "end": end + 5_001}, "start"),
            ({"doc_id": "no-such-document"}, "doc_id"),
            ({"doc_id": ""}, "doc_id"),
            ({"doc_id": 3}, "doc_id"),
            ({"grade": 7}, "grade"),
            ({"grade": True}, "grade"),
            ({"start": "4"}, "start"),
            ({"position": 999}, "position"),
            ({"position": None}, "position"),
        ]:
            status, answer = _call(server, "api/span", ann, {**good, **change})
            assert status == 400, (change, answer)
            assert answer["field"] == field and f"field {field!r}" in answer["error"], (change, answer)
        # an item bob neither holds nor labelled is not his to mark
        status, answer = _call(server, "api/span", bob, good)
        assert status == 409 and "not yours" in answer["error"]
        assert _stored(tmp_path) == []
        status, answer = _call(server, "api/span", ann, good)
        assert status == 200 and answer["start"] == start
    finally:
        server.stop()
    assert len(_stored(tmp_path)) == 1


def test_people_marking_at_once_lose_no_span(tmp_path: Path) -> None:
    queue = _queue(tmp_path, ["ann", "bob", "cyd"], Overlap(3, 1.0))
    server = LabelServer(queue.session, team=queue).start()
    errors: list[str] = []

    def mark(name: str) -> None:
        token = _token(queue, name)
        position = _call(server, "api/next", token)[1]["position"]
        place = _call(server, f"api/item/{position}", token)[1]["passages"][0]
        for offset in range(0, 16, 2):  # eight disjoint one-character spans each
            at = place["start"] + offset
            status, answer = _call(server, "api/span", token, {"position": position, "doc_id": place["doc_id"],
                                                               "start": at, "end": at + 1, "grade": 2})  # fmt: skip
            if status != 200:
                errors.append(str(answer))

    try:
        threads = [threading.Thread(target=mark, args=(name,)) for name in ("ann", "bob", "cyd")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        server.stop()
    assert not errors, errors
    rows = _stored(tmp_path)
    assert sorted(r["labeller"] for r in rows) == ["ann"] * 8 + ["bob"] * 8 + ["cyd"] * 8
    assert queue.spans is not None and queue.spans.agreement()["mean_iou"] == 1.0


def _span(start: int, end: int, grade: int) -> SpanJudgment:
    return SpanJudgment(query_id="q", doc_id="bridges", start=start, end=end, grade=grade,
                        text=TEXTS["bridges"][start:end])  # fmt: skip


def test_merged_spans_take_the_lower_median_or_the_adjudicators(tmp_path: Path) -> None:
    spans = TeamSpans(tmp_path / "labels.spans.jsonl")
    spans.add("ann", _span(0, 30, 3))
    spans.add("bob", _span(10, 40, 2))
    spans.add("cyd", _span(20, 50, 3))
    merged = spans.merged()
    assert merged is not None
    got = [(s.start, s.end, s.grade) for s in merged.judgments()]
    # [10, 20): ann 3, bob 2 -> 2;  [20, 30): all three -> 3;  [30, 40): bob 2, cyd 3 -> 2; the rest one of three
    assert got == [(10, 20, 2), (20, 30, 3), (30, 40, 2)]
    assert all(s.text == TEXTS["bridges"][s.start : s.end] for s in merged.judgments())
    decided = spans.merged(adjudicator="cyd")
    assert decided is not None and [(s.start, s.end, s.grade) for s in decided.judgments()] == [(20, 50, 3)]
    iou = spans.agreement()
    # pairs: ann-bob 20/40, ann-cyd 10/50, bob-cyd 20/40
    assert iou["per_question"]["q"] == pytest.approx((0.5 + 0.2 + 0.5) / 3, abs=1e-6)


def test_a_corpus_that_places_no_context_is_an_input_error(tmp_path: Path) -> None:
    chunks = chunk_documents(DOCUMENTS, ChunkingConfig(method="sentences", size=2, overlap=0))
    make_report(tmp_path / "report", count=4)  # contexts without ids from this corpus
    write_chunks(tmp_path / "corpus.jsonl", chunks)
    session = LabelSession(tmp_path / "report", "faithfulness", tmp_path / "labels.jsonl")
    with pytest.raises(InputError, match="--corpus"):
        Passages.of_samples(session.samples, tmp_path / "corpus.jsonl")


def test_the_command_serves_the_queue_and_exports_its_span_qrels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import re
    import time

    from ragmetrics.cli import main

    chunks = chunk_documents(DOCUMENTS, ChunkingConfig(method="sentences", size=2, overlap=0))
    write_chunks(tmp_path / "corpus.jsonl", chunks)
    make_report(tmp_path / "report", count=3, chunks=chunks)
    labels = tmp_path / "team.jsonl"
    base = ["label", str(tmp_path / "report"), "--metric", "faithfulness", "--labels", str(labels)]
    assert main([*base, "--corpus", str(tmp_path / "corpus.jsonl")]) == 2  # no team: refused, naming it
    assert "'--corpus'" in capsys.readouterr().err
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(main([*base, "--labellers", "ann", "--corpus",
                                                                 str(tmp_path / "corpus.jsonl")])))  # fmt: skip
    thread.start()
    err = ""
    deadline = time.monotonic() + 30
    while (found := re.search(r"ann: (http://127\.0\.0\.1:\d+/)#token=(\S+)", err)) is None:
        assert time.monotonic() < deadline and thread.is_alive(), err
        time.sleep(0.05)
        err += capsys.readouterr().err
    url, token = found.groups()

    def call(path: str, body: dict[str, Any] | None = None) -> Any:
        request = urllib.request.Request(url + path, data=None if body is None else json.dumps(body).encode(),
                                         headers={TOKEN_HEADER: token, "Content-Type": "application/json"},
                                         method="GET" if body is None else "POST")  # fmt: skip
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    marked = None
    while (position := call("api/next")["position"]) is not None:
        if marked is None:
            place = call(f"api/item/{position}")["passages"][1]
            marked = call("api/span", {"position": position, "doc_id": place["doc_id"], "start": place["start"],
                                       "end": place["start"] + 8, "grade": 3})  # fmt: skip
        call("api/label", {"position": position, "value": 1})
    thread.join(timeout=30)
    assert result == [0]
    err += capsys.readouterr().err
    assert "supporting spans can be marked in 6 of the 6 contexts shown" in err  # 3 samples, 2 contexts each
    assert "spans marked: 1" in err and "team.span_qrels.jsonl" in err
    (span,) = read_span_qrels(tmp_path / "team.span_qrels.jsonl", TEXTS).judgments()
    assert marked is not None and (span.doc_id, span.start, span.end) == (marked["doc_id"], marked["start"], marked["end"])
    assert json.loads((tmp_path / "team.span_agreement.json").read_text())["spans"] == 1
    # what `ragmetrics chunk` makes of them: chunk qrels for this chunking and for another
    other = chunk_documents(DOCUMENTS, ChunkingConfig(method="recursive", size=30, overlap=5))
    write_chunks(tmp_path / "other.jsonl", other)
    for corpus in ("corpus.jsonl", "other.jsonl"):
        out = tmp_path / f"{corpus}.qrels.json"
        assert main(["chunk", "qrels", "--spans", str(tmp_path / "team.span_qrels.jsonl"), "--corpus",
                     str(tmp_path / corpus), "-o", str(out)]) == 0  # fmt: skip
        assert json.loads(out.read_text())[span.query_id]


@pytest.mark.browser
def test_a_labeller_selects_text_in_a_context_on_the_page(
    chromium_driver: Callable[[int, int], Any], tmp_path: Path
) -> None:
    import time

    queue = _queue(tmp_path, ["ann"], Overlap(1, 1.0))
    server = LabelServer(queue.session, team=queue).start()
    driver = chromium_driver(1200, 1000)
    try:
        driver.get(queue.link(server.url, "ann"))
        body = driver.find_element("tag name", "body")
        deadline = time.monotonic() + 15
        while body.get_attribute("data-ready") != "true":
            assert time.monotonic() < deadline, driver.find_element("id", "error").text
            time.sleep(0.05)
        position = int(body.get_attribute("data-position"))
        item = queue.item("ann", position)
        second, place = item["texts"]["contexts"][1], item["passages"][1]
        # what a person's drag does: characters 3..11 of the second context
        driver.execute_script(
            "const node = document.querySelectorAll('#fields ol.contexts li .text')[1].firstChild;"
            "const range = document.createRange(); range.setStart(node, 3); range.setEnd(node, 11);"
            "const s = window.getSelection(); s.removeAllRanges(); s.addRange(range);"
        )
        driver.find_element("css selector", "#span-tools button[data-grade='2']").click()
        while body.get_attribute("data-spans") != "1":
            assert time.monotonic() < deadline, driver.find_element("id", "error").text
            time.sleep(0.05)
        assert driver.find_element("css selector", "#fields li:nth-child(2) mark").text == second[3:11]
    finally:
        server.stop()
    (row,) = _stored(tmp_path)
    assert (row["labeller"], row["doc_id"], row["start"], row["end"], row["grade"]) == (
        "ann", place["doc_id"], place["start"] + 3, place["start"] + 11, 2)  # fmt: skip
    assert row["text"] == second[3:11] == TEXTS[row["doc_id"]][row["start"] : row["end"]]


def test_spans_need_a_question_that_shows_the_contexts(tmp_path: Path) -> None:
    import dataclasses

    chunks = chunk_documents(DOCUMENTS, ChunkingConfig(method="sentences", size=2, overlap=0))
    write_chunks(tmp_path / "corpus.jsonl", chunks)
    make_report(tmp_path / "report", count=4, chunks=chunks)
    session = LabelSession(tmp_path / "report", "faithfulness", tmp_path / "labels.jsonl")
    passages = Passages.of_samples(session.samples, tmp_path / "corpus.jsonl")
    session.question = dataclasses.replace(session.question, shows=("question", "answer"))  # as answer_relevancy
    with pytest.raises(InputError, match="shows no contexts"):
        TeamQueue(session, ["ann"], overlap=Overlap(1, 1.0), passages=passages)


def test_a_damaged_spans_file_stops_the_queue_naming_its_line(tmp_path: Path) -> None:
    path = team_spans_path(tmp_path / "labels.jsonl")
    row = {"labeller": "ann", "query_id": "q", "doc_id": "bridges", "start": 0, "end": 10, "grade": 3}
    path.write_text(json.dumps(row) + "\n" + json.dumps({**row, "start": 5, "end": 20}) + "\n")
    with pytest.raises(InputError, match=r"line 2.*overlaps"):
        _queue(tmp_path, ["ann"], Overlap(1, 1.0))
    path.write_text(json.dumps({**row, "end": 0}) + "\n")
    with pytest.raises(InputError, match="line 1"):
        _queue(tmp_path, ["ann"], Overlap(1, 1.0))


def test_whatever_is_sent_only_spans_inside_a_shown_passage_are_stored(tmp_path: Path) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    queue = _queue(tmp_path, ["ann"], Overlap(1, 1.0))
    server = LabelServer(queue.session, team=queue).start()
    ann = _token(queue, "ann")
    position = _call(server, "api/next", ann)[1]["position"]
    shown = [p for p in _call(server, f"api/item/{position}", ann)[1]["passages"] if p is not None]
    junk = st.none() | st.booleans() | st.text(max_size=5) | st.floats(allow_nan=False) | st.integers()

    def mostly(sensible: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        """Four times in five a sensible value, so that some requests hold only valid fields."""
        return st.integers(0, 4).flatmap(lambda n: sensible if n else junk)

    offsets = st.integers(shown[0]["start"], shown[0]["end"]) | st.integers(-5, max(p["end"] for p in shown) + 5)

    queue_position = position

    @settings(max_examples=40, deadline=None, database=None, derandomize=True)
    @given(position=mostly(st.just(position)), doc_id=mostly(st.sampled_from(["bridges", "trains"])),
           start=mostly(offsets), end=mostly(offsets), grade=mostly(st.integers(-1, 4)))  # fmt: skip
    def send(position: Any, doc_id: Any, start: Any, end: Any, grade: Any) -> None:
        body = {"position": position, "doc_id": doc_id, "start": start, "end": end, "grade": grade}
        status, answer = _call(server, "api/span", ann, body)
        assert status in (200, 400, 409), (body, answer)
        if status == 409:
            assert position != queue_position and "not yours" in answer["error"]  # an item ann does not hold
        elif status == 400:
            assert answer["field"] in ("position", "doc_id", "start", "end", "grade"), (body, answer)
            assert f"field {answer['field']!r}" in answer["error"]
        else:
            assert any(p["doc_id"] == doc_id and p["start"] <= start < end <= p["end"] for p in shown), body

    try:
        send()
    finally:
        server.stop()
    rows = _stored(tmp_path)
    assert rows  # some were valid
    assert queue.spans is not None
    queue.spans.check()  # one grade per character per person, every row well formed
    for row in rows:
        assert any(p["doc_id"] == row["doc_id"] and p["start"] <= row["start"] < row["end"] <= p["end"]
                   for p in shown)  # fmt: skip
        assert TEXTS[row["doc_id"]][row["start"] : row["end"]] == row["text"] and 0 <= row["grade"] <= 3
