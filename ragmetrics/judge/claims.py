"""Claim-level diagnostics over one sample's entailment matrices: why a score moved.

A sample gives four boolean verdict sets (RAGChecker's, Ru et al., NeurIPS 2024 D&B, with its names):

- `answer_in_reference[i]`: answer claim i is entailed by the reference answer (RAGChecker: answer2response);
- `reference_in_answer[j]`: reference claim j is entailed by the answer (response2answer);
- `reference_in_chunk[j, k]`: reference claim j is entailed by retrieved chunk k (retrieved2answer);
- `answer_in_chunk[i, k]`: answer claim i is entailed by retrieved chunk k (retrieved2response).

A chunk is *relevant* when it entails at least one reference claim (RAGChecker's rule) or, where the run's
passages have human relevance judgments, when the qrels grade it relevant: `chunk_relevant` overrides the rule,
and `ClaimDiagnostics.relevance_source` says which decided.

Every formula returns 0 where its denominator is empty (no claim, no chunk, nothing recalled), as RAGChecker
does, so a mean over samples never meets a NaN. One deliberate difference: with no chunk retrieved RAGChecker's
code fails (a maximum over an empty axis), while here every answer claim is ungrounded, so hallucination and
self-knowledge split the answer's claims between them and faithfulness is 0: a retriever that finds nothing
must not make the generator look clean.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

__all__ = ["DIAGNOSTICS", "ClaimDiagnostics", "ClaimMatrices", "claim_diagnostics", "diagnostic_formula"]

DIAGNOSTICS = (
    "claim_precision",
    "claim_recall",
    "claim_f1",
    "retrieval_claim_recall",
    "retrieval_context_precision",
    "claim_utilization",
    "noise_sensitivity_relevant",
    "noise_sensitivity_irrelevant",
    "hallucination",
    "self_knowledge",
    "claim_faithfulness",
)

Bools = NDArray[np.bool_]


@dataclass(frozen=True)
class ClaimMatrices:
    """One sample's verdicts; shapes: answer claims A, reference claims R, chunks K."""

    answer_in_reference: Bools  # (A,)
    reference_in_answer: Bools  # (R,)
    reference_in_chunk: Bools  # (R, K)
    answer_in_chunk: Bools  # (A, K)

    @classmethod
    def of(
        cls,
        answer_in_reference: Sequence[bool],
        reference_in_answer: Sequence[bool],
        reference_in_chunk: Sequence[Sequence[bool]],
        answer_in_chunk: Sequence[Sequence[bool]],
        chunks: int,
    ) -> ClaimMatrices:
        """From lists, with the chunk count given so that zero claims still have K columns; shapes checked."""
        a = np.asarray(answer_in_reference, dtype=bool).reshape(-1)
        r = np.asarray(reference_in_answer, dtype=bool).reshape(-1)
        rc = np.asarray(reference_in_chunk, dtype=bool).reshape(len(r), chunks)
        ac = np.asarray(answer_in_chunk, dtype=bool).reshape(len(a), chunks)
        return cls(a, r, rc, ac)


@dataclass(frozen=True)
class ClaimDiagnostics:
    """The diagnostics of one sample (each in [0, 1]) and what decided which chunks are relevant."""

    values: dict[str, float]
    relevant_chunks: list[bool]
    relevance_source: Literal["qrels", "reference claims"]


def _any(matrix: Bools, axis: int) -> Bools:
    """Row (axis 1) or column (axis 0) has a True; an empty axis gives all False."""
    return np.asarray(matrix.any(axis=axis), dtype=bool)


def _share(flags: Bools) -> float:
    return float(flags.mean()) if flags.size else 0.0


def claim_diagnostics(m: ClaimMatrices, chunk_relevant: Sequence[bool] | None = None) -> ClaimDiagnostics:
    """Every diagnostic of one sample.

    - claim_precision = share of answer claims the reference entails; claim_recall = share of reference claims
      the answer entails; claim_f1 their harmonic mean.
    - retrieval_claim_recall = share of reference claims some chunk entails; retrieval_context_precision = share
      of chunks that are relevant.
    - claim_utilization = |reference claims entailed by a chunk and by the answer| / |entailed by a chunk|.
    - noise_sensitivity_relevant / _irrelevant = share of answer claims that are wrong (not in the reference)
      and entailed by a relevant chunk / by an irrelevant chunk and no relevant one.
    - hallucination / self_knowledge = share of answer claims no chunk entails that are wrong / right.
    - claim_faithfulness = share of answer claims some chunk entails.
    """
    chunks = m.reference_in_chunk.shape[1]
    if chunk_relevant is not None:
        relevant = np.asarray(chunk_relevant, dtype=bool).reshape(chunks)
        source: Literal["qrels", "reference claims"] = "qrels"
    else:
        relevant = _any(m.reference_in_chunk, 0)
        source = "reference claims"
    precision = _share(m.answer_in_reference)
    recall = _share(m.reference_in_answer)
    f1 = 2 * precision * recall / (precision + recall) if precision > 0 and recall > 0 else 0.0

    recalled = _any(m.reference_in_chunk, 1)
    utilization = float((recalled & m.reference_in_answer).sum() / recalled.sum()) if recalled.any() else 0.0

    answers = len(m.answer_in_reference)
    has_chunks = chunks > 0 and answers > 0
    in_relevant = _any(m.answer_in_chunk & relevant, 1)
    in_irrelevant = _any(m.answer_in_chunk & ~relevant, 1) & ~in_relevant
    grounded = _any(m.answer_in_chunk, 1)
    wrong = ~m.answer_in_reference
    # Without reference claims (and no qrels) no chunk can be relevant: noise is then undefined, scored 0.
    noise_defined = has_chunks and (source == "qrels" or len(m.reference_in_answer) > 0)
    values = {
        "claim_precision": precision,
        "claim_recall": recall,
        "claim_f1": f1,
        "retrieval_claim_recall": _share(recalled) if chunks else 0.0,
        "retrieval_context_precision": _share(relevant),
        "claim_utilization": utilization,
        "noise_sensitivity_relevant": _share(in_relevant & wrong) if noise_defined else 0.0,
        "noise_sensitivity_irrelevant": _share(in_irrelevant & wrong) if noise_defined else 0.0,
        "hallucination": _share(~grounded & wrong),
        "self_knowledge": _share(~grounded & ~wrong),
        "claim_faithfulness": _share(grounded),
    }
    return ClaimDiagnostics(values, relevant.tolist(), source)


def diagnostic_formula(name: str) -> Callable[[ClaimMatrices, Sequence[bool] | None], float]:
    """The formula of one diagnostic, as the registry names it: matrices (and qrels relevance) in, value out."""
    if name not in DIAGNOSTICS:
        raise ValueError(f"{name!r} is not a claim diagnostic; known: {', '.join(DIAGNOSTICS)}")

    def formula(m: ClaimMatrices, chunk_relevant: Sequence[bool] | None = None) -> float:
        return claim_diagnostics(m, chunk_relevant).values[name]

    formula.__name__ = f"{name}_score"
    formula.__doc__ = f"{name} of one sample's claim matrices (see claim_diagnostics)."
    return formula
