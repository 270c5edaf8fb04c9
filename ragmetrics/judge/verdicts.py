"""The shapes a judge's answer must take, as pydantic models.

Each prompt file names one of these models. The client asks the server for JSON that follows the model's
schema and validates every answer against it; counts that depend on the input (one verdict per chunk, one per
numbered sentence, N questions) are checked through the validation context, so a wrong count is invalid output
and triggers a repair, never a silently shortened verdict list.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

MAX_REASON_CHARS = 2_000
"""A reason longer than this is cut (with its length said) before it reaches the cache, the report or a log."""


class Verdict(BaseModel):
    """Base of every verdict model: unknown keys are rejected so a schema drift shows up as invalid output."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _cap_reasons(cls, data: Any) -> Any:
        """Cut over-long reasons anywhere in the verdict (a hostile or broken server can send megabytes)."""
        return _capped(data)


def _capped(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: (_cut(v) if k == "reason" and isinstance(v, str) else _capped(v)) for k, v in data.items()}
    if isinstance(data, list):
        return [_capped(v) for v in data]
    return data


def _cut(text: str) -> str:
    # Nested verdict models validate the same reason again: one already cut (limit + note) is left alone.
    if len(text) <= MAX_REASON_CHARS + 64:
        return text
    return text[:MAX_REASON_CHARS] + f" [cut: the reason had {len(text):,} characters]"


def _expected(info: ValidationInfo, key: str) -> int | None:
    context = info.context if isinstance(info.context, dict) else {}
    value = context.get(key)
    return int(value) if value is not None else None


def _check_numbering(numbers: list[int], expected: int | None, what: str) -> None:
    if expected is None:
        return
    if len(numbers) != expected:
        raise ValueError(f"expected exactly {expected} {what} verdicts (one per {what}), got {len(numbers)}")
    if sorted(numbers) != list(range(1, expected + 1)):
        raise ValueError(f"{what} numbers must be 1..{expected}, each exactly once; got {numbers}")


class ChunkJudgement(Verdict):
    chunk: int
    reason: str
    useful: bool


class ChunkVerdicts(Verdict):
    """Context precision / utilization, all chunks in one call: one judgement per chunk, numbered from 1."""

    verdicts: list[ChunkJudgement]

    @model_validator(mode="after")
    def _one_per_chunk(self, info: ValidationInfo) -> ChunkVerdicts:
        _check_numbering([v.chunk for v in self.verdicts], _expected(info, "count"), "chunk")
        return self

    def ordered(self) -> list[ChunkJudgement]:
        return sorted(self.verdicts, key=lambda v: v.chunk)


class SingleChunkVerdict(Verdict):
    """Context precision / utilization one chunk at a time (RAGAS's way)."""

    reason: str
    useful: bool


class GradedRelevance(Verdict):
    """Passage relevance: one graded judgement of one passage for a question (TREC-style 0-3 scale)."""

    reason: str
    grade: int = Field(ge=0, le=3)


class SufficiencyVerdict(Verdict):
    """Context sufficiency: one judgement of all the contexts together, "do they hold everything needed for a
    definitive answer to the question?" (Joren et al., ICLR 2025). The reason comes first so the model reasons
    before it commits."""

    reason: str
    sufficient: bool


class StatementJudgement(Verdict):
    statement: int
    reason: str
    attributed: bool


class StatementVerdicts(Verdict):
    """Context recall: one judgement per numbered reference statement.

    The statements are cut in code (`judge.sentences.split_statements`), not by the model, so the
    denominator is fixed and a model that drops a statement gives invalid output instead of a higher recall.
    """

    statements: list[StatementJudgement]

    @model_validator(mode="after")
    def _one_per_statement(self, info: ValidationInfo) -> StatementVerdicts:
        _check_numbering([s.statement for s in self.statements], _expected(info, "count"), "statement")
        return self

    def ordered(self) -> list[StatementJudgement]:
        return sorted(self.statements, key=lambda s: s.statement)


class SupportJudgement(Verdict):
    statement: int
    reason: str
    supported: bool
    chunk: int  # 1-based number of the chunk that supports the statement; 0 when it is not supported


class SupportVerdicts(Verdict):
    """Faithfulness: one judgement per numbered answer statement, with the chunk that supports it.

    The statements are cut in code, so the denominator is ours; a supported statement must name a chunk
    that exists, an unsupported one names none (0).
    """

    statements: list[SupportJudgement]

    @model_validator(mode="after")
    def _one_per_statement(self, info: ValidationInfo) -> SupportVerdicts:
        _check_numbering([s.statement for s in self.statements], _expected(info, "count"), "statement")
        chunks = _expected(info, "chunks")
        for s in self.statements:
            if s.supported and (s.chunk < 1 or (chunks is not None and s.chunk > chunks)):
                raise ValueError(
                    f"statement {s.statement} is supported but names chunk {s.chunk}; give 1..{chunks}"
                )
            if not s.supported and s.chunk != 0:
                raise ValueError(f"statement {s.statement} is not supported, so its chunk must be 0")
        return self

    def ordered(self) -> list[SupportJudgement]:
        return sorted(self.statements, key=lambda s: s.statement)


class AnswerStatementJudgement(Verdict):
    statement: int
    reason: str
    in_reference: bool


class ReferenceStatementJudgement(Verdict):
    statement: int
    reason: str
    in_answer: bool


class CorrectnessVerdicts(Verdict):
    """Answer correctness: every answer statement judged against the reference (true positive when the
    reference supports it, false positive otherwise) and every reference statement against the answer (false
    negative when the answer lacks it). Both lists are cut in code and must come back complete."""

    answer_statements: list[AnswerStatementJudgement]
    reference_statements: list[ReferenceStatementJudgement]

    @model_validator(mode="after")
    def _complete(self, info: ValidationInfo) -> CorrectnessVerdicts:
        _check_numbering(
            [s.statement for s in self.answer_statements],
            _expected(info, "answer_statements"),
            "answer statement",
        )
        _check_numbering(
            [s.statement for s in self.reference_statements],
            _expected(info, "reference_statements"),
            "reference statement",
        )
        return self

    def counts(self) -> tuple[int, int, int]:
        """(true positives, false positives, false negatives)."""
        tp = sum(1 for s in self.answer_statements if s.in_reference)
        fp = len(self.answer_statements) - tp
        fn = sum(1 for s in self.reference_statements if not s.in_answer)
        return tp, fp, fn


class AnswerClaimJudgement(Verdict):
    claim: int
    reason: str
    in_reference: bool
    chunks: list[int]  # 1-based numbers of every chunk that entails the claim; [] when none does


class ReferenceClaimJudgement(Verdict):
    claim: int
    reason: str
    in_answer: bool
    chunks: list[int]


def _check_chunk_numbers(claims: list[AnswerClaimJudgement] | list[ReferenceClaimJudgement], side: str,
                         chunks: int | None) -> None:  # fmt: skip
    for c in claims:
        if len(set(c.chunks)) != len(c.chunks):
            raise ValueError(f"{side} claim {c.claim} names a chunk twice: {c.chunks}")
        if chunks is not None and any(not 1 <= k <= chunks for k in c.chunks):
            allowed = f"1..{chunks}" if chunks else "none (there are no chunks)"
            raise ValueError(f"{side} claim {c.claim} names chunks {c.chunks}; allowed: {allowed}")


class ClaimVerdicts(Verdict):
    """Claim-level diagnostics: every answer claim and every reference claim (both cut in code) judged against
    the other text and against every retrieved chunk, in one call per sample.

    Each claim lists all the chunks that entail it, not just one (noise sensitivity needs to know whether a
    wrong claim came from a relevant or an irrelevant chunk); both lists must be complete and every chunk
    number must exist, or the answer is invalid and repaired.
    """

    answer_claims: list[AnswerClaimJudgement]
    reference_claims: list[ReferenceClaimJudgement]

    @model_validator(mode="after")
    def _complete(self, info: ValidationInfo) -> ClaimVerdicts:
        _check_numbering(
            [c.claim for c in self.answer_claims], _expected(info, "answer_claims"), "answer claim"
        )
        _check_numbering(
            [c.claim for c in self.reference_claims], _expected(info, "reference_claims"), "reference claim"
        )
        chunks = _expected(info, "chunks")
        _check_chunk_numbers(self.answer_claims, "answer", chunks)
        _check_chunk_numbers(self.reference_claims, "reference", chunks)
        return self

    def ordered(self) -> tuple[list[AnswerClaimJudgement], list[ReferenceClaimJudgement]]:
        return (
            sorted(self.answer_claims, key=lambda c: c.claim),
            sorted(self.reference_claims, key=lambda c: c.claim),
        )


class SentenceJudgement(Verdict):
    sentence: int
    reason: str
    relevant: bool


class SentenceVerdicts(Verdict):
    """Context relevancy: one judgement per numbered context sentence (the numbering is ours, not the model's)."""

    sentences: list[SentenceJudgement]

    @model_validator(mode="after")
    def _one_per_sentence(self, info: ValidationInfo) -> SentenceVerdicts:
        _check_numbering([s.sentence for s in self.sentences], _expected(info, "count"), "sentence")
        return self

    def ordered(self) -> list[SentenceJudgement]:
        return sorted(self.sentences, key=lambda s: s.sentence)


class GeneratedQuestion(Verdict):
    question: str
    noncommittal: bool


class GeneratedQuestions(Verdict):
    """Answer relevancy: N questions the answer would answer, each flagged when the answer is noncommittal."""

    questions: list[GeneratedQuestion]

    @model_validator(mode="after")
    def _n_questions(self, info: ValidationInfo) -> GeneratedQuestions:
        expected = _expected(info, "count")
        if expected is not None and len(self.questions) != expected:
            raise ValueError(f"expected exactly {expected} questions, got {len(self.questions)}")
        if any(not q.question.strip() for q in self.questions):
            raise ValueError("a generated question is empty")
        return self


class GeneratedTestItem(Verdict):
    """A test-set question written from the given passages, with its reference answer (ragmetrics.testset)."""

    question: str = Field(max_length=1000)
    reference: str = Field(max_length=4000)

    @model_validator(mode="after")
    def _not_blank(self) -> GeneratedTestItem:
        if not self.question.strip():
            raise ValueError("the question is empty")
        if not self.reference.strip():
            raise ValueError("the reference answer is empty")
        return self


class CheckJudgement(Verdict):
    check: int
    reason: str
    met: bool


class ChecklistVerdicts(Verdict):
    """A rubric metric's checklist: one judgement per numbered check, each with its reason."""

    checks: list[CheckJudgement]

    @model_validator(mode="after")
    def _one_per_check(self, info: ValidationInfo) -> ChecklistVerdicts:
        _check_numbering([c.check for c in self.checks], _expected(info, "count"), "check")
        return self

    def ordered(self) -> list[CheckJudgement]:
        return sorted(self.checks, key=lambda c: c.check)


class GuidanceCandidate(Verdict):
    guidance: str = Field(max_length=1200)
    reason: str


class InstructionEdits(Verdict):
    """Candidate guidance texts for an aligned metric's prompt (`ragmetrics align`, instruction refinement)."""

    candidates: list[GuidanceCandidate]

    @model_validator(mode="after")
    def _as_asked(self, info: ValidationInfo) -> InstructionEdits:
        expected = _expected(info, "count")
        if expected is not None and len(self.candidates) != expected:
            raise ValueError(f"expected exactly {expected} candidates, got {len(self.candidates)}")
        if any(not c.guidance.strip() for c in self.candidates):
            raise ValueError("a candidate's guidance is empty")
        return self


class PairwisePreference(Verdict):
    """Which of two answers to one question is better (comparison.preference): the one shown first, second, or
    neither (a tie)."""

    reason: str
    preferred: Literal["first", "second", "tie"]


VERDICT_MODELS: dict[str, type[Verdict]] = {
    m.__name__: m
    for m in (
        ChunkVerdicts,
        SingleChunkVerdict,
        StatementVerdicts,
        SupportVerdicts,
        CorrectnessVerdicts,
        ClaimVerdicts,
        SentenceVerdicts,
        GeneratedQuestions,
        GeneratedTestItem,
        GradedRelevance,
        SufficiencyVerdict,
        ChecklistVerdicts,
        InstructionEdits,
        PairwisePreference,
    )
}


def verdict_model(name: str) -> type[Verdict]:
    try:
        return VERDICT_MODELS[name]
    except KeyError:
        raise KeyError(f"unknown verdict schema {name!r}; known: {sorted(VERDICT_MODELS)}") from None


@lru_cache(maxsize=64)
def strict_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema in the form OpenAI's strict structured output accepts (cached: do not mutate).

    Strict mode wants every property required and no extra properties at every object level. Titles and
    descriptions (our docstrings) are dropped: they add tokens, and what to answer is the prompt files' job.
    """

    def fix(node: Any) -> Any:
        if isinstance(node, dict):
            for key in ("title", "description"):
                if isinstance(node.get(key), str):
                    del node[key]
            if node.get("type") == "object" and "properties" in node:
                node["required"] = list(node["properties"])
                node["additionalProperties"] = False
            for value in node.values():
                fix(value)
        elif isinstance(node, list):
            for value in node:
                fix(value)
        return node

    schema: dict[str, Any] = fix(copy.deepcopy(model.model_json_schema()))
    return schema
