"""Span qrels <-> chunk qrels through a chunking: the round trip is exact, the rule is the documented one,
and what cannot be carried is refused by name."""

from __future__ import annotations

import random

import pytest

from ragmetrics.chunking import (
    Chunk,
    ChunkingConfig,
    Document,
    SpanJudgment,
    SpanQrels,
    chunk_documents,
    derive_chunk_qrels,
    spans_from_chunk_qrels,
)
from ragmetrics.errors import InputError

TEXT = (
    "Retrieval systems are judged by the documents they rank. A chunk is judged for a question when it "
    "holds the answer. When the chunker changes, every chunk id changes with it, and the judgments are void. "
    "Spans of documents survive the change. "
) * 6


def _chunk(doc: str, start: int, end: int) -> Chunk:
    return Chunk(f"{doc}:{start}-{end}", doc, start, end, "x" * (end - start))


@pytest.mark.parametrize(
    "config",
    [
        ChunkingConfig(method="tokens", size=20, overlap=8),
        ChunkingConfig(method="tokens", size=9, overlap=6),  # overlap more than half the window
        ChunkingConfig(method="sentences", size=2, overlap=1),
        ChunkingConfig(method="recursive", size=120, overlap=40),
    ],
    ids=lambda c: c.name,
)
def test_the_same_chunking_gives_back_exactly_the_chunk_qrels(config: ChunkingConfig) -> None:
    documents = [Document("a", TEXT), Document("b", TEXT[100:] + TEXT[:50])]
    chunks = chunk_documents(documents, config)
    rng = random.Random(7)
    original = {
        f"q{i}": {c.id: rng.choice([0, 1, 2, 3]) for c in rng.sample(chunks, rng.randint(1, 6))}
        for i in range(40)
    }
    spans = spans_from_chunk_qrels(original, chunks)
    assert derive_chunk_qrels(spans, chunks).to_dict() == original


def test_chunk_qrels_become_spans_split_at_the_middle_of_an_overlap() -> None:
    # Two windows sharing [6, 10): each character's home is the chunk where it has more context.
    chunks = [_chunk("d", 0, 10), _chunk("d", 6, 16), _chunk("d", 12, 22)]
    spans = spans_from_chunk_qrels({"q": {"d:0-10": 2, "d:6-16": 1}}, chunks)
    assert [(s.start, s.end, s.grade) for s in spans.judgments()] == [(0, 8, 2), (8, 14, 1)]


def test_a_new_chunking_takes_the_best_grade_of_the_spans_it_holds() -> None:
    spans = SpanQrels.from_judgments(
        [
            SpanJudgment(query_id="q", doc_id="d", start=5, end=15, grade=1),
            SpanJudgment(query_id="q", doc_id="d", start=15, end=18, grade=3),
            SpanJudgment(query_id="q", doc_id="d", start=40, end=41, grade=0),
            SpanJudgment(query_id="empty", doc_id="d", start=90, end=95, grade=2),
        ]
    )
    chunks = [_chunk("d", 0, 10), _chunk("d", 10, 16), _chunk("d", 16, 30), _chunk("d", 30, 50)]
    derived = derive_chunk_qrels(spans, chunks).to_dict()
    assert derived == {"q": {"d:0-10": 1, "d:10-16": 3, "d:16-30": 3, "d:30-50": 0}, "empty": {}}
    assert derive_chunk_qrels(spans, chunks, min_chars=2).to_dict()["q"] == {
        "d:0-10": 1, "d:10-16": 1, "d:16-30": 3,
    }  # fmt: skip


def test_what_cannot_be_carried_is_refused_by_name() -> None:
    chunks = [_chunk("d", 0, 10), _chunk("d", 2, 8), _chunk("d", 10, 20)]
    with pytest.raises(InputError, match=r"query 'q' judges chunk 'd:2-8', which lies wholly inside"):
        spans_from_chunk_qrels({"q": {"d:2-8": 1}}, chunks)
    with pytest.raises(InputError, match=r"judges chunk 'nope', which the chunking does not hold"):
        spans_from_chunk_qrels({"q": {"nope": 1}}, chunks)
    spans = SpanQrels.from_judgments(
        [SpanJudgment(query_id="q", doc_id="other", start=0, end=3)], source="s.jsonl", lines=[4]
    )
    with pytest.raises(InputError, match=r"s.jsonl, line 4, field 'doc_id': .*'other'"):
        derive_chunk_qrels(spans, chunks)


def test_two_chunkings_of_the_same_documents_score_the_same_questions() -> None:
    documents = [Document("a", TEXT)]
    source_chunks = chunk_documents(documents, ChunkingConfig(method="sentences", size=1))
    qrels = {"q1": {source_chunks[1].id: 2}, "q2": {source_chunks[5].id: 1, source_chunks[6].id: 1}}
    spans = spans_from_chunk_qrels(qrels, source_chunks)
    small = derive_chunk_qrels(spans, chunk_documents(documents, ChunkingConfig(method="tokens", size=8)))
    large = derive_chunk_qrels(
        spans, chunk_documents(documents, ChunkingConfig(method="recursive", size=300))
    )
    assert set(small.query_ids) == set(large.query_ids) == {"q1", "q2"}
    assert all(small.to_dict()[q] and large.to_dict()[q] for q in ("q1", "q2"))
