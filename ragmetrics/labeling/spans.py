"""Spans people select on the labelling page: the answering text of a passage, kept as a span of its document.

When the passages shown say where they lie in their documents (a corpus `ragmetrics chunk split` wrote), a
person labelling can select the text of a passage that answers the question. The selection, given in the
passage's characters, is stored in the document's characters (chunk start + offset) as a span judgment in
the span qrels format of `ragmetrics.chunking.spans`, so it judges every later chunking of the documents,
not only this chunk.

This module holds what one person's selections and a team's (`labeling.team_spans`) share: turning a
selection into a span of the document (`span_of_selection`, its grade on the 0-3 scale: `check_grade`), the rule that one character has one grade per
question (`replace_overlapped`: a new selection replaces the spans of the same question on the same document
that it overlaps, a person correcting a selection, and only those) and the spans shown in a passage
(`spans_in_passage`). `SpanSelections` is one person's file, DIR/labelled_spans.jsonl of a test set's qrels
pass: rewritten whole through a temporary file and an atomic rename under the labels' lock, like the labels
file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TypeVar

from ragmetrics.chunking.spans import SpanJudgment, SpanQrels, read_span_qrels, write_span_qrels
from ragmetrics.errors import InputError
from ragmetrics.labeling.questions import GRADES
from ragmetrics.labeling.store import locked

__all__ = [
    "LABELLED_SPANS_FILE",
    "Place",
    "SpanSelections",
    "check_grade",
    "replace_overlapped",
    "span_of_selection",
    "spans_in_passage",
]

LABELLED_SPANS_FILE = "labelled_spans.jsonl"

SpanT = TypeVar("SpanT", bound=SpanJudgment)

Place = tuple[str, int, int]
"""Where a passage lies: (document id, start, end) in the document's characters."""


def check_grade(grade: int) -> None:
    """A span's grade is one of the 0-3 scale the qrels use (`questions.GRADES`)."""
    if grade not in {int(c.key) for c in GRADES}:
        raise InputError(f"grade {grade} is not one of the offered grades (0-3)", field="grade")


def span_of_selection(
    query_id: str, place: Place, passage: str, start: int, end: int, grade: int
) -> SpanJudgment:
    """The span of the document that [start, end) of `passage` (lying at `place`) is, quoting its text; an
    InputError naming the field when the selection is not inside the passage or the grade is off the scale."""
    check_grade(grade)
    if not 0 <= start < end <= len(passage):
        field = "start" if not 0 <= start < len(passage) else "end"
        raise InputError(
            f"selection [{start}, {end}) is not inside the passage (length {len(passage)}): 0 <= start < end "
            f"<= {len(passage)}",
            field=field,
        )
    doc_id, chunk_start, _ = place
    return SpanJudgment(
        query_id=query_id,
        doc_id=doc_id,
        start=chunk_start + start,
        end=chunk_start + end,
        grade=grade,
        text=passage[start:end],
    )


def _overlaps(a: SpanJudgment, b: SpanJudgment) -> bool:
    return a.query_id == b.query_id and a.doc_id == b.doc_id and a.start < b.end and b.start < a.end


def replace_overlapped(spans: Iterable[SpanT], new: SpanT) -> list[SpanT]:
    """`spans` with `new` in place of those of its question on its document that it overlaps."""
    return [*(s for s in spans if not _overlaps(s, new)), new]


def spans_in_passage(spans: Iterable[SpanJudgment], query_id: str, place: Place) -> list[dict[str, int]]:
    """The spans of `query_id` that reach into the passage at `place`, in the passage's characters (what the
    page marks)."""
    doc_id, chunk_start, chunk_end = place
    return [
        {
            "start": max(s.start, chunk_start) - chunk_start,
            "end": min(s.end, chunk_end) - chunk_start,
            "grade": s.grade,
        }
        for s in spans
        if s.query_id == query_id and s.doc_id == doc_id and s.start < chunk_end and chunk_start < s.end
    ]


class SpanSelections:
    """One person's selections in passages turned into span judgments of documents, persisted on every
    change."""

    def __init__(self, path: Path, offsets: Mapping[str, Place], texts: Mapping[str, str]) -> None:
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
        span = span_of_selection(query_id, self.offsets[chunk_id], self.texts[chunk_id], start, end, grade)
        with locked(self.path):
            self._reload()
            self._spans = replace_overlapped(self._spans, span)
            write_span_qrels(self.path, SpanQrels.from_judgments(self._spans, source=str(self.path)))
        return span

    def of(self, query_id: str, chunk_id: str) -> list[dict[str, int]]:
        """The stored spans of `query_id` inside chunk `chunk_id`, in the passage's characters (for the page)."""
        if chunk_id not in self.offsets:
            return []
        return spans_in_passage(self._spans, query_id, self.offsets[chunk_id])
