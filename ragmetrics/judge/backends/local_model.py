"""The local judge's fitted verdict models: a few similarity and lexical signals combined by a logistic
regression whose coefficients ship as data (`assets/local_models.json`).

Why fitted, and why these signals: a single cosine threshold, calibrated on short Python-docs pairs, was
near chance on human-labelled data from other domains (long contexts) and inverted for answer relevance
(evasive answers that restate the question score high). The signals below are chosen to hold across
domains and lengths, and the weights are fitted on labelled topics from five domains, with each domain's
figures measured by a model fitted on the others (docs/local_judge.md, tools/fit_local_judge.py):

- cosines are also taken relative to a background: the question's mean cosine with a fixed set of
  unrelated sentences (`assets/background.txt`), since a short or generic question is close to everything;
- a context sentence is also compared with the best sentence of its context (the answer is where the
  context peaks) and scored by the question's content words it contains;
- an answer is also scored by what it adds beyond the question's words, by refusal and by hedging phrases.

Each model is tied to the embedder it was fitted with (cosines of different models are not comparable);
`models_for(embedder_name)` returns None for an embedder without fitted models, and the judge then falls
back to its plain cosine thresholds, saying so in its settings.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragmetrics.judge.text.refusal import answer_declines
from ragmetrics.judge.text.signals import answer_type_met, content_units, coverage, hedge_count, novelty

__all__ = [
    "ANSWER_FEATURES",
    "ASSETS",
    "SENTENCE_FEATURES",
    "FittedModel",
    "answer_features",
    "background_texts",
    "fitted_thresholds",
    "model_provenance",
    "models_for",
    "sentence_features",
]

ASSETS = Path(__file__).with_name("assets")
SENTENCE_FEATURES: tuple[str, ...] = (
    "cosine",
    "cosine_over_background",
    "cosine_below_context_best",
    "question_coverage",
    "chunk_question_coverage",
    "answer_type_met",
)
ANSWER_FEATURES: tuple[str, ...] = (
    "cosine",
    "cosine_over_background",
    "best_sentence_cosine",
    "question_coverage",
    "novelty",
    "refusal",
    "hedges",
    "log_content_units",
    "answer_type_met",
    "specificity",
)


@dataclass(frozen=True)
class FittedModel:
    """A logistic regression over standardised features; `threshold` is the probability cut for a verdict."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    threshold: float = 0.5

    def probability(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """P(positive) for each row of `x` (columns in `features` order)."""
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        logits = z @ np.asarray(self.coef) + self.intercept
        probability: NDArray[np.float64] = 1.0 / (1.0 + np.exp(-logits))
        return probability

    def to_json(self) -> dict[str, Any]:
        return {
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "coef": list(self.coef),
            "intercept": self.intercept,
            "threshold": self.threshold,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FittedModel:
        model = cls(
            features=tuple(data["features"]),
            mean=tuple(float(v) for v in data["mean"]),
            scale=tuple(float(v) for v in data["scale"]),
            coef=tuple(float(v) for v in data["coef"]),
            intercept=float(data["intercept"]),
            threshold=float(data.get("threshold", 0.5)),
        )
        if not len(model.features) == len(model.mean) == len(model.scale) == len(model.coef):
            raise ValueError("fitted model: features, mean, scale and coef differ in length")
        return model


@cache
def _asset() -> dict[str, Any]:
    path = ASSETS / "local_models.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def models_for(embedder_name: str) -> dict[str, FittedModel] | None:
    """The fitted models ('context_relevancy', 'answer_relevancy') for an embedder, or None."""
    entry = _asset().get("models", {}).get(embedder_name)
    if entry is None:
        return None
    return {kind: FittedModel.from_json(entry[kind]) for kind in ("context_relevancy", "answer_relevancy")}


def fitted_thresholds(embedder_name: str) -> Any:
    """The cosine thresholds calibrated for an embedder other than the default one (a `LocalThresholds`),
    or None: cosines of different models are not comparable, so each model has its own."""
    entry = _asset().get("models", {}).get(embedder_name) or {}
    values = entry.get("thresholds")
    if values is None:
        return None
    from ragmetrics.judge.backends.local_thresholds import LocalThresholds

    return LocalThresholds(**values)


def model_provenance(embedder_name: str) -> dict[str, Any]:
    """What the embedder's models were fitted on and how they did out of domain (for reports)."""
    entry = _asset().get("models", {}).get(embedder_name) or {}
    out: dict[str, Any] = entry.get("provenance", {})
    return out


@cache
def background_texts() -> tuple[str, ...]:
    """Unrelated sentences in several languages and domains, one per line."""
    lines = (ASSETS / "background.txt").read_text(encoding="utf-8").splitlines()
    return tuple(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def sentence_features(
    question: str,
    question_vec: NDArray[np.float32],
    background: float,
    sentences: list[str],
    sentence_vecs: NDArray[np.float32],
    chunk_of: list[int],
    chunks: list[str],
) -> NDArray[np.float64]:
    """One row of `SENTENCE_FEATURES` per context sentence."""
    cosines = (sentence_vecs @ question_vec).astype(np.float64)
    q_units = content_units(question)
    chunk_cov = [coverage(q_units, content_units(chunk)) for chunk in chunks]
    best = float(cosines.max()) if len(cosines) else 0.0
    rows = [
        [
            c,
            c - background,
            c - best,
            coverage(q_units, content_units(s)),
            chunk_cov[k],
            answer_type_met(question, s),
        ]
        for c, s, k in zip(cosines.tolist(), sentences, chunk_of, strict=True)
    ]
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(SENTENCE_FEATURES))


def answer_features(
    question: str,
    answer: str,
    answer_statements: list[str],
    question_vec: NDArray[np.float32],
    answer_vec: NDArray[np.float32],
    statement_vecs: NDArray[np.float32],
    background: float,
    answer_background: float,
) -> NDArray[np.float64]:
    """One row of `ANSWER_FEATURES` for a (question, answer) pair; `background` and `answer_background` are
    the question's and the answer's mean cosines with the background sentences."""
    cosine = float(answer_vec @ question_vec)
    best = float((statement_vecs @ question_vec).max()) if len(statement_vecs) else cosine
    q_units, a_units = content_units(question), content_units(answer)
    refusal = 1.0 if answer_statements and answer_declines(answer_statements) else 0.0
    hedges = hedge_count(answer) / max(1, len(answer_statements))
    row = [
        cosine,
        cosine - background,
        best,
        coverage(q_units, a_units),
        novelty(q_units, a_units),
        refusal,
        hedges,
        math.log1p(len(a_units)),
        answer_type_met(question, answer),
        cosine - answer_background,  # how much closer to the question than to unrelated text: not generic
    ]
    return np.asarray([row], dtype=np.float64)
