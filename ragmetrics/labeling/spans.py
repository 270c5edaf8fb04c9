"""Spans people select on the labelling page: the answering text of a passage, kept as a span of its document.

When a test set's corpus says where each chunk lies in its document (a corpus `ragmetrics chunk split`
wrote), a person labelling qrels can select the text of the passage that answers the question. The selection,
given in the passage's characters, is stored in the document's characters (chunk start + offset) as a span
judgment in DIR/labelled_spans.jsonl (the span qrels format of `ragmetrics.chunking.spans`), so it judges
every later chunking of the documents, not only this chunk.

The file is rewritten whole through a temporary file and an atomic rename under the labels' lock, like the
labels file. One character has one grade per question: a new selection replaces the spans of the same
question on the same document that it overlaps (a person correcting a selection), and only those.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ragmetrics.chunking.spans import SpanJudgment, SpanQrels, read_span_qrels, write_span_qrels
from ragmetrics.errors import InputError
from ragmetrics.labeling.store import locked

__all__ = ["LABELLED_SPANS_FILE", "SpanSelections"]

LABELLED_SPANS_FILE = "labelled_spans.jsonl"


class SpanSelections:
    """Selections in passages turned into span judgments of documents and persisted on every change."""

    def __init__(
        self, path: Path, offsets: Mapping[str, tuple[str, int, int]], texts: Mapping[str, str]
    ) -> None:
        self.path = path
        self.offsets = offsets  # chunk id -> (document id, start, end)
        self.texts = texts  # chunk id -> the passage's text as shown
        self._spans: list[SpanJudgment] = []
        self._reload()

    def _reload(self) -> None:
        exists = self.path.exists() and self.path.stat().st_size > 0
        self._spans = read_span_qrels(self.path).judgments() if exists else []

    def select(self, query_id: str, chunk_id: str, start: int, end: int, grade: int) -> SpanJudgment:
        """Record that [start, end) of chunk `chunk_id`'s text answers `query_id` with `grade`; returns the
        span stored (in the document's characters)."""
        if chunk_id not in self.offsets:
            raise InputError(
                f"passage {chunk_id!r} has no place in a document (the corpus has no doc_id/start/end): "
                "a selection in it cannot become a span",
                field="chunk",
            )
        passage = self.texts[chunk_id]
        if not 0 <= start < end <= len(passage):
            raise InputError(f"selection [{start}, {end}) is not inside the passage (length {len(passage)})")
        doc_id, chunk_start, _ = self.offsets[chunk_id]
        span = SpanJudgment(
            query_id=query_id,
            doc_id=doc_id,
            start=chunk_start + start,
            end=chunk_start + end,
            grade=grade,
            text=passage[start:end],
        )
        with locked(self.path):
            self._reload()
            kept = [
                s
                for s in self._spans
                if not (
                    s.query_id == query_id
                    and s.doc_id == doc_id
                    and s.start < span.end
                    and span.start < s.end
                )
            ]
            self._spans = [*kept, span]
            write_span_qrels(self.path, SpanQrels.from_judgments(self._spans, source=str(self.path)))
        return span

    def of(self, query_id: str, chunk_id: str) -> list[dict[str, int]]:
        """The stored spans of `query_id` inside chunk `chunk_id`, in the passage's characters (for the page)."""
        if chunk_id not in self.offsets:
            return []
        doc_id, chunk_start, chunk_end = self.offsets[chunk_id]
        return [
            {
                "start": max(s.start, chunk_start) - chunk_start,
                "end": min(s.end, chunk_end) - chunk_start,
                "grade": s.grade,
            }
            for s in self._spans
            if s.query_id == query_id and s.doc_id == doc_id and s.start < chunk_end and chunk_start < s.end
        ]
