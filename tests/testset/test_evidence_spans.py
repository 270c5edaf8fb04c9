"""A test set built from a chunk corpus with offsets records each question's evidence as spans of the
documents: they give back the source qrels on that chunking and judge any other chunking of the documents."""

from __future__ import annotations

from pathlib import Path

from ragmetrics.chunking import (
    ChunkingConfig,
    Document,
    chunk_documents,
    derive_chunk_qrels,
    read_chunks,
    read_span_qrels,
    write_chunks,
)
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.testset.build import build_testset
from ragmetrics.testset.output import write_testset

from .conftest import TOPICS, corpus_rows, write_jsonl


def test_questions_keep_their_evidence_as_spans(tmp_path: Path) -> None:
    documents = [Document(topic, " ".join(texts)) for topic, texts in TOPICS.items()]
    corpus = tmp_path / "corpus.jsonl"
    write_chunks(corpus, chunk_documents(documents, ChunkingConfig(method="sentences", size=1)))
    testset = build_testset(str(corpus), size=8, seed=0, judge_checks=False)
    paths = write_testset(testset, tmp_path / "ts")
    texts = {d.id: d.text for d in documents}
    spans = read_span_qrels(paths["spans"], texts)
    source = {}
    for g in testset.grades:
        if g.origin == "source":
            source.setdefault(g.query_id, {})[g.doc_id] = g.grade
    assert source and set(spans.by_query) == set(source)
    assert derive_chunk_qrels(spans, read_chunks(corpus)).to_dict() == Qrels.from_dict(source).to_dict()

    windows = chunk_documents(documents, ChunkingConfig(method="tokens", size=12, overlap=4))
    derived = derive_chunk_qrels(spans, windows).to_dict()
    assert all(derived[q] for q in source)  # every question judges the new chunking too


def test_a_corpus_without_offsets_writes_no_spans(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "plain.jsonl", corpus_rows())
    paths = write_testset(build_testset(str(corpus), size=4, seed=0, judge_checks=False), tmp_path / "ts")
    assert "spans" not in paths and not (tmp_path / "ts" / "spans.jsonl").exists()
