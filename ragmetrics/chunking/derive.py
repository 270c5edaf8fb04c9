"""Span qrels and chunk qrels turned into each other through a chunking.

The rule (docs/chunking.md, "Derived qrels"). Every character of a document has one *home* chunk: of the
chunks holding it, the one where it has the most context, i.e. the largest min(characters before it,
characters after it) in the chunk, plus 0.01 x the chunk's length (the "maximum context" rule BERT uses to
score a token that several overlapping windows hold; Devlin et al., 2019, run_squad.py); a tie goes to the
chunk starting first. Where chunks do not overlap, a character's home is simply the chunk that holds it.

- Chunk qrels -> spans: each judged chunk gives its grade to the characters whose home it is; runs of
  characters with one grade become one span. A judged chunk that is home to no character (one wholly
  inside others) cannot pass its judgment on, and is refused by name rather than dropped.
- Spans -> chunk qrels: a chunk takes the highest grade among the spans that hold at least `min_chars` of
  the characters whose home it is; a chunk no span reaches that way is unjudged.

So a chunking identical to the one chunk qrels came from gives those qrels back exactly (each chunk is home
to characters carrying exactly its own grade, and to no other judged chunk's), overlap or not; and for a
chunking without overlap the rule is the plain one: a chunk takes the best grade of the spans it overlaps.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ragmetrics.chunking.model import Chunk
from ragmetrics.chunking.spans import SpanJudgment, SpanQrels
from ragmetrics.errors import InputError
from ragmetrics.retrieval.qrels import Qrels

__all__ = ["ChunkHomes", "derive_chunk_qrels", "spans_from_chunk_qrels"]


@dataclass
class ChunkHomes:
    """The chunks of one chunking by document, and each document's home chunk per character (computed when a
    document is first asked about: only documents with judgments cost anything)."""

    by_doc: dict[str, list[Chunk]]
    _homes: dict[str, NDArray[np.int32]] = field(default_factory=dict)

    @classmethod
    def of(cls, chunks: Sequence[Chunk]) -> ChunkHomes:
        by_doc: dict[str, list[Chunk]] = defaultdict(list)
        for chunk in chunks:
            by_doc[chunk.doc_id].append(chunk)
        for doc_chunks in by_doc.values():
            doc_chunks.sort(key=lambda c: (c.start, c.end, c.id))
        return cls(dict(by_doc))

    def homes(self, doc_id: str) -> NDArray[np.int32]:
        """Per character of `doc_id` (up to its last chunk's end), the index in ``by_doc[doc_id]`` of its home
        chunk, or -1 where no chunk holds it."""
        if doc_id not in self._homes:
            chunks = self.by_doc[doc_id]
            length = max(c.end for c in chunks)
            home = np.full(length, -1, dtype=np.int32)
            best = np.full(length, -np.inf)
            for index, chunk in enumerate(chunks):
                at = np.arange(chunk.start, chunk.end)
                score = np.minimum(at - chunk.start, chunk.end - 1 - at) + 0.01 * (chunk.end - chunk.start)
                better = score > best[chunk.start : chunk.end]  # strictly: a tie stays with the earlier chunk
                home[chunk.start : chunk.end][better] = index
                best[chunk.start : chunk.end][better] = score[better]
            self._homes[doc_id] = home
        return self._homes[doc_id]


def derive_chunk_qrels(
    spans: SpanQrels, chunks: Sequence[Chunk] | ChunkHomes, *, min_chars: int = 1
) -> Qrels:
    """Graded chunk qrels for `chunks` from span judgments, by the module's rule; every query of `spans` is
    kept (with no judgments where no chunk is reached). A span on a document the chunking lacks is an
    InputError naming the span's line."""
    if min_chars < 1:
        raise ValueError("min_chars must be at least 1")
    homes = chunks if isinstance(chunks, ChunkHomes) else ChunkHomes.of(chunks)
    result: dict[str, dict[str, int]] = {}
    for query, judgments in spans.by_query.items():
        grades: dict[str, int] = {}
        for span in judgments:
            if span.doc_id not in homes.by_doc:
                raise InputError(
                    f"span on document {span.doc_id!r}, which the chunking has no chunk of",
                    source=spans.source,
                    line=spans.line(span),
                    field="doc_id",
                )
            home = homes.homes(span.doc_id)[span.start : span.end]
            indices, counts = np.unique(home[home >= 0], return_counts=True)
            doc_chunks = homes.by_doc[span.doc_id]
            for index, count in zip(indices.tolist(), counts.tolist(), strict=True):
                if count >= min_chars:
                    chunk_id = doc_chunks[index].id
                    grades[chunk_id] = max(grades.get(chunk_id, span.grade), span.grade)
        result[query] = grades
    return Qrels.from_dict(result, source=f"chunk qrels derived from {spans.source}")


def spans_from_chunk_qrels(
    qrels: Qrels | Mapping[str, Mapping[str, int]],
    chunks: Sequence[Chunk] | ChunkHomes,
    *,
    source: str = "chunk qrels",
) -> SpanQrels:
    """Span judgments from chunk qrels through the chunking that made them, by the module's rule. A judged
    chunk id the chunking lacks, or a judged chunk that is home to no character, is an InputError naming
    the query and the chunk."""
    nested = qrels.to_dict() if isinstance(qrels, Qrels) else qrels
    homes = chunks if isinstance(chunks, ChunkHomes) else ChunkHomes.of(chunks)
    where: dict[str, tuple[str, int]] = {
        c.id: (doc_id, index)
        for doc_id, doc_chunks in homes.by_doc.items()
        for index, c in enumerate(doc_chunks)
    }
    judgments: list[SpanJudgment] = []
    for query, judged in nested.items():
        per_doc: dict[str, list[tuple[NDArray[np.int64], int]]] = defaultdict(list)
        for chunk_id, grade in judged.items():
            if chunk_id not in where:
                raise InputError(
                    f"query {query!r} judges chunk {chunk_id!r}, which the chunking does not hold",
                    source=source,
                )
            doc_id, index = where[chunk_id]
            chunk = homes.by_doc[doc_id][index]
            own = np.flatnonzero(homes.homes(doc_id)[chunk.start : chunk.end] == index) + chunk.start
            if own.size == 0:
                raise InputError(
                    f"query {query!r} judges chunk {chunk_id!r}, which lies wholly inside other chunks of the "
                    "chunking: no character is its own, so its judgment cannot become a span",
                    source=source,
                )
            per_doc[doc_id].append((own, int(grade)))
        for doc_id in sorted(per_doc):
            judgments.extend(_runs(query, doc_id, per_doc[doc_id]))
    return SpanQrels.from_judgments(judgments, source=f"spans from {source}")


def _runs(query: str, doc_id: str, pieces: list[tuple[NDArray[np.int64], int]]) -> list[SpanJudgment]:
    """Characters (disjoint: each has one home) with their grades, as maximal runs of one grade."""
    positions = np.concatenate([p for p, _ in pieces])
    grades = np.concatenate([np.full(p.size, g, dtype=np.int64) for p, g in pieces])
    order = np.argsort(positions, kind="stable")
    positions, grades = positions[order], grades[order]
    breaks = np.flatnonzero((np.diff(positions) != 1) | (np.diff(grades) != 0)) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [positions.size]])
    return [
        SpanJudgment(
            query_id=query,
            doc_id=doc_id,
            start=int(positions[a]),
            end=int(positions[b - 1]) + 1,
            grade=int(grades[a]),
        )
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True)
    ]
