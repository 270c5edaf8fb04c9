"""Labelling a test set (`ragmetrics label DIR --metric question|qrels`): people check what was generated.

Two passes, each the labelling page's usual loop (one item at a time, what the build decided shown only after
the person has answered, so it cannot anchor them):

- `question`: is this a sensible question that its source passages answer (reference shown)? Yes, partly or
  no; the build's own verdict is "yes" (it kept the question).
- `qrels`: how relevant is this chunk to this question (0-3, the `passage_relevance` scale)? Every grade of
  grades.tsv is offered, whatever its origin (source, judge or an earlier person), with the grade it has.

Labels go to DIR/labels.jsonl (or --labels); `review_testset` then applies them (testset.review).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragmetrics.errors import InputError
from ragmetrics.judge.base import RagSample
from ragmetrics.labeling.questions import GRADES, YES_PARTLY_NO, Question
from ragmetrics.labeling.selection import labelling_order
from ragmetrics.labeling.session import DEFAULT_TARGET, LabelSession, Verdict
from ragmetrics.labeling.spans import LABELLED_SPANS_FILE, SpanSelections, check_grade
from ragmetrics.labeling.store import LabelStore
from ragmetrics.testset.corpus import open_corpus
from ragmetrics.testset.output import read_grades, read_items, read_manifest
from ragmetrics.testset.review import PAIR_SEPARATOR, QRELS_METRIC, QUESTION_METRIC, RUN

__all__ = ["TestsetLabelSession", "default_labels_path"]

KINDS = {"question": QUESTION_METRIC, "qrels": QRELS_METRIC}


def default_labels_path(folder: Path) -> Path:
    return folder / "labels.jsonl"


class TestsetLabelSession(LabelSession):
    """A `LabelSession` over a test-set folder instead of a report (module docstring)."""

    __test__ = False

    def __init__(
        self, folder: Path, what: str, labels_path: Path, *, target: int | None = None, seed: int = 0
    ) -> None:
        if what not in KINDS:
            raise InputError(
                f"a test set is labelled by 'question' or 'qrels', not {what!r}", field="--metric"
            )
        manifest = read_manifest(folder)
        items = {i.id: i for i in read_items(folder)}
        corpus = open_corpus(manifest.get("corpus_path") or "")
        self.run = RUN
        self.metric = KINDS[what]
        self.source = str(folder)
        self._verdicts: dict[str, Verdict] = {}
        self.samples: dict[str, RagSample] = {}
        self.spans: SpanSelections | None = None  # the qrels pass over a corpus with offsets (labeling.spans)
        if what == "question":
            self.question = Question(
                self.metric,
                "Is this a sensible question that these passages answer (the reference answer is shown)?",
                ("question", "contexts", "reference"),
                YES_PARTLY_NO,
            )
            wanted = {sid for i in items.values() for sid in i.source_ids}
            texts = {cid: c.text for cid, c in corpus.texts_of(wanted).items()}
            for item in items.values():
                self.samples[item.id] = RagSample(
                    id=item.id,
                    question=item.question,
                    reference=item.reference,
                    contexts=[texts[s] for s in item.source_ids if s in texts] or None,
                )
                self._verdicts[item.id] = Verdict(1.0, f"kept by the build ({item.kind}, {item.generator})")
        else:
            self.question = Question(
                self.metric,
                "How relevant is this passage to the question?",
                ("question", "contexts"),
                GRADES,
            )
            grades = [g for g in read_grades(folder) if g.query_id in items]
            texts = {cid: c.text for cid, c in corpus.texts_of({g.doc_id for g in grades}).items()}
            top = max(1, int(manifest.get("settings", {}).get("source_grade", 2)))
            for grade in grades:
                if grade.doc_id not in texts:
                    continue
                key = f"{grade.query_id}{PAIR_SEPARATOR}{grade.doc_id}"
                self.samples[key] = RagSample(
                    id=key, question=items[grade.query_id].question, contexts=[texts[grade.doc_id]]
                )
                reason = f"{grade.origin} grade {grade.grade} of {top}" + (
                    f": {grade.reason}" if grade.reason else ""
                )
                self._verdicts[key] = Verdict(min(1.0, grade.grade / top), reason)
            offsets = {cid: (doc, s, e) for cid, doc, s, e, _ in corpus.offset_rows() if cid in texts}
            if offsets:
                self.spans = SpanSelections(folder / LABELLED_SPANS_FILE, offsets, texts)
        if not self._verdicts:
            raise InputError(f"nothing to label: the test set has no {what}", source=str(folder))
        self.order = labelling_order({k: v.score for k, v in self._verdicts.items()}, seed=seed)
        self.store = LabelStore(labels_path)
        self.target = min(target if target is not None else DEFAULT_TARGET, len(self.order))

    def item(self, position: int) -> dict[str, Any]:
        """The page's item; in the qrels pass over a corpus with offsets, also the spans already selected in
        the passage (passage characters), so the page can mark them and offer selecting more."""
        shown = super().item(position)
        if self.spans is not None:
            query_id, _, chunk_id = self.order[position].partition(PAIR_SEPARATOR)
            shown["spans"] = self.spans.of(query_id, chunk_id) if chunk_id in self.spans.offsets else None
        return shown

    def select_span(self, position: int, start: int, end: int, grade: int) -> dict[str, object]:
        """The person selected [start, end) of the passage at `position` as answering text with `grade`:
        stored as a span of the passage's document (labeling.spans); returns it in both coordinates."""
        if self.spans is None:
            raise InputError("spans are selected in the qrels pass over a corpus with doc_id/start/end")
        if not 0 <= position < len(self.order):
            raise IndexError(f"no sample at position {position}")
        check_grade(grade)
        query_id, _, chunk_id = self.order[position].partition(PAIR_SEPARATOR)
        span = self.spans.select(query_id, chunk_id, start, end, grade)
        return {
            "doc_id": span.doc_id,
            "start": span.start,
            "end": span.end,
            "spans": self.spans.of(query_id, chunk_id),
        }
