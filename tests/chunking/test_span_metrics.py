"""Span metrics equal Chroma's chunking study's own functions (values in the fixture, computed by
benchmarks/check_span_metrics_reference.py with brandonstarxel/chunking_evaluation's code on its corpora and
questions), and behave as documented on cases worked by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.chunking import (
    Chunk,
    SpanJudgment,
    SpanQrels,
    best_precision,
    query_best_precision,
    query_span_score,
    span_scores,
)
from ragmetrics.errors import InputError

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "chunking_evaluation_reference.json"
TOLERANCE = 1e-12


def _reference() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


REFERENCE = _reference()


@pytest.mark.parametrize("entry", REFERENCE["chunkings"], ids=lambda e: e["name"])
def test_span_metrics_equal_chunking_evaluations_functions(entry: dict[str, Any]) -> None:
    assert "chunking_evaluation" in REFERENCE["attribution"]
    qids = [f"q{i}" for i in REFERENCE["questions"]]
    spans = SpanQrels.from_judgments(
        SpanJudgment(query_id=q, doc_id=doc, start=start, end=end)
        for q, refs in zip(qids, REFERENCE["references"], strict=True)
        for doc, start, end in refs
    )
    # The fixture holds offsets, not the corpora's text: the metrics read only offsets.
    offsets = [
        (doc, flat[i], flat[i + 1]) for doc, flat in entry["chunks"].items() for i in range(0, len(flat), 2)
    ]
    chunks = [Chunk(f"c{i}", doc, start, end, "") for i, (doc, start, end) in enumerate(offsets)]
    best = best_precision(spans, chunks)
    for q, omega, needed in zip(qids, entry["precision_omega"], entry["chunks_needed"], strict=True):
        assert best[q].value == pytest.approx(omega, abs=TOLERANCE), q
        assert best[q].chunks_needed == needed, q
    for mode, values in entry["modes"].items():
        rankings = {q: [f"c{i}" for i in picks] for q, picks in zip(qids, values["retrievals"], strict=True)}
        k = dict(zip(qids, values["k"], strict=True)) if mode == "needed" else values["k"]
        scores = span_scores(spans, chunks, rankings, k=k)
        assert not scores.unscored
        for q, recall, precision, iou in zip(
            qids, values["recall"], values["precision"], values["iou"], strict=True
        ):
            got = scores.per_query[q]
            assert (got.recall, got.precision, got.iou) == pytest.approx(
                (recall, precision, iou), abs=TOLERANCE
            ), q


def test_span_scores_by_hand() -> None:
    references = [("d", 10, 20), ("d", 30, 40)]  # 20 relevant characters
    # chunks [0, 15) and [12, 35): covered = [10, 15) + [12, 20) + [30, 35) = 10 + 5 = 15 characters once
    score = query_span_score(references, [("d", 0, 15), ("d", 12, 35), ("other", 10, 20)])
    read = 15 + 23 + 10
    assert score.recall == 15 / 20
    assert score.precision == 15 / read  # the overlap [12, 15) is read twice and counted twice
    assert score.iou == 15 / (read + 5)
    empty = query_span_score(references, [])
    assert (empty.recall, empty.precision, empty.iou) == (0.0, 0.0, 0.0)


def test_best_precision_counts_a_chunk_touching_a_span_as_the_study_does() -> None:
    references = [("d", 10, 20)]
    chunks = [("d", 0, 10), ("d", 10, 20), ("d", 20, 30)]  # the outer two only touch the span
    best = query_best_precision(references, chunks)
    assert best.chunks_needed == 3
    assert best.value == 10 / 30
    assert query_best_precision(references, [("d", 5, 25)]).value == 10 / 20
    assert query_best_precision(references, [("e", 5, 25)]).chunks_needed == 0


def test_questions_without_relevant_spans_are_listed_not_scored() -> None:
    spans = SpanQrels.from_judgments(
        [
            SpanJudgment(query_id="a", doc_id="d", start=0, end=4, grade=2),
            SpanJudgment(query_id="b", doc_id="d", start=0, end=4, grade=0),
        ]
    )
    chunks = [Chunk("c", "d", 0, 8, "abcdefgh")]
    scores = span_scores(spans, chunks, {"a": ["c"]})
    assert scores.unscored == ["b"]
    assert scores.per_query["a"].recall == 1.0 and scores.per_query["a"].precision == 0.5
    assert span_scores(spans, chunks, {}, level=2).per_query["a"].recall == 0.0  # missing from the run
    with pytest.raises(InputError, match="retrieved 'zz', which is not a chunk"):
        span_scores(spans, chunks, {"a": ["zz"]})


def test_span_metrics_in_tokens_count_tokens_not_characters() -> None:
    text = "Supercalifragilistic words. a b c d e f g h"
    documents = {"d": text}
    spans = SpanQrels.from_judgments([SpanJudgment(query_id="q", doc_id="d", start=0, end=27)])
    long_word = Chunk("c1", "d", 0, 20, text[:20])  # one long word: 20 characters, several word pieces
    letters = Chunk("c2", "d", 28, 43, text[28:43])  # eight one-letter tokens, 15 characters
    chars = span_scores(spans, [long_word, letters], {"q": ["c1", "c2"]})
    tokens = span_scores(spans, [long_word, letters], {"q": ["c1", "c2"]}, unit="tokens", documents=documents)
    from ragmetrics.chunking.units import token_spans

    pieces = token_spans(text)
    in_word = sum(1 for s, e in pieces if e <= 20)
    in_span = sum(1 for s, e in pieces if s < 27)
    assert chars.per_query["q"].recall == 20 / 27 and chars.per_query["q"].precision == 20 / 35
    assert tokens.per_query["q"].recall == in_word / in_span
    assert tokens.per_query["q"].precision == in_word / (in_word + 8)
    assert (
        best_precision(spans, [long_word, letters], unit="tokens", documents=documents)["q"].chunks_needed
        == 1
    )
    with pytest.raises(ValueError, match="needs the documents"):
        span_scores(spans, [long_word], {}, unit="tokens")
    blank = SpanQrels.from_judgments(
        [SpanJudgment(query_id="q", doc_id="d", start=27, end=28)], source="s.jsonl"
    )
    with pytest.raises(InputError, match="holds no token"):
        span_scores(blank, [long_word], {}, unit="tokens", documents=documents)
