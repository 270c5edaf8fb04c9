"""What a test-set build is asked to do (the `testset:` section of a config, or keyword arguments in Python),
and the items and grades it produces."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ragmetrics.judge.text.language import check_language_code

__all__ = ["KINDS", "Grade", "TestItem", "TestsetSettings"]

KINDS = ("factoid", "multi_chunk", "keyword", "comparison", "unanswerable")
DEFAULT_KINDS = {"factoid": 0.4, "multi_chunk": 0.15, "keyword": 0.25, "comparison": 0.1, "unanswerable": 0.1}
Origin = Literal["source", "judge", "person"]


class TestsetSettings(BaseModel):
    """Every knob of a build; the defaults are what `ragmetrics testset` uses without a config."""

    __test__ = False  # not a pytest test class, whatever its name

    model_config = ConfigDict(extra="forbid")

    size: int = Field(default=100, ge=1, le=1_000_000, description="questions to keep")
    seed: int = Field(default=0, description="seed of every random choice: the same seed, the same test set")
    kinds: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_KINDS),
        description="share of each question kind (normalised): factoid, multi_chunk, keyword, comparison, "
        "unanswerable",
    )
    generator: Literal["auto", "offline", "llm"] = Field(
        default="auto", description="auto: the LLM when the judge has an endpoint, else offline"
    )
    language: str | None = Field(
        default=None, description="ISO 639-1 code of every chunk; unset: detected per chunk"
    )
    source_grade: int = Field(
        default=2, ge=1, le=100, description="qrels grade of a question's source chunks"
    )
    pool_depth: int = Field(
        default=10, ge=1, le=1000, description="top-k of each pooled run the judge grades"
    )
    pool_judge: Literal["judge", "e5"] = Field(
        default="judge",
        description="who grades the pool when the judge is the local one: 'judge' (it, as configured: MiniLM for "
        "English, the model the dense and embedding-rerank retrievers rank with) or 'e5' (the local judge on "
        "multilingual-e5-small, a model none of the reference retrievers uses); an LLM judge always grades it",
    )
    max_similarity: float = Field(
        default=0.85,
        gt=0.0,
        le=1.0,
        description="near-duplicate filter: highest trigram cosine between kept questions",
    )
    copy_run: int = Field(
        default=6, ge=2, description="copy filter: a run of this many of the chunk's words in a row is a copy"
    )
    judge_checks: bool = Field(
        default=True,
        description="ask the judge whether the source answers the question and supports the reference",
    )
    min_grade: int = Field(
        default=1,
        ge=0,
        le=3,
        description="answerability check: lowest passage_relevance grade (0-3) of the source for the question",
    )
    min_support: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="support check: lowest faithfulness of the reference to its sources",
    )
    min_terms: int = Field(
        default=5, ge=1, description="chunks with fewer distinct content terms are skipped"
    )
    boilerplate_repeats: int = Field(
        default=3, ge=2, description="the same text in this many chunks is boilerplate and skipped"
    )
    groups: int | None = Field(
        default=None, ge=1, description="topic groups for coverage (default: sqrt(n), <= 50)"
    )
    lead_terms: int = Field(
        default=20, ge=3, description="offline: terms are drawn from the chunk's first N terms"
    )
    variant_rate: float = Field(
        default=0.5, ge=0.0, le=1.0, description="offline: chance a term takes another form"
    )
    identifier_weight: float = Field(
        default=0.2, ge=0.0, le=1.0, description="offline: weight of a term found in one chunk only"
    )
    oversample: float = Field(
        default=1.6, ge=1.0, le=10.0, description="drafts per kept question, for the filters"
    )

    @field_validator("kinds")
    @classmethod
    def _known_kinds(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(value) - set(KINDS))
        if unknown:
            raise ValueError(f"unknown question kind(s) {unknown}; kinds: {', '.join(KINDS)}")
        if any(not (v >= 0) or v == float("inf") for v in value.values()):
            raise ValueError("every share must be a finite number >= 0")
        if sum(value.values()) <= 0:
            raise ValueError("at least one kind needs a share above 0")
        return value

    @field_validator("language")
    @classmethod
    def _language_code(cls, value: str | None) -> str | None:
        return check_language_code(value)


class TestItem(BaseModel):
    """One question of a test set, as questions.jsonl holds it (and a nightly dataset reads it)."""

    __test__ = False

    model_config = ConfigDict(extra="forbid")

    id: str
    question: str
    reference: str
    kind: str
    language: str
    source_ids: list[str]
    answerable: bool = True
    generator: str = "offline"
    relevant_ids: list[str] | None = Field(
        default=None, description="qrels of the question, best first; null for an unanswerable question"
    )
    relevant_grades: list[int] | None = None


class Grade(BaseModel):
    """One qrels grade and where it came from: the question's source, the judge over a pool, or a person."""

    model_config = ConfigDict(extra="forbid")

    query_id: str
    doc_id: str
    grade: int
    origin: Origin
    reason: str | None = None
