"""The evidence span each question was written from, as span qrels beside the test set (DIR/spans.jsonl).

A question is written from its source chunk(s); when the corpus says where each chunk lies in its document
(a corpus `ragmetrics chunk split` wrote: `doc_id`, `start`, `end`), the source judgments are also written
as spans of the documents, converted through the corpus's own chunking by the rule of
`ragmetrics.chunking.derive`. Deriving chunk qrels from them for that chunking gives back the source qrels
exactly; for any other chunking of the same documents they give that chunking's qrels, so the questions
outlive a change of chunker. A corpus without offsets gets no spans file (nothing to anchor them to).
"""

from __future__ import annotations

from pathlib import Path

from ragmetrics.chunking.derive import spans_from_chunk_qrels
from ragmetrics.chunking.model import Chunk
from ragmetrics.chunking.spans import SpanQrels, write_span_qrels
from ragmetrics.testset.build_result import TestSet
from ragmetrics.testset.corpus import Corpus

__all__ = ["SPANS_FILE", "evidence_spans", "write_evidence_spans"]

SPANS_FILE = "spans.jsonl"


def evidence_spans(testset: TestSet) -> SpanQrels | None:
    """The source judgments as spans, or None when the corpus carries no offsets for the source chunks."""
    corpus = testset.corpus
    source = {(g.query_id, g.doc_id): g.grade for g in testset.grades if g.origin == "source"}
    if not isinstance(corpus, Corpus) or not source:
        return None
    wanted = {doc_id for _, doc_id in source}
    documents = {doc for chunk_id, doc, _, _, _ in corpus.offset_rows() if chunk_id in wanted}
    if not documents:
        return None
    # every chunk of those documents: where a character's home is depends on its neighbours
    chunks = [
        Chunk(cid, doc, s, e, text) for cid, doc, s, e, text in corpus.offset_rows() if doc in documents
    ]
    located = {c.id for c in chunks}
    qrels: dict[str, dict[str, int]] = {}
    for (query, chunk_id), grade in source.items():
        if chunk_id in located:
            qrels.setdefault(query, {})[chunk_id] = grade
    return spans_from_chunk_qrels(qrels, chunks, source=f"{corpus.source} (the test set's source chunks)")


def write_evidence_spans(testset: TestSet, folder: Path) -> Path | None:
    """DIR/spans.jsonl when the corpus carries offsets; its path, else None."""
    spans = evidence_spans(testset)
    if spans is None:
        return None
    path = folder / SPANS_FILE
    write_span_qrels(path, spans)
    return path
