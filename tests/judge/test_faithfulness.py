"""Faithfulness: answer statements cut in code, each judged supported by the contexts (with the chunk that
supports it), score = supported / statements; an answer that declines to answer is not applicable."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.formulas import faithfulness_score
from ragmetrics.judge.text.refusal import is_refusal

from .conftest import JudgeFactory, sample
from .loopback import LoopbackServer

CONTEXTS = ["Paris is the capital of France [useful].", "The Seine flows through Paris."]


def test_two_of_three_statements_supported_is_two_thirds(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    s = sample(
        "f1",
        contexts=CONTEXTS,
        answer="Paris is the capital of France [sup]. The Seine flows through it [sup]. It has ten million bridges.",
    )
    res = evaluate_rag([s], ["faithfulness"], make_judge(), progress=False)
    assert res.failures == [] and res.not_applicable == []
    assert res.per_query["f1"]["faithfulness"] == pytest.approx(2 / 3)
    assert round(res.per_query["f1"]["faithfulness"] or 0, 4) == 0.6667
    verdicts = res.details["f1"]["faithfulness"].verdicts
    assert [v["verdict"] for v in verdicts] == [True, True, False]
    assert verdicts[0]["chunk"] == 0 and "chunk" not in verdicts[2]  # the supporting chunk, 0-based; none
    assert verdicts[2]["statement"] == "It has ten million bridges."
    # One call per sample, statements numbered by us.
    (record,) = [r for r in server.records if r.prompt == "faithfulness"]
    assert '<statement id="3">' in record.user


def test_formula_by_hand() -> None:
    assert faithfulness_score([True, True, False]) == pytest.approx(0.6667, abs=1e-4)
    assert faithfulness_score([False]) == 0.0


@pytest.mark.parametrize(
    "answer",
    [
        "I don't know.",
        "I don't know. The retrieved passages talk about rivers, not capitals.",
        "The provided context does not say.",
        "わかりません。",
        "Не знаю.",
        "",
    ],
)
def test_a_refusal_is_not_applicable_under_both_backends(
    make_judge: JudgeFactory, server: LoopbackServer, tmp_path: Path, answer: str
) -> None:
    s = sample("r", contexts=CONTEXTS, answer=answer)
    ok = sample("ok", contexts=CONTEXTS, answer="Paris is the capital of France [sup].")
    for judge in (make_judge(), LocalJudge()):
        res = evaluate_rag([s, ok], ["faithfulness"], judge, progress=False)
        assert res.failures == []
        assert res.per_query["r"]["faithfulness"] is None
        (na,) = res.not_applicable
        assert (na.query_id, na.metric) == ("r", "faithfulness")
        assert "no claim to check" in na.reason
        assert res.not_applicable_count("faithfulness") == 1
        assert res.aggregate["faithfulness"] == res.per_query["ok"]["faithfulness"]  # over values only
    assert not any(r.prompt == "faithfulness" and "declines" in r.user for r in server.records)


def test_a_missing_answer_is_still_a_failure_not_a_refusal(make_judge: JudgeFactory) -> None:
    s = sample("m", contexts=CONTEXTS)
    del s["answer"]
    res = evaluate_rag([s], ["faithfulness"], make_judge(), progress=False)
    assert [f.cause for f in res.failures] == ["missing_field"] and res.not_applicable == []


def test_a_supported_statement_must_name_a_chunk_that_exists() -> None:
    """Chunk 7 of 2, or a chunk for an unsupported statement, is invalid output (repaired, never recorded)."""
    from pydantic import ValidationError

    from ragmetrics.judge.verdicts import SupportVerdicts

    def check(supported: bool, chunk: int) -> None:
        SupportVerdicts.model_validate(
            {"statements": [{"statement": 1, "reason": "r", "supported": supported, "chunk": chunk}]},
            context={"count": 1, "chunks": 2},
        )

    check(True, 2)
    check(False, 0)
    for supported, chunk in ((True, 7), (True, 0), (False, 1)):
        with pytest.raises(ValidationError, match="chunk"):
            check(supported, chunk)


def test_a_wrong_statement_count_is_repaired(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    server.inject("wrong_count", times=1, prompt="faithfulness")
    res = evaluate_rag([sample("w", contexts=CONTEXTS, answer="Paris is the capital [sup].")], ["faithfulness"],
                       make_judge(), progress=False)  # fmt: skip
    assert res.failures == [] and res.per_query["w"]["faithfulness"] == 1.0
    assert any(r.repair for r in server.records if r.prompt == "faithfulness")


def test_local_faithfulness_is_the_weaker_similarity_variant(tmp_path: Path) -> None:
    s = sample(
        "l",
        contexts=["The Eiffel Tower was completed in 1889 for the World's Fair in Paris."],
        answer="The Eiffel Tower was finished in 1889 for a world fair in Paris. Penguins live in Antarctica.",
    )
    res = evaluate_rag([s], ["faithfulness"], LocalJudge(), progress=False)
    verdicts = res.details["l"]["faithfulness"].verdicts
    assert [v["verdict"] for v in verdicts] == [True, False]
    assert res.per_query["l"]["faithfulness"] == 0.5


@pytest.mark.parametrize(
    ("text", "refusal"),
    [("I'm not sure what you mean.", True), ("I cannot answer that from the documents.", True),
     ("The documents do not mention a release date.", True), ("不知道。", True), ("모르겠습니다.", True),
     ("Paris is the capital.", False), ("I know three ways to do it.", False),
     ("Nothing in Python forbids this.", False)],
)  # fmt: skip
def test_refusal_rule(text: str, refusal: bool) -> None:
    assert is_refusal(text) is refusal
