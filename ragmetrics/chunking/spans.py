"""Span qrels: a judgment is (query id, document id, start, end, grade) over a document's characters.

Why spans: a chunk id is void once the chunker changes; a span of the document is not. Spans come from the
test-set builder (the evidence each question was written from), from people on the labelling page (the text
they select) and from chunk qrels converted through the chunking that made them
(`ragmetrics.chunking.derive.spans_from_chunk_qrels`).

On disk: JSON Lines, one span a line, ``{"query_id", "doc_id", "start", "end", "grade"}`` and optionally
``"text"`` (checked to be the document's text at [start, end) when the documents are known). Within one
query, spans on the same document must not overlap: one character has one grade per question.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, model_validator

from ragmetrics._jsonl import validated_jsonl
from ragmetrics._textfile import write_atomic
from ragmetrics.errors import InputError

__all__ = ["SpanJudgment", "SpanQrels", "read_span_qrels", "write_span_qrels"]


class SpanJudgment(BaseModel):
    """One judged span: the characters [start, end) of document `doc_id` have `grade` for `query_id`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query_id: StrictStr = Field(min_length=1)
    doc_id: StrictStr = Field(min_length=1)
    start: StrictInt = Field(ge=0)
    end: StrictInt
    grade: StrictInt = 1
    text: StrictStr | None = None

    @model_validator(mode="after")
    def _ordered(self) -> SpanJudgment:
        if self.end <= self.start:
            raise ValueError(f"end ({self.end}) must be greater than start ({self.start})")
        if self.text is not None and len(self.text) != self.end - self.start:
            raise ValueError(f"text has {len(self.text)} characters, the span {self.end - self.start}")
        return self


@dataclass(frozen=True)
class SpanQrels:
    """Span judgments per query, each query's spans sorted by (document, start); `lines` remembers the file
    line of each span read from disk, so a later check (against documents or a chunking) can name it."""

    by_query: dict[str, list[SpanJudgment]]
    source: str = "span qrels"
    lines: Mapping[int, int] | None = None  # id(span) -> its file line

    @classmethod
    def from_judgments(
        cls,
        judgments: Iterable[SpanJudgment],
        *,
        source: str = "span qrels",
        lines: Iterable[int] | None = None,
    ) -> SpanQrels:
        """Grouped by query and checked: spans of one query on one document must not overlap."""
        items = list(judgments)
        numbers = list(lines) if lines is not None else None
        by_query: dict[str, list[tuple[SpanJudgment, int | None]]] = {}
        for index, item in enumerate(items):
            by_query.setdefault(item.query_id, []).append((item, numbers[index] if numbers else None))
        for pairs in by_query.values():
            pairs.sort(key=lambda pair: (pair[0].doc_id, pair[0].start, pair[0].end))
            for (before, before_line), (after, after_line) in itertools.pairwise(pairs):
                if before.doc_id == after.doc_id and after.start < before.end:
                    raise InputError(
                        f"span [{after.start}, {after.end}) of query {after.query_id!r} on document "
                        f"{after.doc_id!r} overlaps [{before.start}, {before.end})"
                        + (f" (line {before_line})" if before_line is not None else ""),
                        source=source,
                        line=after_line,
                    )
        line_of = (
            {id(span): line for pairs in by_query.values() for span, line in pairs if line is not None}
            if numbers is not None
            else None
        )
        return cls({q: [span for span, _ in pairs] for q, pairs in by_query.items()}, source, line_of)

    @classmethod
    def from_dicts(cls, rows: Iterable[Mapping[str, object]], *, source: str = "span qrels") -> SpanQrels:
        """From mappings with the file's keys (row numbers, 1-based, name a bad one)."""
        from pydantic import ValidationError

        judgments: list[SpanJudgment] = []
        numbers: list[int] = []
        for number, row in enumerate(rows, start=1):
            try:
                judgments.append(SpanJudgment.model_validate(row))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(part) for part in first["loc"])
                raise InputError(
                    f"not a span judgment: {where + ': ' if where else ''}{first['msg']}",
                    source=source,
                    line=number,
                ) from None
            numbers.append(number)
        return cls.from_judgments(judgments, source=source, lines=numbers)

    def __len__(self) -> int:
        return len(self.by_query)

    def judgments(self) -> list[SpanJudgment]:
        """Every span, queries in their first-seen order."""
        return [span for spans in self.by_query.values() for span in spans]

    def line(self, span: SpanJudgment) -> int | None:
        return self.lines.get(id(span)) if self.lines is not None else None

    def check_documents(self, documents: Mapping[str, str] | Mapping[str, int]) -> None:
        """Every span on a known document, inside it, and (where it quotes it) on its exact text.
        `documents` maps ids to texts, or to lengths where only the extent is known (a chunk corpus: the end
        of a document's last chunk)."""
        for span in self.judgments():
            if span.doc_id not in documents:
                self._fail(span, f"document {span.doc_id!r} is not among the documents", "doc_id")
            held = documents[span.doc_id]
            size = held if isinstance(held, int) else len(held)
            if span.end > size:
                end = "document's end" if isinstance(held, str) else "end of the document's last chunk"
                self._fail(span, f"span [{span.start}, {span.end}) lies beyond the {end} ({size})", "end")
            if isinstance(held, str) and span.text is not None and held[span.start : span.end] != span.text:
                self._fail(span, f"text is not the document's text at [{span.start}, {span.end})", "text")

    def _fail(self, span: SpanJudgment, what: str, field: str) -> None:
        raise InputError(what, source=self.source, line=self.line(span), field=field)


def read_span_qrels(
    path: Path | str, documents: Mapping[str, str] | Mapping[str, int] | None = None
) -> SpanQrels:
    """Span qrels from JSON Lines; with `documents`, each span is checked against them. Every fault (a bad
    row, overlapping spans, a span past its document's end or on a missing document) is an InputError
    naming the file and line."""
    judgments: list[SpanJudgment] = []
    numbers: list[int] = []
    for line, judgment in validated_jsonl(Path(path), SpanJudgment, "a span judgment"):
        judgments.append(judgment)
        numbers.append(line)
    if not judgments:
        raise InputError("no span judgments", source=str(path))
    spans = SpanQrels.from_judgments(judgments, source=str(path), lines=numbers)
    if documents is not None:
        spans.check_documents(documents)
    return spans


def write_span_qrels(path: Path | str, spans: SpanQrels) -> None:
    """JSON Lines, one span a line, written atomically."""
    lines = [json.dumps(span.model_dump(exclude_none=True), ensure_ascii=False) for span in spans.judgments()]
    write_atomic(Path(path), "\n".join(lines) + "\n")
