"""The judge metrics' formulas over verdicts, one named function per metric, shared by every backend.

Each formula is the RAGAS definition (Es et al., EACL 2024 demo; RAGAS docs), with the edge cases ours and
stated: an empty verdict list is never a NaN. `judge.registry` says which metric uses which function.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = [
    "answer_correctness_score",
    "answer_relevancy_score",
    "answer_similarity_score",
    "checklist_score",
    "context_precision_score",
    "context_recall_score",
    "context_relevancy_score",
    "context_sufficiency_score",
    "cosine",
    "faithfulness_score",
    "is_noncommittal",
    "probability_weighted_score",
    "rating_score",
    "share_positive",
    "statement_f1",
]


def context_precision_score(useful: Sequence[bool | int]) -> float:
    """Context precision (and utilization): sum_k precision@k * v_k / number of useful chunks; 0 when none is.

    `useful[k]` is v_k for the chunk at rank k+1. [0, 1] -> 0.5; [0, 1, 1] -> (1/2 + 2/3) / 2 = 0.5833.
    """
    hits = 0
    total = 0.0
    for k, v in enumerate(useful, start=1):
        if v:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def share_positive(verdicts: Sequence[bool | int]) -> float:
    """Share of positive verdicts; 0 for an empty list (callers refuse empty inputs before they get here)."""
    return sum(1 for v in verdicts if v) / len(verdicts) if verdicts else 0.0


def context_recall_score(attributed: Sequence[bool | int]) -> float:
    """Context recall: reference statements attributed to the contexts / all reference statements."""
    return share_positive(attributed)


def faithfulness_score(supported: Sequence[bool | int]) -> float:
    """Faithfulness: answer statements supported by the contexts / all answer statements (cut in code)."""
    return share_positive(supported)


def statement_f1(tp: int, fp: int, fn: int) -> float:
    """RAGAS's factual F1: TP / (TP + (FP + FN) / 2); 0 when there is nothing to count."""
    denominator = tp + 0.5 * (fp + fn)
    return tp / denominator if denominator > 0 else 0.0


def answer_similarity_score(answer_embedding: Sequence[float], reference_embedding: Sequence[float]) -> float:
    """Answer similarity (RAGAS SemanticSimilarity): cosine of the answer's and the reference's embeddings,
    clipped to [0, 1]."""
    return min(1.0, max(0.0, cosine(answer_embedding, reference_embedding)))


def answer_correctness_score(
    tp: int, fp: int, fn: int, similarity: float, weights: tuple[float, float] = (0.75, 0.25)
) -> float:
    """Answer correctness (RAGAS AnswerCorrectness): the weighted mean of the statement F1 and the answer
    similarity, weights (F1, similarity) = (0.75, 0.25) by default. TP=2, FP=1, FN=1, similarity 0.9:
    0.75 x 0.6667 + 0.25 x 0.9 = 0.725."""
    w_f1, w_sim = weights
    return (w_f1 * statement_f1(tp, fp, fn) + w_sim * similarity) / (w_f1 + w_sim)


def context_relevancy_score(relevant: Sequence[bool | int]) -> float:
    """Context relevancy (RAGAS 0.1): context sentences relevant to the question / all context sentences."""
    return share_positive(relevant)


def context_sufficiency_score(sufficient: bool) -> float:
    """Context sufficiency: 1 when the contexts together suffice for a definitive answer, else 0; a run's mean
    is its share of questions with sufficient context."""
    return 1.0 if sufficient else 0.0


GRADE_SCALE = 3
"""Passage relevance grades: 0 unrelated, 1 related but does not answer, 2 partly answers, 3 answers."""


def passage_relevance_score(grade: int) -> float:
    """Passage relevance: the judge's 0-3 grade divided by 3 (the grade itself is what fill-qrels writes)."""
    if not 0 <= grade <= GRADE_SCALE:
        raise ValueError(f"grade {grade} is outside 0..{GRADE_SCALE}")
    return grade / GRADE_SCALE


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(math.fsum(x * x for x in a))
    nb = math.sqrt(math.fsum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def is_noncommittal(flags: Sequence[bool], rule: str = "any") -> bool:
    """Whether the generated questions' flags make the answer noncommittal under `rule` ('any' or 'all')."""
    if rule not in ("any", "all"):
        raise ValueError(f"noncommittal rule must be 'any' or 'all', not {rule!r}")
    return any(flags) if rule == "any" else bool(flags) and all(flags)


def answer_relevancy_score(
    question_embedding: Sequence[float],
    generated_embeddings: Sequence[Sequence[float]],
    noncommittal: Sequence[bool],
    rule: str = "any",
) -> float:
    """Answer relevancy: mean cosine of the question with each generated question; 0 when noncommittal.

    rule 'any': one noncommittal generated question makes the answer noncommittal; rule 'all' (RAGAS >= 0.3.6):
    only when every generated question is flagged. Callers clip a negative mean to 0.
    """
    if is_noncommittal(noncommittal, rule) or not generated_embeddings:
        return 0.0
    sims = [cosine(question_embedding, g) for g in generated_embeddings]
    return math.fsum(sims) / len(sims)


def rating_score(rating: str, scores: Mapping[str, float]) -> float:
    """A rubric metric on a scale: the score the team gave the level (or category) the judge chose."""
    return scores[rating]


def probability_weighted_score(probabilities: Mapping[str, float], scores: Mapping[str, float]) -> float:
    """G-Eval's score (Liu et al., EMNLP 2023): sum_l p(l) * score(l) / sum_l p(l) over the scale's levels.

    Probabilities of values outside the scale are ignored and the rest renormalised. {"1": 0.6, "2": 0.4}
    with scores 0 and 1 -> 0.4.
    """
    kept = {label: p for label, p in probabilities.items() if label in scores and p > 0}
    total = math.fsum(kept.values())
    if not kept or not math.isfinite(total) or total <= 0:
        raise ValueError("no probability on any level of the scale")
    return math.fsum(p * scores[label] for label, p in kept.items()) / total


def checklist_score(met: Sequence[bool], weights: Sequence[float], combine: str) -> float:
    """A rubric metric's checklist: 'all' = 1 when every check is met, else 0; 'any' = 1 when one is;
    'weighted_share' = sum of the met checks' weights / sum of all weights. [T, F, T] weights [2, 1, 1] ->
    all 0, any 1, weighted_share 0.75."""
    if not met or len(met) != len(weights):
        raise ValueError("a checklist needs one weight per check and at least one check")
    if combine == "all":
        return 1.0 if all(met) else 0.0
    if combine == "any":
        return 1.0 if any(met) else 0.0
    if combine == "weighted_share":
        return math.fsum(w for m, w in zip(met, weights, strict=True) if m) / math.fsum(weights)
    raise ValueError(f"unknown checklist combination {combine!r}")
