"""Spans a team marks in a labelling queue (labeling.team): stored with their labeller, merged into one set of
span qrels, and the people's agreement on them.

**Stored.** Each selection is a span of a document (labeling.spans) with its labeller, one JSON line each,
in `<labels>.spans.jsonl` beside the labels file: ``{"labeller", "query_id", "doc_id", "start", "end",
"grade", "text"}``. As with the labels, every change is made under the file's lock: the file is read again,
the one change applied, and the whole file replaced atomically, so people marking at once never lose one
another's spans and a killed server leaves the last complete file. One character has one grade per question
per person: a person's new span replaces the spans of theirs it overlaps (a corrected selection), never
another person's.

**Merged** (`merged`), one grade per character per question, as span qrels (`ragmetrics.chunking.spans`, the
format `ragmetrics chunk qrels/score` read, so chunk qrels follow for any chunking):

- where the adjudicator marked spans for a question, theirs decide it (as `human_labels: {adjudication:
  <name>}` makes their label decide);
- otherwise each character takes the lower median of the grades given to it by the people who marked spans
  for that question, a person who left it unmarked counting lowest: the highest grade that more than half of
  them gave it or a higher one. Text only half of them marked (one of two) is left out.

**Agreement** (`agreement`): on each question two or more people marked relevant spans (grade >= 1) for,
the intersection over union of their characters (`chunking.span_metrics.query_span_score`'s IoU, one
definition), averaged over the pairs of people; and the mean over those questions.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from pathlib import Path
from statistics import fmean
from typing import Any

from pydantic import Field, StrictStr

from ragmetrics._jsonl import validated_jsonl
from ragmetrics._textfile import write_atomic
from ragmetrics.chunking.span_metrics import query_span_score
from ragmetrics.chunking.spans import SpanJudgment, SpanQrels, write_span_qrels
from ragmetrics.labeling.spans import replace_overlapped
from ragmetrics.labeling.store import locked

__all__ = ["LabelledSpan", "TeamSpans", "export_paths", "team_spans_path"]


class LabelledSpan(SpanJudgment):
    """A span judgment and the person who made it."""

    labeller: StrictStr = Field(min_length=1)

    def judgment(self) -> SpanJudgment:
        return SpanJudgment.model_validate(self.model_dump(exclude={"labeller"}))


def team_spans_path(labels: Path) -> Path:
    """Where a team's spans go: beside the labels file (`human_labels.jsonl` -> `human_labels.spans.jsonl`)."""
    return labels.with_name(f"{labels.stem}.spans.jsonl")


def export_paths(labels: Path) -> tuple[Path, Path]:
    """Where a queue's merged span qrels and their agreement go, beside the labels file
    (`human_labels.span_qrels.jsonl`, `human_labels.span_agreement.json`)."""
    return labels.with_name(f"{labels.stem}.span_qrels.jsonl"), labels.with_name(f"{labels.stem}.span_agreement.json")


class TeamSpans:
    """The spans of a team queue, by labeller, persisted on every change (module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> list[LabelledSpan]:
        """The file's spans, each row checked and each person's spans checked not to overlap (a damaged or
        hand-edited file is an InputError naming its line, never a silent fresh start)."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return []
        rows = list(validated_jsonl(self.path, LabelledSpan, "a labelled span"))
        for who in {span.labeller for _, span in rows}:
            theirs = [(line, span) for line, span in rows if span.labeller == who]
            SpanQrels.from_judgments([s for _, s in theirs], source=str(self.path), lines=[n for n, _ in theirs])
        return [span for _, span in rows]

    def check(self) -> None:
        """Read the file now, so a damaged one stops the queue before anyone labels."""
        with locked(self.path):
            self._read()

    def add(self, labeller: str, span: SpanJudgment) -> list[SpanJudgment]:
        """Store `span` as `labeller`'s (replacing theirs it overlaps); returns their spans of its question."""
        new = LabelledSpan.model_validate({**span.model_dump(), "labeller": labeller})
        with locked(self.path):
            stored = self._read()
            theirs = [s for s in stored if s.labeller == labeller]
            others = [s for s in stored if s.labeller != labeller]
            kept = replace_overlapped(theirs, new)
            SpanQrels.from_judgments(kept, source=str(self.path))  # one grade per character: checked again
            rows = [*others, *kept]
            write_atomic(self.path, "".join(json.dumps(r.model_dump(exclude_none=True), ensure_ascii=False)
                                            + "\n" for r in rows))  # fmt: skip
        return [s.judgment() for s in kept if s.query_id == span.query_id]

    def by_labeller(self, query_id: str | None = None) -> dict[str, list[SpanJudgment]]:
        """Labeller -> their spans (of `query_id`, or all), as the file holds them now."""
        with locked(self.path):
            stored = self._read()
        out: dict[str, list[SpanJudgment]] = {}
        for span in stored:
            if query_id is None or span.query_id == query_id:
                out.setdefault(span.labeller, []).append(span.judgment())
        return out

    def merged(self, adjudicator: str | None = None) -> SpanQrels | None:
        """One set of span qrels from everyone's spans (module docstring); None when nobody marked any."""
        people = self.by_labeller()
        by_query: dict[str, dict[str, list[SpanJudgment]]] = {}
        for who, spans in people.items():
            for span in spans:
                by_query.setdefault(span.query_id, {}).setdefault(who, []).append(span)
        out: list[SpanJudgment] = []
        for marked in by_query.values():
            if adjudicator is not None and adjudicator in marked:
                out.extend(marked[adjudicator])
            else:
                out.extend(_lower_median(list(marked.values())))
        return SpanQrels.from_judgments(out, source=str(self.path)) if out else None

    def agreement(self, level: int = 1) -> dict[str, Any]:
        """Character IoU between people on the questions two or more marked relevant spans for."""
        per_question: dict[str, float] = {}
        pairs = 0
        by_query: dict[str, dict[str, list[tuple[str, int, int]]]] = {}
        for who, spans in self.by_labeller().items():
            for span in spans:
                if span.grade >= level:
                    by_query.setdefault(span.query_id, {}).setdefault(who, []).append(
                        (span.doc_id, span.start, span.end)
                    )
        for query_id, marked in sorted(by_query.items()):
            if len(marked) < 2:
                continue
            ious = [query_span_score(a, b).iou for a, b in itertools.combinations(marked.values(), 2)]
            pairs += len(ious)
            per_question[query_id] = round(fmean(ious), 6)
        return {
            "questions": len(per_question),
            "pairs": pairs,
            "mean_iou": round(fmean(per_question.values()), 6) if per_question else None,
            "per_question": per_question,
        }

    def export(self, qrels_path: Path, agreement_path: Path, adjudicator: str | None = None) -> dict[str, Any]:
        """Write the merged span qrels (if any span was marked) and the agreement; returns the summary."""
        merged = self.merged(adjudicator)
        summary: dict[str, Any] = {"span_qrels": None, "spans": 0, "agreement": self.agreement()}
        if merged is not None:
            write_span_qrels(qrels_path, merged)
            summary.update(span_qrels=str(qrels_path), spans=len(merged.judgments()))
        write_atomic(agreement_path, json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
        return summary


def _lower_median(people: Iterable[list[SpanJudgment]]) -> list[SpanJudgment]:
    """One question's spans from several people's: each character's lower median grade, unmarked lowest."""
    marked = list(people)
    needed = len(marked) // 2 + 1  # more than half of them
    out: list[SpanJudgment] = []
    docs = sorted({s.doc_id for spans in marked for s in spans})
    for doc in docs:
        spans = [[s for s in theirs if s.doc_id == doc] for theirs in marked]
        cuts = sorted({p for theirs in spans for s in theirs for p in (s.start, s.end)})
        pieces: list[tuple[int, int, int, str | None]] = []
        for low, high in itertools.pairwise(cuts):
            covering = [next((s for s in theirs if s.start <= low and high <= s.end), None) for theirs in spans]
            grades = sorted((s.grade for s in covering if s is not None), reverse=True)
            if len(grades) < needed:
                continue
            grade = grades[needed - 1]  # `needed` of them gave it this grade or a higher one
            source = next(s for s in covering if s is not None and s.grade >= grade)
            text = source.text[low - source.start : high - source.start] if source.text is not None else None
            if pieces and pieces[-1][1] == low and pieces[-1][2] == grade:
                start, _, _, before = pieces.pop()
                text = before + text if before is not None and text is not None else None
                low = start
            pieces.append((low, high, grade, text))
        query_id = next(s.query_id for theirs in spans for s in theirs)
        out.extend(SpanJudgment(query_id=query_id, doc_id=doc, start=a, end=b, grade=g, text=t)
                   for a, b, g, t in pieces)  # fmt: skip
    return out
