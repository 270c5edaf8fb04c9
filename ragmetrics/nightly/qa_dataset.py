"""What a loaded QA dataset holds: its validated samples, the relevance judgments and ranking they imply,
the rows it skipped and why, and the passages beside it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmetrics.errors import InputError
from ragmetrics.judge.base import RagSample

if TYPE_CHECKING:
    from ragmetrics.attacks.build import AttackSet
    from ragmetrics.nightly.traced_outputs import TracedOutputs
    from ragmetrics.retrieval.qrels import Qrels
    from ragmetrics.retrieval.run import Run


@dataclass(frozen=True)
class BadRow:
    """A row that failed validation: where (1-based row, our field, the user's column) and what was wrong."""

    row: int
    field: str
    column: str
    message: str

    def describe(self, source: str) -> str:
        column = f" (column {self.column!r})" if self.column != self.field else ""
        return f"{source}, row {self.row}, field {self.field!r}{column}: {self.message}"


@dataclass(frozen=True)
class Passage:
    id: str
    text: str
    title: str | None = None

    def as_dict(self) -> dict[str, str]:
        """The form `ragmetrics.retrievers.build_run` takes."""
        out = {"id": self.id, "text": self.text}
        if self.title is not None:
            out["title"] = self.title
        return out


@dataclass
class QADataset:
    """Validated samples plus what they imply: relevance judgments and the pipeline's own ranking."""

    source: str
    samples: list[RagSample]
    relevance: dict[str, dict[str, int]]
    retrieved: dict[str, dict[str, float]]
    fingerprint: str
    truth_fingerprint: str = ""
    """A hash of what the system is judged against (ids, questions, references, relevance judgments, languages),
    without its outputs: equal when only the answers or rankings changed, so two nights stay comparable."""
    skipped: list[BadRow] = field(default_factory=list)
    columns: dict[str, str] = field(default_factory=dict)  # our field -> the user's column
    ignored_columns: list[str] = field(default_factory=list)
    generated_ids: bool = False
    passages: dict[str, Passage] | None = None
    kept: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)
    """(row number, sample id, values) of the columns asked for by `keep` (human labels)."""
    extras: dict[str, dict[str, Any]] = field(default_factory=dict)
    """sample id -> the row's columns that map to none of our fields: passed on to the team's pipeline."""
    traced: TracedOutputs | None = None
    """What the traces measured per question, when the answers come from `dataset.traces`."""
    attacks: AttackSet | None = None
    """The attack set, when the dataset is one (`dataset.attacks`): its checks decide the attack metrics."""
    testset_folder: Path | None = None
    """The folder `ragmetrics testset` wrote, when the dataset is one (its testset.json says where the
    grades came from: `nightly.qrels_provenance`)."""

    @property
    def query_ids(self) -> list[str]:
        return [s.id for s in self.samples]

    def __iter__(self) -> Iterator[RagSample]:
        """The samples, so `evaluate_rag(read_qa(path), metrics)` reads as it says."""
        return iter(self.samples)

    def __len__(self) -> int:
        return len(self.samples)

    @property
    def has_qrels(self) -> bool:
        return bool(self.relevance)

    @property
    def unanswerable(self) -> set[str]:
        """Ids of the questions marked `answerable: false` (no document answers them)."""
        return {s.id for s in self.samples if s.answerable is False}

    def unjudged(self) -> dict[str, str]:
        """Questions no retrieval metric applies to, with why: unanswerable ones, and, in a dataset with
        relevance judgments, questions that have none (trec_eval leaves such a query out of its means)."""
        if not self.relevance:
            return {}
        from ragmetrics.judge.base import UNANSWERABLE_REASON

        attacked = self.attack_ids
        return {
            s.id: UNANSWERABLE_REASON
            if s.answerable is False
            else ATTACK_REASON
            if s.id in attacked
            else f"no relevance judgments in {self.source}"
            for s in self.samples
            if s.id not in self.relevance or s.answerable is False
        }

    @property
    def attack_ids(self) -> set[str]:
        """Ids of the attack questions of an attack set (its clean twins are not among them)."""
        return {c.id for c in self.attacks.checks} if self.attacks is not None else set()

    @property
    def has_run(self) -> bool:
        return bool(self.retrieved)

    def qrels(self) -> Qrels:
        from ragmetrics.retrieval.qrels import Qrels

        if not self.relevance:
            raise InputError("has no relevance judgments (relevant_ids)", source=self.source)
        return Qrels.from_dict(self.relevance, source=self.source)

    def run(self, name: str) -> Run:
        """The pipeline's own ranking as a Run; a sample without retrieved ids is absent from it."""
        from ragmetrics.retrieval.run import Run

        if not self.retrieved:
            raise InputError("has no retrieved ids, so it holds no run of its own", source=self.source)
        return Run.from_dict(self.retrieved, name=name, source=self.source)

    def summary(self) -> dict[str, Any]:
        """JSON-ready description for report metadata."""
        return {
            "source": self.source,
            "rows_used": len(self.samples),
            "rows_skipped": [
                {"row": b.row, "field": b.field, "column": b.column, "message": b.message}
                for b in self.skipped
            ],
            "columns": self.columns,
            "ignored_columns": self.ignored_columns,
            "generated_ids": self.generated_ids,
            "qrels_queries": len(self.relevance),
            "run_queries": len(self.retrieved),
            "passages": None if self.passages is None else len(self.passages),
            "fingerprint": self.fingerprint,
        }


ATTACK_REASON = "an attack question: scored by the attack metrics (docs/attacks.md), not the answer metrics"
