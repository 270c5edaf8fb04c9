"""The judge metrics' formulas over verdicts, shared by every backend so a score means one thing."""

from __future__ import annotations

import math
from collections.abc import Sequence


def average_precision_of_verdicts(verdicts: Sequence[bool | int]) -> float:
    """Context precision: sum_k precision@k * v_k / number of useful chunks; 0 when none is useful.

    [0, 1] -> 0.5 and [0, 1, 1] -> (1/2 + 2/3) / 2 = 0.5833.
    """
    hits = 0
    total = 0.0
    for k, v in enumerate(verdicts, start=1):
        if v:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def fraction_true(verdicts: Sequence[bool | int]) -> float:
    """Share of positive verdicts (context recall, context relevancy); 0 for an empty list."""
    return sum(1 for v in verdicts if v) / len(verdicts) if verdicts else 0.0


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


def answer_relevancy(
    question_embedding: Sequence[float],
    generated_embeddings: Sequence[Sequence[float]],
    noncommittal: Sequence[bool],
    rule: str = "any",
) -> float:
    """Mean cosine of the question with each generated question; 0 when the answer is noncommittal.

    rule 'any' (RAGAS's choice): one noncommittal generated question makes the answer noncommittal;
    rule 'all': only when every generated question is flagged.
    """
    if is_noncommittal(noncommittal, rule) or not generated_embeddings:
        return 0.0
    sims = [cosine(question_embedding, g) for g in generated_embeddings]
    return math.fsum(sims) / len(sims)
