"""The local judge's fitted verdict models: the shipped coefficients load for both models; a correct answer
beats an evasive one; and (slow) refitting from the labelled topics reproduces the held-out floors the docs
report: ROC AUC >= 0.75 for context relevance and >= 0.65 for answer relevance on every held-out domain and
language, never inverted."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.backends.local_model import ANSWER_FEATURES, SENTENCE_FEATURES, models_for
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.evaluate import evaluate_rag

TOOLS = Path(__file__).parents[2] / "tools"


@pytest.mark.parametrize("embedder", ["all-MiniLM-L6-v2-onnx-int8", "multilingual-e5-small-q4"])
def test_shipped_models_load_with_their_features(embedder: str) -> None:
    models = models_for(embedder)
    assert models is not None
    assert models["context_relevancy"].features == SENTENCE_FEATURES
    assert models["answer_relevancy"].features == ANSWER_FEATURES


@pytest.mark.parametrize(
    ("question", "correct", "evasive"),
    [
        (
            "How long does a refund take after I return an item?",
            "The refund reaches your card within 5 to 10 business days after we receive the item.",
            "Refund timing can vary a lot, so it depends on many factors; please contact support.",
        ),
        (
            "返品後、返金までどのくらいかかりますか？",
            "商品到着後、5〜10営業日でカードに返金されます。",
            "状況によりますので、一概には言えません。お問い合わせください。",
        ),
    ],
)
def test_a_correct_answer_beats_an_evasive_one(question: str, correct: str, evasive: str) -> None:
    samples = [
        RagSample(id="ok", question=question, answer=correct),
        RagSample(id="ev", question=question, answer=evasive),
    ]
    result = evaluate_rag(samples, ["answer_relevancy"], LocalJudge(), progress=False)
    assert result.per_query["ok"]["answer_relevancy"] > result.per_query["ev"]["answer_relevancy"]
    assert result.details["ok"]["answer_relevancy"].verdicts[0]["variant"] == "local_fitted"


@pytest.mark.slow
def test_refitting_reproduces_the_held_out_floors() -> None:
    sys.path.insert(0, str(TOOLS))
    import fit_local_judge as fit

    from ragmetrics.embeddings.e5 import E5Embedder
    from ragmetrics.embeddings.minilm import MiniLMEmbedder
    from ragmetrics.judge.backends.local import LocalThresholds

    topics = fit.load_topics()
    contexts, answers = fit.build_items(topics)
    assert len(contexts) + len(answers) >= 1500
    minilm = asyncio.run(fit.prepare(topics, MiniLMEmbedder()))
    e5 = asyncio.run(fit.prepare(topics, E5Embedder()))
    old = LocalThresholds().context_relevancy
    for domain in sorted({t.domain for t in topics if t.lang == "en"}):
        held = lambda t, d=domain: t.lang == "en" and t.domain == d  # noqa: E731
        models = fit.fit_models(minilm, lambda t, h=held: t.lang == "en" and not h(t))
        row = fit.evaluate(minilm, models, held, minilm, old)
        assert row["context_auc_new"] >= 0.75 and row["answer_auc_new"] >= 0.65, (domain, row)
    for lang in sorted({t.lang for t in topics}):
        held = lambda t, x=lang: t.lang == x  # noqa: E731
        models = fit.fit_models(e5, lambda t, h=held: not h(t))
        row = fit.evaluate(e5, models, held, minilm, old)
        assert row["context_auc_new"] >= 0.75 and row["answer_auc_new"] >= 0.65, (lang, row)
        assert row["evasive_auc_new"] > 0.5, (lang, row)  # never inverted
    shipped = models_for(MiniLMEmbedder().name)
    assert shipped is not None
    refit = fit.fit_models(minilm, lambda t: t.lang == "en")
    assert refit["answer_relevancy"].coef == pytest.approx(shipped["answer_relevancy"].coef, abs=1e-6)
