"""The sufficient-context breakdown as a report stores it (`NightlyRun.sufficiency`): per run, the paper's six
cells with counts and Wilson intervals; per compared pair, the paired changes with exact McNemar p and the
sentences that say where a drop comes from.

Part of the schema floor, apart from schema_nightly.py so that it only gains its seam field: the judge
labels each question (`judge.sufficiency`), `comparison.sufficiency` computes these figures, the nightly job
stores them, and every renderer only reads them (Joren et al., ICLR 2025, arXiv 2411.06037).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "OUTCOMES",
    "Outcome",
    "RunSufficiency",
    "SufficiencyCell",
    "SufficiencyCellChange",
    "SufficiencyPair",
    "SufficiencySection",
]

Outcome = Literal["correct", "hallucinated", "abstained"]
OUTCOMES: tuple[Outcome, ...] = ("correct", "hallucinated", "abstained")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class SufficiencyCell(_Model):
    """One cell of a run's breakdown: its count, its share of the rated questions and that share's interval."""

    sufficient: bool
    outcome: Outcome
    count: int
    share: float | None = Field(description="count / rated questions; None when none was rated")
    low: float | None
    high: float | None


class RunSufficiency(_Model):
    """One run's breakdown: sufficient / insufficient context crossed with correct / hallucinated / abstained."""

    run: str
    answer_metric: str = Field(description="the answer metric deciding 'correct'")
    threshold: float = Field(description="an answer is correct when its answer metric reaches this")
    confidence: float
    rated: int = Field(description="questions with both a sufficiency rating and an answer score")
    sufficient: int = Field(description="rated questions whose contexts were rated sufficient")
    sufficient_share: float | None
    sufficient_low: float | None
    sufficient_high: float | None
    cells: list[SufficiencyCell]
    unrated: dict[str, str] = Field(
        default_factory=dict, description="question id -> why it is in no cell (a failure, not applicable)"
    )


class SufficiencyCellChange(_Model):
    """One cell across two runs on the questions both rated: counts, questions that left and entered it."""

    sufficient: bool
    outcome: Outcome
    count_a: int
    count_b: int
    left: int = Field(description="questions in this cell in run A and not in run B")
    entered: int = Field(description="questions in this cell in run B and not in run A")
    p_value: float = Field(description="exact McNemar p of left against entered")


class SufficiencyPair(_Model):
    """Run B against run A on the questions both rated: where answers were lost, and whether retrieval
    (sufficiency) or generation (answers despite sufficient context) lost them."""

    run_a: str
    run_b: str
    paired: int = Field(description="questions rated in both runs; the comparison reads only these")
    correct_a: int
    correct_b: int
    correct_p: float = Field(description="exact McNemar p of the correct answers")
    sufficient_a: int
    sufficient_b: int
    lost: int = Field(description="questions sufficient in A, insufficient in B")
    gained: int = Field(description="questions insufficient in A, sufficient in B")
    p_value: float = Field(description="exact McNemar p of lost against gained")
    cells: list[SufficiencyCellChange]
    both_sufficient: int = Field(description="questions whose contexts were sufficient in both runs")
    generation: list[SufficiencyCellChange] = Field(
        description="the outcomes on the questions sufficient in both runs: what generation changed, apart from "
        "what retrieval moved in or out of sufficiency"
    )
    not_paired: list[str] = Field(default_factory=list, description="question ids not rated in both runs")
    lines: list[str] = Field(description="the report's sentences: answers, then retrieval, then generation")


class SufficiencySection(_Model):
    """The night's breakdowns: every run with `context_sufficiency` and an answer score, and its pairs."""

    judge: str = Field(description="who rated sufficiency: the LLM judge, or the local judge's proxy")
    runs: list[RunSufficiency] = Field(default_factory=list)
    pairs: list[SufficiencyPair] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="runs left out of the breakdown, and why")
