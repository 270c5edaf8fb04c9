"""Our formulas equal RAGAS 0.4.3's on the same verdicts. RAGAS is not a dependency: its published
definitions are written out here (ragas/metrics/_faithfulness.py, _answer_correctness.py, _answer_similarity.py,
_context_recall.py, _context_precision.py, _answer_relevance.py), including its small epsilons."""

from __future__ import annotations

import random

import numpy as np
import pytest

from ragmetrics.judge import formulas


def ragas_faithfulness(verdicts: list[int]) -> float:
    return sum(verdicts) / len(verdicts) if verdicts else float("nan")


def ragas_fbeta(tp: int, fp: int, fn: int, beta: float = 1.0) -> float:
    precision = tp / (tp + fp + 1e-10)
    recall = tp / (tp + fn + 1e-10)
    return (1 + beta**2) * precision * recall / (beta**2 * precision + recall + 1e-10)


def ragas_answer_correctness(tp: int, fp: int, fn: int, similarity: float, weights: list[float]) -> float:
    return float(np.average([ragas_fbeta(tp, fp, fn), similarity], weights=weights))


def ragas_context_precision(verdicts: list[int]) -> float:
    numerator = sum((sum(verdicts[: i + 1]) / (i + 1)) * verdicts[i] for i in range(len(verdicts)))
    return numerator / (sum(verdicts) + 1e-10)


def ragas_context_recall(attributed: list[int]) -> float:
    return sum(attributed) / len(attributed)


def ragas_answer_relevancy(question: np.ndarray, generated: np.ndarray, flags: list[bool]) -> float:
    norms = np.linalg.norm(generated, axis=1) * np.linalg.norm(question)
    cosine = float((generated @ question / norms).mean())
    return cosine * int(not all(flags))  # RAGAS >= 0.3.6: noncommittal only when every question is


@pytest.mark.parametrize("seed", range(20))
def test_formulas_equal_ragas_on_the_same_verdicts(seed: int) -> None:
    rng = random.Random(seed)
    verdicts = [rng.randint(0, 1) for _ in range(rng.randint(1, 9))]
    assert formulas.faithfulness_score(verdicts) == pytest.approx(ragas_faithfulness(verdicts), abs=1e-12)
    assert formulas.context_recall_score(verdicts) == pytest.approx(ragas_context_recall(verdicts), abs=1e-12)
    assert formulas.context_precision_score(verdicts) == pytest.approx(
        ragas_context_precision(verdicts), abs=1e-8
    )
    tp, fp, fn = rng.randint(0, 5), rng.randint(0, 5), rng.randint(0, 5)
    similarity = rng.random()
    weights = [rng.choice([0.75, 0.5, 1.0]), rng.choice([0.25, 0.5, 0.0])]
    ours = formulas.answer_correctness_score(tp, fp, fn, similarity, (weights[0], weights[1]))
    assert ours == pytest.approx(ragas_answer_correctness(tp, fp, fn, similarity, weights), abs=1e-8)
    question = np.asarray([rng.gauss(0, 1) for _ in range(8)])
    generated = np.asarray([[rng.gauss(0, 1) for _ in range(8)] for _ in range(3)])
    flags = [rng.random() < 0.4 for _ in range(3)]
    ours_ar = formulas.answer_relevancy_score(question.tolist(), generated.tolist(), flags, rule="all")
    assert ours_ar == pytest.approx(ragas_answer_relevancy(question, generated, flags), abs=1e-9)
