from __future__ import annotations

import asyncio
import logging
import math

import numpy as np
import pytest
from numpy.typing import NDArray

from ragmetrics.errors import JudgeError
from ragmetrics.judge.backends.local import (
    LocalJudge,
    LocalThresholds,
    pair_similarities,
    units,
    window_cosines,
)
from ragmetrics.judge.base import JUDGE_METRICS, Judge, RagSample
from ragmetrics.judge.registry import spec
from ragmetrics.judge.select import make_judge, resolve_backend
from ragmetrics.judge.settings import JudgeSettings

JUDGED = [m for m in JUDGE_METRICS if spec(m).plan != "deterministic"]  # the deterministic ones ask no judge


def _unit(angle_deg: float) -> list[float]:
    a = math.radians(angle_deg)
    return [math.cos(a), math.sin(a)]


class TableEmbedder:
    """Each text maps to a chosen 2-d unit vector, so cosines (and verdicts) are known exactly."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table
        self.calls = 0

    @property
    def name(self) -> str:
        return "table"

    async def embed(self, texts: list[str]) -> NDArray[np.float32]:
        self.calls += 1
        return np.asarray([self.table[t] for t in texts], dtype=np.float32).reshape(len(texts), 2)


T = LocalThresholds(context_precision=0.8, context_utilization=0.8, context_recall=0.8, context_relevancy=0.8)


def run(judge: LocalJudge, metric: str, sample: RagSample):  # type: ignore[no-untyped-def]
    return asyncio.run(judge.score(metric, sample))


def test_context_precision_verdicts_and_formula() -> None:
    # cos(0) = 1, cos(60) = 0.5: chunks 2 and 3 match the reference, chunk 1 does not.
    emb = TableEmbedder({"Ref.": _unit(0), "Far.": _unit(60), "Near.": _unit(10), "Same.": _unit(0)})
    judge = LocalJudge(emb, T)
    sample = RagSample(id="q", question="?", contexts=["Far.", "Near.", "Same."], reference="Ref.")
    out = run(judge, "context_precision", sample)
    assert [v["verdict"] for v in out.detail.verdicts] == [False, True, True]
    assert out.value == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert out.detail.verdicts[1]["reason"] == (
        "best cosine 0.98 >= 0.80 between sentence 1 of chunk 2 and reference sentence 1; "
        "chunk holds 0% of the reference's words"
    )
    assert "local judge" in (out.detail.reason or "")
    assert emb.calls == 1  # one batched embedding call per sample and metric


def test_context_precision_matches_whole_multi_sentence_reference() -> None:
    emb = TableEmbedder(
        {"A one.": _unit(40), "B two.": _unit(-40), "A one. B two.": _unit(0), "C.": _unit(5)}
    )
    out = run(LocalJudge(emb, T), "context_precision",
              RagSample(id="q", question="?", contexts=["C."], reference="A one. B two."))  # fmt: skip
    assert out.detail.verdicts[0]["matched"] == "whole reference"
    assert out.value == 1.0


def test_context_utilization_uses_the_answer() -> None:
    emb = TableEmbedder({"Ans.": _unit(0), "Chunk.": _unit(90)})
    out = run(LocalJudge(emb, T), "context_utilization",
              RagSample(id="q", question="?", contexts=["Chunk."], answer="Ans."))  # fmt: skip
    assert out.value == 0.0
    assert "answer sentence 1;" in out.detail.verdicts[0]["reason"]


def test_a_chunk_holding_a_bare_reference_is_useful_whatever_the_cosine() -> None:
    # The reference is a bare figure: far from every sentence in embedding space, but the chunk states it.
    emb = TableEmbedder({"1989.": _unit(0), "The wall fell in 1989.": _unit(90), "It rained.": _unit(90)})
    out = run(LocalJudge(emb, T), "context_precision",
              RagSample(id="q", question="?", contexts=["It rained.", "The wall fell in 1989."],
                        reference="1989."))  # fmt: skip
    assert [v["verdict"] for v in out.detail.verdicts] == [False, True]
    assert out.detail.verdicts[1]["contained"] == 1.0


def test_empty_chunk_is_not_useful() -> None:
    emb = TableEmbedder({"Ref.": _unit(0), "Ref copy.": _unit(0)})
    out = run(LocalJudge(emb, T), "context_precision",
              RagSample(id="q", question="?", contexts=["  ", "Ref copy."], reference="Ref."))  # fmt: skip
    assert out.detail.verdicts[0] == {"chunk": 0, "verdict": False, "cosine": None, "reason": "empty chunk"}
    assert out.value == pytest.approx(0.5)


def test_context_recall_attributes_statements() -> None:
    emb = TableEmbedder({
        "Stmt one is here": _unit(0), "stmt two is here.": _unit(90),
        "Stmt one here.": _unit(5), "Ctx b.": _unit(-30),
    })  # fmt: skip
    # The cosine decides, as long as the chunk also holds the statement's words (real text shares them).
    sample = RagSample(id="q", question="?", contexts=["Stmt one here.", "Ctx b."],
                       reference="Stmt one is here; stmt two is here.")  # fmt: skip
    out = run(LocalJudge(emb, T), "context_recall", sample)
    assert [v["verdict"] for v in out.detail.verdicts] == [True, False]
    assert out.detail.verdicts[0]["chunk"] == 0 and out.detail.verdicts[0]["sentence_index"] == 0
    assert out.detail.verdicts[0]["reason"] == "best cosine 1.00 >= 0.80 with sentence 1 of chunk 1"
    assert out.value == 0.5


def test_context_relevancy_counts_sentences() -> None:
    emb = TableEmbedder({"Q?": _unit(0), "Yes a.": _unit(10), "No b.": _unit(80), "Yes c.": _unit(-20)})
    sample = RagSample(id="q", question="Q?", contexts=["Yes a. No b.", "Yes c."])
    out = run(LocalJudge(emb, T), "context_relevancy", sample)
    assert [(v["chunk"], v["sentence_index"], v["verdict"]) for v in out.detail.verdicts] == [
        (0, 0, True), (0, 1, False), (1, 0, True),
    ]  # fmt: skip
    assert out.value == pytest.approx(2 / 3)


def test_answer_relevancy_local_variant_clipped() -> None:
    emb = TableEmbedder({"Q?": _unit(0), "Opposite.": _unit(180), "Close.": _unit(30)})
    judge = LocalJudge(emb, T)
    neg = run(judge, "answer_relevancy", RagSample(id="q", question="Q?", answer="Opposite."))
    pos = run(judge, "answer_relevancy", RagSample(id="q", question="Q?", answer="Close."))
    assert neg.value == 0.0
    assert pos.value == pytest.approx(math.cos(math.radians(30)), abs=1e-6)
    assert pos.detail.verdicts[0]["variant"] == "local_cosine"
    assert "local variant" in (pos.detail.reason or "")


def test_missing_fields_and_unknown_metric_are_judge_errors() -> None:
    judge = LocalJudge(TableEmbedder({}), T)
    with pytest.raises(JudgeError, match="lacks reference") as info:
        run(judge, "context_recall", RagSample(id="s1", question="Q?", contexts=["x"]))
    assert info.value.cause == "missing_field"
    with pytest.raises(JudgeError, match="contain no sentences") as info:
        run(judge, "context_relevancy", RagSample(id="s1", question="Q?", contexts=[" ", "\n"]))
    assert info.value.cause == "missing_field"
    with pytest.raises(JudgeError, match="reference contains no statements") as info:
        run(judge, "context_recall", RagSample(id="s1", question="Q?", contexts=["x"], reference="1. "))
    assert info.value.cause == "missing_field"
    with pytest.raises(JudgeError, match="the reference contains no sentences") as info:
        run(judge, "context_precision", RagSample(id="s1", question="Q?", contexts=["x"], reference="- "))
    assert info.value.cause == "missing_field"
    with pytest.raises(JudgeError, match="not a judge metric"):
        run(judge, "groundedness", RagSample(id="s1", question="Q?"))
    assert judge.info().failures == 4


def test_embedder_failure_becomes_judge_error() -> None:
    judge = LocalJudge(TableEmbedder({}), T)  # every lookup raises KeyError
    with pytest.raises(JudgeError) as info:
        run(judge, "answer_relevancy", RagSample(id="s1", question="Q?", answer="A."))
    assert info.value.cause == "embedder_error"


class ShortEmbedder(TableEmbedder):
    """Drops the last vector, as a buggy plug-in embedder might."""

    async def embed(self, texts: list[str]) -> NDArray[np.float32]:
        return (await super().embed(texts))[:-1]


def test_a_short_embedder_answer_is_an_error_not_an_empty_chunk() -> None:
    emb = ShortEmbedder({"Ref.": _unit(0), "Same.": _unit(0)})
    with pytest.raises(JudgeError, match=r"returned shape \(1, 2\) for 2 texts") as info:
        run(LocalJudge(emb, T), "context_precision",
            RagSample(id="q", question="?", contexts=["Same."], reference="Ref."))  # fmt: skip
    assert info.value.cause == "embedder_error"


def test_a_bug_outside_the_embedder_is_not_called_an_embedder_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> float:
        raise ZeroDivisionError("bug")

    monkeypatch.setattr("ragmetrics.judge.backends.local_profile.split_sentences", broken)  # _context_sentences
    judge = LocalJudge(TableEmbedder({"Q?": _unit(0), "Yes a.": _unit(10)}), T)
    sample = RagSample(id="q", question="Q?", contexts=["Yes a."])
    with pytest.raises(ZeroDivisionError):
        run(judge, "context_relevancy", sample)
    from ragmetrics.judge.evaluate import evaluate_rag

    res = evaluate_rag([sample], ["context_relevancy"], judge, progress=False)
    assert [(f.cause, f.message) for f in res.failures] == [("internal_error", "ZeroDivisionError: bug")]


def test_info_says_local_and_not_llm() -> None:
    judge = LocalJudge(TableEmbedder({}), T)
    assert isinstance(judge, Judge)
    assert judge.supported_metrics() == JUDGE_METRICS
    info = judge.info()
    assert info.backend == "local" and judge.backend == "local"
    assert "not by an LLM" in info.settings["note"]
    (name,) = info.settings["thresholds"]
    assert name == info.embedding_model
    assert info.settings["thresholds"][name]["context_recall"] == 0.8
    assert "cosine(question, answer)" in info.settings["answer_relevancy"][name]  # no fitted model for it
    assert info.cache.enabled is False


def test_thresholds_validated() -> None:
    with pytest.raises(ValueError, match="context_recall"):
        LocalThresholds(context_recall=1.5)


def test_units_per_kind() -> None:
    assert units("context_precision", "b", "One. Two.") == ["One.", "Two.", "One. Two."]
    assert units("context_precision", "b", "One.") == ["One."]
    assert units("context_recall", "a", " A claim. ") == ["A claim."]
    assert units("context_relevancy", "b", "  ") == []
    with pytest.raises(ValueError):
        units("groundedness", "a", "x")  # type: ignore[arg-type]


def test_pair_similarities_matches_judge_and_handles_blank() -> None:
    emb = TableEmbedder({"Q?": _unit(0), "S.": _unit(60)})
    sims = asyncio.run(pair_similarities(emb, "context_relevancy", [("Q?", "S."), ("Q?", " ")]))
    assert sims[0] == pytest.approx(0.5, abs=1e-6)
    assert sims[1] is None


def test_window_cosine_is_the_cosine_of_the_normalised_sum() -> None:
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(6, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    query = vectors[0]
    pairs = [(1, 2), (2, 3), (4, 5)]
    got = window_cosines(vectors, pairs, query)
    for (a, b), cos in zip(pairs, got, strict=True):
        summed = vectors[a] + vectors[b]
        assert cos == pytest.approx(float(summed @ query / np.linalg.norm(summed)), abs=1e-6)
        # by linearity: the two sentences' cosines over the length of their sum
        assert cos == pytest.approx(
            float((vectors[a] @ query + vectors[b] @ query) / np.linalg.norm(summed)), abs=1e-6
        )
    assert window_cosines(vectors, [], query) == []


def test_a_window_never_joins_two_chunks(embedder) -> None:  # type: ignore[no-untyped-def]
    """A chunk's grade is its own: the chunk before it cannot lend it a window."""
    question = "Which function reads a JSON document from a file?"
    answering = "The json.load() function reads a JSON document from a file object."
    follow_up = "It returns the Python objects the document describes."
    alone = RagSample(id="a", question=question, contexts=[follow_up])
    after = RagSample(id="b", question=question, contexts=[answering, follow_up])
    joined = RagSample(id="c", question=question, contexts=[f"{answering} {follow_up}"])
    judge = LocalJudge(embedder)
    grade_alone = run(judge, "passage_relevance", alone).detail.verdicts[0]
    grades_after = run(judge, "passage_relevance", after).detail.verdicts
    assert grades_after[1]["score"] == grade_alone["score"]
    # within one chunk the follow-up sentence shares the answering sentence's window
    sentences = run(judge, "context_relevancy", joined).detail.verdicts
    assert sentences[1]["score"] > run(judge, "context_relevancy", alone).detail.verdicts[0]["score"]


def test_real_model_end_to_end_is_deterministic(embedder) -> None:  # type: ignore[no-untyped-def]
    judge = LocalJudge(embedder)
    sample = RagSample(
        id="s",
        question="How do I parse a JSON string in Python?",
        contexts=[
            "The json.loads() function parses a JSON document held in a str and returns Python objects.",
            "The csv module reads and writes comma-separated values files.",
        ],
        answer="Call json.loads() on the string to get Python objects.",
        reference="Use json.loads() to turn a JSON string into Python objects.",
    )
    first = {m: run(judge, m, sample) for m in JUDGED}
    second = {m: run(LocalJudge(embedder), m, sample) for m in JUDGED}
    for m in JUDGED:
        assert first[m] == second[m]
        assert 0.0 <= first[m].value <= 1.0
    assert first["context_precision"].value == 1.0  # the json chunk ranks first and is useful
    assert [v["verdict"] for v in first["context_precision"].detail.verdicts] == [True, False]
    assert first["context_recall"].value == 1.0
    assert first["answer_relevancy"].value > 0.5


def test_resolve_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RM_TEST_KEY", raising=False)
    assert resolve_backend(JudgeSettings(api_key_env="RM_TEST_KEY"))[0] == "local"
    monkeypatch.setenv("RM_TEST_KEY", "  ")
    assert resolve_backend(JudgeSettings(api_key_env="RM_TEST_KEY"))[0] == "local"
    monkeypatch.setenv("RM_TEST_KEY", "sk-secret")
    backend, why = resolve_backend(JudgeSettings(api_key_env="RM_TEST_KEY"))
    assert backend == "openai" and "sk-secret" not in why
    assert resolve_backend(JudgeSettings(api_key_env="RM_TEST_KEY", backend="local"))[0] == "local"
    monkeypatch.delenv("RM_TEST_KEY")
    assert (
        resolve_backend(JudgeSettings(api_key_env="RM_TEST_KEY", base_url="http://127.0.0.1:9/v1"))[0]
        == "openai"
    )


def test_make_judge_local_with_one_line_notice(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("RM_TEST_KEY", raising=False)
    with caplog.at_level(logging.INFO, logger="ragmetrics.judge"):
        judge = make_judge(JudgeSettings(api_key_env="RM_TEST_KEY"))
    assert judge.backend == "local"
    notices = [r.getMessage() for r in caplog.records if r.name == "ragmetrics.judge"]
    assert len(notices) == 1 and "\n" not in notices[0] and "local judge" in notices[0]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ragmetrics.judge"):
        assert make_judge(JudgeSettings(backend="local")).backend == "local"
    assert not [r for r in caplog.records if r.name == "ragmetrics.judge"]
