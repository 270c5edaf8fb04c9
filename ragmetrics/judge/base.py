"""The contract every judge backend meets, and the sample it scores.

A backend turns (metric, sample) into a score plus the verdicts behind it, or raises `JudgeError` with a
cause. Orchestration (concurrency, progress, failures, the result schema) lives in `judge.evaluate` and is
the same for every backend, so the LLM judge and the local judge are interchangeable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ragmetrics.errors import JudgeError, NotApplicable
from ragmetrics.judge.registry import JUDGE_METRIC_SPECS, JudgeMetricSpec, judge_metric_names, spec
from ragmetrics.judge.text.copies import statements_against
from ragmetrics.judge.text.language import check_language_code, detect_language
from ragmetrics.judge.text.refusal import answer_declines
from ragmetrics.judge.tool_calls import ToolCall
from ragmetrics.schema import JudgeDetail, JudgeInfo

JUDGE_METRICS: tuple[str, ...] = judge_metric_names()
"""Canonical judge metric names; each is defined in `ragmetrics.judge.registry`."""

REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {s.name: s.required for s in JUDGE_METRIC_SPECS}
"""Which sample fields each metric reads (from the registry)."""


class RagSample(BaseModel):
    """One question answered by a RAG pipeline: what it retrieved (in rank order) and what it said."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    contexts: list[str] | None = Field(
        default=None,
        description="retrieved texts in rank order; [] when retrieval found nothing (context metrics score 0), "
        "None when the sample has no contexts at all (context metrics cannot be computed)",
    )
    context_ids: list[str] | None = None
    relevant_ids: list[str] | None = Field(
        default=None,
        description="ids of the passages judged relevant to the question (qrels grade >= 1), for citation "
        "precision and recall",
    )
    answer: str | None = None
    reference: str | None = None
    answerable: bool | None = Field(
        default=None,
        description="False for a question no document answers (a test set's `unanswerable` kind): its reference "
        "is a placeholder and it has no relevant chunk, so metrics judged against the reference or the qrels "
        "are not applicable to it (`reference_not_applicable`); None or True: an ordinary question",
    )
    language: str | None = Field(
        default=None,
        description="ISO 639 code of the sample's texts ('ja', 'de'); unset: each text's script decides",
    )
    tool_calls: list[ToolCall] | None = Field(
        default=None, description="the tools the system called for this question, in order (agents)"
    )
    reference_tool_calls: list[ToolCall] | None = Field(
        default=None, description="the tools it should have called, in order ([]: none)"
    )
    conversation_id: str | None = Field(
        default=None,
        description="the conversation this sample is a turn of: its turns are one cluster in comparisons, "
        "and faithfulness reads the earlier turns (docs/conversations.md)",
    )
    turn: int | None = Field(default=None, ge=0, description="the turn's position in its conversation")
    extra: dict[str, Any] | None = Field(
        default=None,
        description="the dataset's other columns for this sample (a metric of your own may read them)",
    )

    @field_validator("language")
    @classmethod
    def _language_code(cls, v: str | None) -> str | None:
        return check_language_code(v)

    @property
    def context_list(self) -> list[str]:
        """The contexts, [] when there are none (what a backend iterates over)."""
        return self.contexts if self.contexts is not None else []

    @property
    def question_language(self) -> str:
        """The language generated questions are written in: `language`, else the question's script."""
        return self.language or detect_language(self.question)

    @field_validator("question")
    @classmethod
    def _question_not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("question is blank")
        return v

    @model_validator(mode="after")
    def _turn_of_a_conversation(self) -> RagSample:
        if (self.conversation_id is None) != (self.turn is None):
            raise ValueError("conversation_id and turn come together: give both or neither")
        if self.conversation_id is not None and not self.conversation_id.strip():
            raise ValueError("conversation_id is blank")
        return self

    @model_validator(mode="after")
    def _ids_match_contexts(self) -> RagSample:
        if self.context_ids is not None and len(self.context_ids) != len(self.contexts or []):
            raise ValueError(
                f"context_ids has {len(self.context_ids)} entries but contexts has {len(self.contexts or [])}"
            )
        return self

    def missing_fields(self, metric: str) -> list[str]:
        """Fields `metric` needs that this sample lacks (None and blank strings count as missing; an empty
        context list does not: it is a retrieval that found nothing, scored by `empty_retrieval`)."""
        missing: list[str] = []
        metric_spec = spec(metric)
        for name in metric_spec.required:
            value = getattr(self, name)
            if metric_spec.refusal_not_applicable and name == metric_spec.target and value is not None:
                continue  # an empty answer is given, and says nothing: not applicable, decided by the backend
            if value is None or (isinstance(value, str) and not value.strip()):
                missing.append(name)
        return missing


EMPTY_RETRIEVAL_REASON = (
    "no context was retrieved: a metric of the contexts scores 0 here (RAGAS leaves such a sample out of the "
    "mean, so a retriever that finds nothing would raise it)"
)


def empty_retrieval(metric_spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome | None:
    """The score of a metric that reads the contexts when retrieval returned none: 0, without a judge call.

    An answer that declines (or is empty) stays not applicable for faithfulness, as it is with contexts.
    """
    if sample.contexts is None or sample.contexts or "contexts" not in metric_spec.required:
        return None
    if metric_spec.plan == "claim_entailment":
        # Judged with no chunk: every answer claim is then ungrounded, so a retriever that finds nothing
        # raises hallucination instead of scoring a clean 0 (judge.claims).
        return None
    if metric_spec.refusal_not_applicable:
        target_statements(metric_spec, sample)  # raises NotApplicable for a refusal or an empty answer
    return MetricOutcome(0.0, JudgeDetail(reason=EMPTY_RETRIEVAL_REASON))


UNANSWERABLE_REASON = (
    "unanswerable question (answerable: false): no document answers it and its reference is a placeholder, "
    "so a metric judged against the reference or the qrels does not apply"
)
REFERENCE_FIELDS = frozenset({"reference", "relevant_ids", "reference_tool_calls"})
"""Sample fields that hold the truth a question is judged against; a metric reading one of them does not
apply to an unanswerable question."""


def reference_not_applicable(metric: str, sample: RagSample) -> str | None:
    """Why `metric` does not apply to `sample` because the sample is unanswerable, or None when it applies.

    Reference-free metrics (faithfulness, answer relevancy, rubrics of the answer alone) still apply: an
    unanswerable question's answer can be unfaithful or off-topic like any other."""
    if sample.answerable is not False:
        return None
    return UNANSWERABLE_REASON if REFERENCE_FIELDS.intersection(spec(metric).required) else None


def check_scorable(metric: str, sample: RagSample) -> None:
    """Raise the JudgeError every backend gives for an unknown metric or a sample that lacks its fields.

    In the backends' `score` too, not only in `evaluate_rag`, because a judge can be called directly.
    """
    spec(metric)  # raises unsupported_metric, with a suggestion
    missing = sample.missing_fields(metric)
    if missing:
        raise JudgeError(
            f"sample {sample.id!r} lacks {', '.join(missing)} needed by {metric}", cause="missing_field"
        )


def target_statements(metric_spec: JudgeMetricSpec, sample: RagSample) -> list[str]:
    """The statements a statement-plan metric judges, cut in code from the spec's target field.

    No statement is a missing field for a reference (context recall), and not applicable for an answer
    (faithfulness): an empty answer, or one whose first statement declines to answer, claims nothing.
    A statement that copies several chunks (or places of one) in a row is cut where the copies meet
    (`text.copies`): where the answer's sentences break must not decide whether the contexts support it.
    """
    field = str(metric_spec.target)
    statements = statements_against(str(getattr(sample, field) or ""), sample.context_list, sample.language)
    if metric_spec.refusal_not_applicable:
        if not statements:
            raise NotApplicable(f"the {field} is empty: it makes no claim to check")
        if answer_declines(statements):
            raise NotApplicable(
                f"the {field} declines to answer ({statements[0][:80]!r}): it makes no claim to check"
            )
    if not statements:
        raise JudgeError(f"sample {sample.id!r}: the {field} contains no statements", cause="missing_field")
    return statements


@dataclass(frozen=True)
class MetricOutcome:
    """A judge score in [0, 1] with the validated verdicts and reasons it came from."""

    value: float
    detail: JudgeDetail


@runtime_checkable
class Judge(Protocol):
    """A judge backend. `score` raises `ragmetrics.errors.JudgeError` (with `.cause`) when no verdict can be had."""

    @property
    def backend(self) -> str: ...

    def supported_metrics(self) -> tuple[str, ...]: ...

    async def score(self, metric: str, sample: RagSample) -> MetricOutcome: ...

    def info(self) -> JudgeInfo:
        """A snapshot of who judged, with cache statistics and usage so far; never a secret."""
        ...

    async def aclose(self) -> None: ...


@runtime_checkable
class Embedder(Protocol):
    """Text -> unit-length vectors (float32, shape [n, dim]); used by answer relevancy and the local judge."""

    @property
    def name(self) -> str: ...

    async def embed(self, texts: list[str]) -> NDArray[np.float32]: ...
