"""Chunking by configuration and span qrels (docs/chunking.md).

Documents are cut into chunks that keep their document id and character offsets; judgments are spans of
documents, so they survive re-chunking: any chunking gets graded chunk qrels derived from them (every
retrieval measure then runs), and span metrics (recall, precision, IoU, best precision) as Chroma's chunking
study defines them.
"""

from __future__ import annotations

from ragmetrics.chunking.chunkers import ChunkerFn, chunk_document, chunk_documents, custom_chunks
from ragmetrics.chunking.corpus import read_chunks, write_chunks
from ragmetrics.chunking.derive import ChunkHomes, derive_chunk_qrels, spans_from_chunk_qrels
from ragmetrics.chunking.documents import html_text, load_documents
from ragmetrics.chunking.model import (
    CHUNKER_VERSION,
    Chunk,
    ChunkingConfig,
    ChunkingMethod,
    Document,
    chunk_id,
)
from ragmetrics.chunking.span_metrics import (
    BestPrecision,
    SpanScore,
    SpanScores,
    best_precision,
    query_best_precision,
    query_span_score,
    ranked_chunk_ids,
    span_scores,
)
from ragmetrics.chunking.spans import SpanJudgment, SpanQrels, read_span_qrels, write_span_qrels

__all__ = [
    "CHUNKER_VERSION",
    "BestPrecision",
    "Chunk",
    "ChunkHomes",
    "ChunkerFn",
    "ChunkingConfig",
    "ChunkingMethod",
    "Document",
    "SpanJudgment",
    "SpanQrels",
    "SpanScore",
    "SpanScores",
    "best_precision",
    "chunk_document",
    "chunk_documents",
    "chunk_id",
    "custom_chunks",
    "derive_chunk_qrels",
    "html_text",
    "load_documents",
    "query_best_precision",
    "query_span_score",
    "ranked_chunk_ids",
    "read_chunks",
    "read_span_qrels",
    "span_scores",
    "spans_from_chunk_qrels",
    "write_chunks",
    "write_span_qrels",
]
