"""What a test-set build returns: the kept items with graded qrels (`TestSet`), the drafts left out and why
(`FilterRecord`, one of `FILTERS`), and each item's relevant ids and grades from the qrels (`attach_qrels`).

Why its own module: the result is read by the writer, the review and the evidence steps, which need none of
the build's machinery."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmetrics.testset.corpus import Corpus
from ragmetrics.testset.settings import KINDS, Grade, TestItem, TestsetSettings

__all__ = ["FILTERS", "FilterRecord", "TestSet", "attach_qrels"]


FILTERS = (
    "near_duplicate",
    "copies_chunk",
    "pair_cooccurs",
    "not_answered",
    "unsupported_reference",
    "answered_anyway",
    "generation_failed",
)


@dataclass
class FilterRecord:
    """A draft left out, why, and the evidence (the closer question, the copied run, the judge's grade)."""

    filter: str
    kind: str
    question: str
    source_ids: list[str]
    detail: str


@dataclass
class TestSet:
    """A built test collection: the kept items, graded qrels with origins, and the build's own account."""

    __test__ = False  # not a pytest test class, whatever its name

    items: list[TestItem]
    grades: list[Grade]
    settings: TestsetSettings
    corpus_source: str
    generator: str
    n_chunks: int
    eligible_chunks: int
    skipped_chunks: dict[str, int]
    skipped_examples: list[dict[str, Any]]
    coverage: dict[str, Any]
    groups: list[dict[str, Any]]
    filtered: list[FilterRecord]
    drafts: int
    pool: dict[str, Any] | None = None
    judge: str | None = None
    seconds: float = 0.0
    review: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    corpus: Corpus | None = None
    """The corpus it was built from (not written out): `add_pool` reads pooled texts from it."""
    corpus_path: str | None = None
    """"builtin", or the corpus file's absolute path, so a nightly config finds its passages."""
    duplicate_groups: list[list[str]] = field(default_factory=list)
    """Chunks with the same text, whose grades are shared (`testset.duplicates`)."""

    def share_duplicates(self) -> None:
        """Make each question's grades equal across copies of the same text, and its qrels follow."""
        from ragmetrics.testset.duplicates import share_duplicate_grades

        if self.duplicate_groups:
            self.grades = share_duplicate_grades(self.grades, self.duplicate_groups)
            attach_qrels(self.items, self.grades)

    def qrels(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for g in self.grades:
            out.setdefault(g.query_id, {})[g.doc_id] = g.grade
        return out

    def filter_counts(self) -> dict[str, int]:
        counts = Counter(r.filter for r in self.filtered)
        return {name: counts.get(name, 0) for name in FILTERS}

    def kind_counts(self) -> dict[str, int]:
        counts = Counter(i.kind for i in self.items)
        return {k: counts.get(k, 0) for k in KINDS}

    def language_counts(self) -> dict[str, int]:
        return dict(Counter(i.language for i in self.items).most_common())

    def origin_counts(self) -> dict[str, int]:
        counts = Counter(g.origin for g in self.grades if g.grade > 0)
        return {o: counts.get(o, 0) for o in ("source", "judge", "person")}


def attach_qrels(items: Sequence[TestItem], grades: Sequence[Grade]) -> None:
    """Each answerable item's relevant_ids/grades from `grades`, best first (what questions.jsonl carries)."""
    by_query: dict[str, list[Grade]] = {}
    for g in grades:
        by_query.setdefault(g.query_id, []).append(g)
    for item in items:
        if not item.answerable:  # no qrels at all, so retrieval metrics leave it out instead of scoring 0
            item.relevant_ids = item.relevant_grades = None
            continue
        own = sorted(by_query.get(item.id, []), key=lambda g: (-g.grade, g.doc_id))
        item.relevant_ids = [g.doc_id for g in own]
        item.relevant_grades = [g.grade for g in own]
