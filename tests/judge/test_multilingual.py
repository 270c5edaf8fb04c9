"""Judge metrics on Japanese, Russian and German text: the LLM judge (real openai client, loopback server)
and the local judge are asked for one verdict per sentence or statement as our splitter counts them, and
answer_relevancy's questions are asked for in the language of the user's question."""

from __future__ import annotations

import pytest

from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.evaluate import evaluate_rag

from .conftest import JudgeFactory, sample
from .loopback import LoopbackServer

# Five sentences: two quoted ones inside the first do not end it.
JAPANESE_CONTEXT = (
    "佐藤は「はい。そうです。」と答えた[rel]。最近新製品の開発を担当しています。"
    "彼は東京に住んでいます！本当？会議は3.5時間続いた[rel]。"
)


def test_llm_judge_makes_one_verdict_per_japanese_sentence(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    judge = make_judge(use_cache=False)
    res = evaluate_rag(
        [sample("ja", question="佐藤は何と答えましたか？", contexts=[JAPANESE_CONTEXT])],
        ["context_relevancy"],
        judge,
        progress=False,
    )
    verdicts = res.details["ja"]["context_relevancy"].verdicts
    assert len(verdicts) == 5
    assert [v["verdict"] for v in verdicts] == [True, False, False, False, True]
    assert res.per_query["ja"]["context_relevancy"] == pytest.approx(2 / 5)
    (record,) = server.records
    assert 'sentences count="5"' in record.user
    assert res.metadata.judge is not None
    assert res.metadata.judge.settings["languages"] == {"ja": 1}


def test_llm_judge_counts_russian_reference_statements(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    judge = make_judge(use_cache=False)
    reference = "Это метрика, т.е. число [attr]. Она растёт очень быстро; она падает редко и медленно. Да?"
    res = evaluate_rag(
        [sample("ru", question="Что это?", reference=reference)], ["context_recall"], judge, progress=False
    )
    # "т.е." does not end the first sentence; the semicolon cuts the second into two statements
    verdicts = res.details["ru"]["context_recall"].verdicts
    assert len(verdicts) == 4
    assert res.per_query["ru"]["context_recall"] == pytest.approx(1 / 4)


@pytest.mark.parametrize(
    ("question", "language", "expected"),
    [
        ("佐藤はどこに住んでいますか？", None, "Japanese (ja)"),
        ("사토는 어디에 살아요?", None, "Korean (ko)"),
        ("Где живёт Сато?", None, "Russian (ru)"),
        ("Wo wohnt Sato?", "de", "German (de)"),  # Latin script: the language is set, not detected
        ("Where does Sato live?", None, "English (en)"),
    ],
)
def test_answer_relevancy_questions_are_asked_for_in_the_question_language(
    make_judge: JudgeFactory, server: LoopbackServer, question: str, language: str | None, expected: str
) -> None:
    judge = make_judge(use_cache=False)
    fields = {"question": question, "answer": "東京です。"}
    if language is not None:
        fields["language"] = language
    evaluate_rag([sample("q", **fields)], ["answer_relevancy"], judge, progress=False)
    chat = [r for r in server.records if r.path.endswith("/chat/completions")]
    assert len(chat) == 1
    assert f"Write the questions in: {expected}" in chat[0].user


def test_a_set_language_decides_segmentation(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    judge = make_judge(use_cache=False)
    context = "Am 3. Oktober ist Feiertag [rel]. Die Geschäfte sind zu."
    res = evaluate_rag(
        [
            sample("auto", contexts=[context]),
            sample("de", contexts=[context], language="de"),
        ],
        ["context_relevancy"],
        judge,
        progress=False,
    )
    assert len(res.details["auto"]["context_relevancy"].verdicts) == 3  # read as English: "3." ends one
    assert len(res.details["de"]["context_relevancy"].verdicts) == 2  # a German ordinal
    assert res.metadata.judge is not None
    assert res.metadata.judge.settings["language_source"] == "set: de"


def test_a_language_that_is_not_a_code_is_refused() -> None:
    with pytest.raises(ValueError, match="ISO 639"):
        RagSample(id="x", question="q", language="Japanese")


def test_local_judge_makes_one_verdict_per_japanese_sentence() -> None:
    res = evaluate_rag(
        [
            RagSample(
                id="ja", question="佐藤は何と答えましたか？", contexts=[JAPANESE_CONTEXT.replace("[rel]", "")]
            )
        ],
        ["context_relevancy"],
        LocalJudge(),
        progress=False,
    )
    verdicts = res.details["ja"]["context_relevancy"].verdicts
    assert len(verdicts) == 5
    assert verdicts[0]["sentence"].startswith("佐藤は「はい。そうです。」")


def test_the_local_judge_counts_samples_per_model_not_units() -> None:
    samples = [
        RagSample(
            id="ja", question="佐藤はどこですか？", contexts=["佐藤は東京にいます。"], answer="東京です。"
        ),
        RagSample(id="en", question="Where is Sato?", contexts=["Sato is in Tokyo."], answer="In Tokyo."),
    ]
    judge = LocalJudge()
    evaluate_rag(
        samples, ["context_relevancy", "answer_relevancy", "passage_relevance"], judge, progress=False
    )
    assert judge.info().settings["samples_per_model"] == {
        "multilingual-e5-small-q4": 1,
        "all-MiniLM-L6-v2-onnx-int8": 1,
    }
