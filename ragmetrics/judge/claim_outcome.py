"""From one sample to the claims its diagnostics judge, and from the judged matrices to a diagnostic's score.

Both backends judge the same claims the same way around their verdicts: the claims are cut here, in code, in
any language; relevance comes from the qrels where the sample carries them; the score, its reason and the
matrix the report's drill-down shows are built here. The backends only fill the four boolean matrices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ragmetrics.errors import JudgeError, NotApplicable
from ragmetrics.judge.base import MetricOutcome, RagSample
from ragmetrics.judge.claims import ClaimMatrices, claim_diagnostics
from ragmetrics.judge.registry import JudgeMetricSpec
from ragmetrics.judge.text.copies import statements_against
from ragmetrics.judge.text.refusal import answer_declines
from ragmetrics.schema import ClaimEvidence, JudgeDetail

__all__ = ["ANSWER_SIDE", "ClaimInputs", "JudgedClaim", "chunk_relevance", "claim_inputs", "claim_outcome"]

ANSWER_SIDE = frozenset(
    {
        "claim_precision",
        "noise_sensitivity_relevant",
        "noise_sensitivity_irrelevant",
        "hallucination",
        "self_knowledge",
        "claim_faithfulness",
    }
)
"""Diagnostics that are shares of the answer's claims: not applicable when the answer makes none (it is
empty or declines), as faithfulness is. Claim recall and the retrieval diagnostics still score such a sample."""


@dataclass(frozen=True)
class ClaimInputs:
    """The claims one sample's diagnostics judge, cut in code."""

    answer_claims: list[str]
    reference_claims: list[str]
    no_answer_claims: str | None
    """Why the answer has no claims (empty, or it declines to answer); None when it has some."""
    chunks: int

    @property
    def needs_verdict(self) -> bool:
        """False when every verdict is known without asking: no answer claim to check and no chunk to check
        the reference's against (nothing can entail a reference claim but an answer that says nothing)."""
        return bool(self.answer_claims) or self.chunks > 0


@dataclass(frozen=True)
class JudgedClaim:
    """One claim's verdicts: entailed by the other answer, by which chunks (0-based), and why."""

    in_other: bool
    chunks: list[int]
    reason: str


def claim_inputs(sample: RagSample) -> ClaimInputs:
    """The sample's claims, cut as faithfulness cuts its statements: sentences, then where copies of different
    chunks meet (`text.copies`), so a claim copied across a chunk boundary is two claims each entailed by its
    own chunk, and the matrices' per-chunk columns keep saying which chunk each claim came from."""
    chunks = sample.context_list
    reference_claims = statements_against(str(sample.reference or ""), chunks, sample.language)
    if not reference_claims:
        raise JudgeError(f"sample {sample.id!r}: the reference contains no claims", cause="missing_field")
    answer_claims = statements_against(str(sample.answer or ""), chunks, sample.language)
    why: str | None = None
    if not answer_claims:
        why = "the answer is empty"
    elif answer_declines(answer_claims):
        why = f"the answer declines to answer ({answer_claims[0][:80]!r})"
        answer_claims = []
    return ClaimInputs(answer_claims, reference_claims, why, chunks=len(sample.context_list))


def chunk_relevance(sample: RagSample) -> list[bool] | None:
    """Which retrieved chunks the human judgments call relevant, where the sample carries them: a passage in
    `relevant_ids` (qrels grade >= 1) is relevant, any other retrieved passage is not (unjudged counts as not
    relevant, trec_eval's convention). None without ids or judgments: the reference claims decide."""
    if sample.context_ids is None or sample.relevant_ids is None:
        return None
    relevant = set(sample.relevant_ids)
    return [cid in relevant for cid in sample.context_ids]


def claim_outcome(
    spec: JudgeMetricSpec,
    sample: RagSample,
    inputs: ClaimInputs,
    answer: list[JudgedClaim],
    reference: list[JudgedClaim],
    *,
    cached: bool,
    judge: Literal["llm", "local"],
) -> MetricOutcome:
    """The diagnostic `spec` names, from the judged claims, with the whole matrix as its evidence."""
    if spec.name in ANSWER_SIDE and inputs.no_answer_claims is not None:
        raise NotApplicable(f"{inputs.no_answer_claims}: it makes no claim to check")
    k = inputs.chunks
    if inputs.no_answer_claims is not None:
        # An answer that claims nothing entails nothing, whatever a judge said about it.
        reference = [JudgedClaim(False, c.chunks, c.reason) for c in reference]
    matrices = ClaimMatrices.of(
        answer_in_reference=[c.in_other for c in answer],
        reference_in_answer=[c.in_other for c in reference],
        reference_in_chunk=[[n in c.chunks for n in range(k)] for c in reference],
        answer_in_chunk=[[n in c.chunks for n in range(k)] for c in answer],
        chunks=k,
    )
    relevance = chunk_relevance(sample)
    diagnostics = claim_diagnostics(matrices, relevance)
    value = spec.score(matrices, relevance)
    verdicts: list[dict[str, Any]] = [
        {"side": side, "claim": text, "verdict": c.in_other, "chunks": c.chunks, "reason": c.reason}
        for side, texts, judged in (
            ("answer", inputs.answer_claims, answer),
            ("reference", inputs.reference_claims, reference),
        )
        for text, c in zip(texts, judged, strict=True)
    ]
    relevant = sum(diagnostics.relevant_chunks)
    weaker = " (local judge: similarity, not entailment)" if judge == "local" else ""
    reason = (
        f"{len(answer)} answer claims ({sum(c.in_other for c in answer)} in the reference), {len(reference)} "
        f"reference claims ({sum(c.in_other for c in reference)} in the answer), {relevant} of {k} chunks "
        f"relevant by the {diagnostics.relevance_source}{weaker}"
    )
    evidence = ClaimEvidence(
        chunks=k,
        relevant_chunks=diagnostics.relevant_chunks,
        relevance_source=diagnostics.relevance_source,
        judge=judge,
    )
    return MetricOutcome(value, JudgeDetail(verdicts=verdicts, reason=reason, cached=cached, claims=evidence))
