"""Span metrics: how much of the judged text a retrieval brings back, and at what price in other text.

Definitions are those of Chroma's chunking study (Smith and Troynikov, "Evaluating Chunking Strategies for
Retrieval", 2024; brandonstarxel/chunking_evaluation, MIT: `_scores_from_dataset_and_retrievals` and
`_full_precision_score`), over characters (or, with ``unit="tokens"``, over tokens of the shipped MiniLM
tokenizer: a token counts for a span or chunk it shares a character with; there a chunk meets a span only
when they share a token, since consecutive chunks always touch in tokens). For one question with relevant spans R (grade >= `level`) and
retrieved chunks C (the first k of its ranking):

- covered = the characters of R that some chunk of C holds (counted once);
- recall = covered / |R|;
- precision = covered / sum of |c| over C (a character two retrieved chunks both hold is read, and
  counted, twice);
- IoU = covered / (sum of |c| over C + the characters of R no chunk of C holds).

Best precision ("precision Ω" in the study) is the precision a chunking allows at best: retrieve exactly the
chunks that meet a relevant span, then covered / (the characters of their union + the characters of R no
chunk holds). As in the study, a chunk meets a span when their closed ranges touch, so a chunk that ends
where a span begins counts among them (and among the `chunks_needed`, which the study uses as k when it
retrieves "as many chunks as the question needs"). benchmarks/check_span_metrics_reference.py runs the
study's own functions beside these on its corpora and questions and finds them equal to 1e-12.

A question with no relevant span has no recall and is not scored (listed in `unscored`); a question the run
did not answer retrieved nothing: 0 on all three, as trec_eval scores a missing query.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ragmetrics.chunking.model import Chunk
from ragmetrics.chunking.spans import SpanQrels
from ragmetrics.chunking.units import TokenIndex
from ragmetrics.errors import InputError
from ragmetrics.schema import RunMetadata, RunResult

__all__ = [
    "BestPrecision",
    "SpanScore",
    "SpanScores",
    "best_precision",
    "covered_characters",
    "query_best_precision",
    "query_span_score",
    "ranked_chunk_ids",
    "span_scores",
]

Unit = Literal["characters", "tokens"]
"""What the span metrics count: characters (the study's code) or tokens of the shipped MiniLM tokenizer."""

Range = tuple[str, int, int]
"""(document id, start, end): a span or a chunk, [start, end) in the document's characters."""


@dataclass(frozen=True, slots=True)
class SpanScore:
    recall: float
    precision: float
    iou: float


@dataclass(frozen=True, slots=True)
class BestPrecision:
    value: float
    chunks_needed: int


@dataclass(frozen=True)
class SpanScores:
    """Per-question span scores of one run, and the questions that could not be scored."""

    per_query: dict[str, SpanScore]
    unscored: list[str]

    def mean(self, name: str) -> float:
        """The mean over scored questions of "recall", "precision" or "iou"."""
        values: list[float] = [float(getattr(score, name)) for score in self.per_query.values()]
        if not values:
            raise ValueError("no question was scored")
        return sum(values) / len(values)

    def to_run_result(self, name: str, *, k: int | None = None) -> RunResult:
        """The scores as a `RunResult` ("span_recall", "span_precision", "span_iou", with "@k" when one depth
        applies), so runs over different chunkings go through `compare_results`: the same question ids, the
        usual paired tests, corrections and gate."""
        suffix = f"@{k}" if k is not None else ""
        names = {field: f"span_{field}{suffix}" for field in ("recall", "precision", "iou")}
        result = RunResult(
            name=name,
            per_query={
                query: {names[field]: float(getattr(score, field)) for field in names}
                for query, score in self.per_query.items()
            },
            metadata=RunMetadata(
                kind="retrieval",
                metrics=list(names.values()),
                num_queries=len(self.per_query),
                extra={"unscored_queries": list(self.unscored)},
            ),
        )
        result.recompute_aggregate()
        return result


def _union_length(ranges: list[tuple[int, int]]) -> int:
    total, reach = 0, None
    for start, end in sorted(ranges):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def covered_characters(references: Sequence[Range], chunks: Sequence[Range]) -> int:
    """The characters of `references` (disjoint) that some chunk of `chunks` holds, each counted once."""
    by_doc: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for doc, start, end in references:
        by_doc[doc].append((start, end))
    pieces: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for doc, c_start, c_end in chunks:
        for r_start, r_end in by_doc.get(doc, ()):
            low, high = max(c_start, r_start), min(c_end, r_end)
            if high > low:
                pieces[doc].append((low, high))
    return sum(_union_length(ranges) for ranges in pieces.values())


def query_span_score(references: Sequence[Range], retrieved: Sequence[Range]) -> SpanScore:
    """Recall, precision and IoU of one question (module docstring); `references` disjoint and non-empty."""
    relevant = sum(end - start for _, start, end in references)
    if relevant <= 0:
        raise ValueError("a question needs at least one non-empty relevant span")
    read = sum(end - start for _, start, end in retrieved)
    covered = covered_characters(references, retrieved)
    return SpanScore(
        recall=covered / relevant,
        precision=covered / read if read else 0.0,
        iou=covered / (read + relevant - covered),
    )


def query_best_precision(
    references: Sequence[Range], chunks: Sequence[Range], *, touching: bool = True
) -> BestPrecision:
    """Best precision of one question under a chunking (module docstring); `chunks` are the chunking's
    chunks (all of them, or at least all that could meet a reference). `touching`: a chunk whose closed range
    only touches a span meets it (the study's rule, over characters); else it must share a unit with it."""
    spans_by_doc: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for doc, start, end in references:
        spans_by_doc[doc].append((start, end))
    met: set[Range] = set()  # a chunk meeting two spans is one chunk
    for doc, c_start, c_end in chunks:
        for r_start, r_end in spans_by_doc.get(doc, ()):
            # closed ranges: a chunk touching a span counts (the study's rule, characters)
            if (c_start <= r_end and r_start <= c_end) if touching else (c_start < r_end and r_start < c_end):
                met.add((doc, c_start, c_end))
                break
    if not met:
        return BestPrecision(0.0, 0)
    covered = covered_characters(references, list(met))
    relevant = sum(end - start for _, start, end in references)
    by_doc: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for doc, start, end in met:
        by_doc[doc].append((start, end))
    read = sum(_union_length(ranges) for ranges in by_doc.values())
    return BestPrecision(covered / (read + relevant - covered), len(met))


def _relevant_ranges(spans: SpanQrels, level: int, tokens: TokenIndex | None) -> dict[str, list[Range]]:
    result: dict[str, list[Range]] = {}
    for query, judgments in spans.by_query.items():
        ranges: list[Range] = []
        for s in judgments:
            if s.grade < level:
                continue
            start, end = (s.start, s.end) if tokens is None else tokens.range(s.doc_id, s.start, s.end)
            if end <= start:
                raise InputError(
                    f"span [{s.start}, {s.end}) of question {query!r} holds no token of document {s.doc_id!r}",
                    source=spans.source,
                    line=spans.line(s),
                )
            ranges.append((s.doc_id, start, end))
        result[query] = ranges
    return result


def _token_index(unit: Unit, documents: Mapping[str, str] | None) -> TokenIndex | None:
    if unit == "characters":
        return None
    if documents is None:
        raise ValueError("unit='tokens' needs the documents' texts (documents=)")
    return TokenIndex(documents)


def _in_unit(doc_id: str, start: int, end: int, tokens: TokenIndex | None) -> Range:
    return (doc_id, start, end) if tokens is None else (doc_id, *tokens.range(doc_id, start, end))


def best_precision(
    spans: SpanQrels,
    chunks: Sequence[Chunk],
    *,
    level: int = 1,
    unit: Unit = "characters",
    documents: Mapping[str, str] | None = None,
) -> dict[str, BestPrecision]:
    """Best precision and the chunks it needs, per question with a relevant span; `unit="tokens"` counts
    tokens of the shipped MiniLM tokenizer instead of characters (and needs the `documents`' texts)."""
    tokens = _token_index(unit, documents)
    by_doc: dict[str, list[Range]] = defaultdict(list)
    for chunk in chunks:
        by_doc[chunk.doc_id].append(_in_unit(chunk.doc_id, chunk.start, chunk.end, tokens))
    index = {doc: _DocChunks.of(ranges) for doc, ranges in by_doc.items()}
    result: dict[str, BestPrecision] = {}
    for query, references in _relevant_ranges(spans, level, tokens).items():
        if references:
            near = [
                c
                for doc in {d for d, _, _ in references}
                if doc in index
                for c in index[doc].near(references)
            ]
            result[query] = query_best_precision(references, near, touching=tokens is None)
    return result


@dataclass(frozen=True)
class _DocChunks:
    """One document's chunks sorted by start, with the longest one's length: the chunks that could meet a
    span are found by bisection, so a question costs its neighbourhood, not the whole corpus."""

    ranges: list[Range]
    starts: list[int]
    longest: int

    @classmethod
    def of(cls, ranges: list[Range]) -> _DocChunks:
        ordered = sorted(ranges, key=lambda r: (r[1], r[2]))
        return cls(ordered, [r[1] for r in ordered], max(r[2] - r[1] for r in ordered))

    def near(self, references: Sequence[Range]) -> list[Range]:
        doc = self.ranges[0][0]
        mine = [(start, end) for d, start, end in references if d == doc]
        low = min(start for start, _ in mine) - self.longest
        high = max(end for _, end in mine)
        return self.ranges[bisect.bisect_left(self.starts, low) : bisect.bisect_right(self.starts, high)]


def span_scores(
    spans: SpanQrels,
    chunks: Mapping[str, Chunk] | Sequence[Chunk],
    rankings: Mapping[str, Sequence[str]],
    *,
    k: int | Mapping[str, int] | None = None,
    level: int = 1,
    source: str = "run",
    unit: Unit = "characters",
    documents: Mapping[str, str] | None = None,
) -> SpanScores:
    """Recall, precision and IoU per question of a run. `rankings` maps question ids to ranked chunk ids
    (`ranked_chunk_ids(run)` turns a `Run` into one); `k` cuts each ranking (one depth, or one per question,
    e.g. each question's `chunks_needed`); unset, whole rankings count. A ranked chunk id the chunking does
    not hold is an InputError naming it and `source` (the run's file or name)."""
    tokens = _token_index(unit, documents)
    by_id = chunks if isinstance(chunks, Mapping) else {c.id: c for c in chunks}
    per_query: dict[str, SpanScore] = {}
    unscored: list[str] = []
    for query, references in _relevant_ranges(spans, level, tokens).items():
        if not references:
            unscored.append(query)
            continue
        depth = k.get(query) if isinstance(k, Mapping) else k
        ranked = list(rankings.get(query, ()))[:depth]
        retrieved: list[Range] = []
        for chunk_id in ranked:
            chunk = by_id.get(chunk_id)
            if chunk is None:
                raise InputError(
                    f"question {query!r} retrieved {chunk_id!r}, which is not a chunk of the corpus",
                    source=source,
                )
            retrieved.append(_in_unit(chunk.doc_id, chunk.start, chunk.end, tokens))
        per_query[query] = query_span_score(references, retrieved)
    return SpanScores(per_query, unscored)


def ranked_chunk_ids(run: object) -> dict[str, list[str]]:
    """A `ragmetrics.retrieval.Run`'s rankings as lists of chunk ids, best first (the run's own order:
    score descending, ties by id descending, trec_eval's rule)."""
    from ragmetrics.retrieval.run import Run

    if not isinstance(run, Run):
        raise TypeError(f"expected a Run, got {type(run).__name__}")
    return {query: list(scored) for query, scored in run.to_dict().items()}
