"""Claim-level diagnostics: hand-computed matrices, and equality with RAGChecker's definitions (ragchecker/
metrics.py, read and restated here independently as set counts) on random matrices including empty ones."""

from __future__ import annotations

import numpy as np
import pytest

from ragmetrics.judge.claims import DIAGNOSTICS, ClaimMatrices, claim_diagnostics


def _by_counting(
    a: list[bool], r: list[bool], rc: list[list[bool]], ac: list[list[bool]], k: int
) -> dict[str, float]:
    """RAGChecker's definitions as explicit loops over claims and chunks (0 for every empty denominator)."""
    n_a, n_r = len(a), len(r)
    relevant = [any(rc[j][c] for j in range(n_r)) for c in range(k)]
    out = dict.fromkeys(DIAGNOSTICS, 0.0)
    if n_a:
        out["claim_precision"] = sum(a) / n_a
    if n_r:
        out["claim_recall"] = sum(r) / n_r
    p, q = out["claim_precision"], out["claim_recall"]
    out["claim_f1"] = 2 * p * q / (p + q) if p > 0 and q > 0 else 0.0
    if n_r and k:
        recalled = [any(rc[j]) for j in range(n_r)]
        out["retrieval_claim_recall"] = sum(recalled) / n_r
        out["retrieval_context_precision"] = sum(relevant) / k
        if any(recalled):
            out["claim_utilization"] = sum(x and y for x, y in zip(recalled, r, strict=True)) / sum(recalled)
    if n_a:  # with no chunk every claim is ungrounded (RAGChecker's code fails there; see claims.py)
        grounded = [any(ac[i]) for i in range(n_a)]
        out["claim_faithfulness"] = sum(grounded) / n_a
        out["hallucination"] = sum(not g and not a[i] for i, g in enumerate(grounded)) / n_a
        out["self_knowledge"] = sum(not g and a[i] for i, g in enumerate(grounded)) / n_a
        if n_r and k:
            in_rel = [any(ac[i][c] and relevant[c] for c in range(k)) for i in range(n_a)]
            in_irr = [
                any(ac[i][c] and not relevant[c] for c in range(k)) and not in_rel[i] for i in range(n_a)
            ]
            out["noise_sensitivity_relevant"] = sum(x and not a[i] for i, x in enumerate(in_rel)) / n_a
            out["noise_sensitivity_irrelevant"] = sum(x and not a[i] for i, x in enumerate(in_irr)) / n_a
    return out


HAND = {
    "claim_precision": 1 / 3,
    "claim_recall": 1 / 2,
    "claim_f1": 0.4,
    "retrieval_claim_recall": 1 / 2,
    "retrieval_context_precision": 1 / 2,
    "claim_utilization": 1.0,
    "noise_sensitivity_relevant": 0.0,
    "noise_sensitivity_irrelevant": 1 / 3,
    "hallucination": 1 / 3,
    "self_knowledge": 0.0,
    "claim_faithfulness": 2 / 3,
}
"""The diagnostics of the hand-computed sample below (also judged through the loopback server in
test_claim_entailment.py)."""


def test_a_hand_computed_sample() -> None:
    # Answer claims: a0 true and from chunk 0; a1 wrong, from chunk 1 (noise); a2 wrong, from no chunk.
    # Reference claims: r0 in chunk 0 and in the answer; r1 in no chunk and not in the answer.
    m = ClaimMatrices.of(
        answer_in_reference=[True, False, False],
        reference_in_answer=[True, False],
        reference_in_chunk=[[True, False], [False, False]],
        answer_in_chunk=[[True, False], [False, True], [False, False]],
        chunks=2,
    )
    d = claim_diagnostics(m)
    assert d.relevant_chunks == [True, False] and d.relevance_source == "reference claims"
    assert d.values == pytest.approx(HAND)
    # Human judgments that call chunk 1 relevant move a1's noise from irrelevant to relevant.
    q = claim_diagnostics(m, chunk_relevant=[False, True])
    assert q.relevance_source == "qrels"
    assert q.values["noise_sensitivity_relevant"] == pytest.approx(1 / 3)
    assert q.values["noise_sensitivity_irrelevant"] == 0.0
    assert q.values["retrieval_context_precision"] == pytest.approx(1 / 2)


def test_equal_to_ragcheckers_definitions_on_random_matrices() -> None:
    rng = np.random.default_rng(11)
    compared = 0
    for _ in range(2000):
        n_a, n_r, k = (int(x) for x in rng.integers(0, 5, size=3))
        density = rng.uniform(0.1, 0.9)
        a = (rng.uniform(size=n_a) < density).tolist()
        r = (rng.uniform(size=n_r) < density).tolist()
        rc = (rng.uniform(size=(n_r, k)) < density / 2).tolist()
        ac = (rng.uniform(size=(n_a, k)) < density / 2).tolist()
        got = claim_diagnostics(ClaimMatrices.of(a, r, rc, ac, chunks=k)).values
        want = _by_counting(a, r, rc, ac, k)
        assert got == pytest.approx(want), (a, r, rc, ac)
        compared += len(want)
    assert compared == 2000 * len(DIAGNOSTICS)


def test_shapes_are_checked() -> None:
    with pytest.raises(ValueError):
        ClaimMatrices.of([True], [True], [[True, False]], [[True]], chunks=2)


def test_an_empty_answer_leaves_the_answer_side_not_applicable_and_scores_the_rest() -> None:
    """docs/judge.md: an empty answer makes the answer-side diagnostics not applicable (never a failure that
    counts toward an incomplete night); claim recall and the retrieval ones still score it."""
    from ragmetrics import JudgeSettings, evaluate_rag, make_judge
    from ragmetrics.judge.registry import CLAIM_DIAGNOSTIC_NAMES

    sample = {
        "id": "a", "question": "What is the Red Planet?", "contexts": ["Mars is called the Red Planet."],
        "answer": "", "reference": "Mars is the Red Planet.",
    }  # fmt: skip
    result = evaluate_rag(
        [sample], list(CLAIM_DIAGNOSTIC_NAMES), make_judge(JudgeSettings(backend="local")), progress=False
    )
    assert not result.failures
    answer_side = {n.metric for n in result.not_applicable}
    assert answer_side == {
        "claim_precision", "noise_sensitivity_relevant", "noise_sensitivity_irrelevant", "hallucination",
        "self_knowledge", "claim_faithfulness",
    }  # fmt: skip
    scores = result.per_query["a"]
    assert scores["claim_recall"] == 0.0 and scores["retrieval_claim_recall"] == 1.0
