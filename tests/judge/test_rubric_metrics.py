"""Rubric metrics: definitions checked when they load, the generated prompt and strict verdict model, scores
by hand through the loopback OpenAI server (scales, checklists, G-Eval weighting and its fallbacks), the
cache keyed by the rubric's content, and the local judge's "not applicable"."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from pydantic import ValidationError

from ragmetrics.errors import NotApplicable
from ragmetrics.judge import formulas
from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.openai.logprobs import TokenChoice, value_distribution
from ragmetrics.judge.prompts import default_library
from ragmetrics.judge.registry import judge_metric_names, registered_metrics, spec
from ragmetrics.judge.rubric import RubricMetric
from ragmetrics.trust.agreement import cohen_kappa

from .conftest import JudgeFactory
from .loopback import LoopbackServer

LEVELS = [
    {"label": "poor", "score": 0.0},
    {"label": "fair", "score": 0.4},
    {"label": "good", "score": 1.0},
]


def rubric(**overrides: Any) -> RubricMetric:
    data: dict[str, Any] = {
        "name": "tone",
        "type": "rubric",
        "question": "Is the answer polite?",
        "scale": {"type": "ordinal", "levels": LEVELS},
    }
    data.update(overrides)
    return RubricMetric.model_validate(data)


CHECKLIST = {
    "combine": "weighted_share",
    "checks": [
        {"id": "window", "check": "states the window", "weight": 2},
        {"id": "condition", "check": "states the condition"},
        {"id": "honest", "check": "promises nothing else", "weight": 1},
    ],
}


def checklist(**overrides: Any) -> RubricMetric:
    return rubric(
        name="policy", scale=None, checklist=CHECKLIST, reads=["question", "answer", "contexts"], **overrides
    )


def sample(answer: str, **kw: Any) -> RagSample:
    return RagSample(id=kw.pop("id", "s1"), question="Can I return it?", answer=answer,
                     contexts=["Returns within 30 days."], **kw)  # fmt: skip


def _score(judge: Any, metric: str, s: RagSample) -> Any:
    async def go() -> Any:
        try:
            return await judge.score(metric, s)
        finally:
            await judge.aclose()

    return asyncio.run(go())


# -- definitions -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"checklist": CHECKLIST}, "exactly one of 'scale' or 'checklist'"),
        ({"scale": None}, "exactly one of 'scale' or 'checklist'"),
        ({"scale": {"type": "ordinal", "levels": [LEVELS[2], LEVELS[0]]}}, "must increase"),
        ({"scale": {"type": "ordinal", "levels": [LEVELS[0], {**LEVELS[1], "label": "POOR"}]}}, "distinct"),
        ({"scale": {"type": "ordinal", "levels": [{"label": f"l{i}", "score": i} for i in range(10)]}}, "at most 9"),
        ({"scale": {"type": "binary", "yes": 1, "no": 1}}, "score differently"),
        ({"scale": {"type": "categorical", "categories": LEVELS, "weighting": "probability"}}, "'sampled'"),
        ({"reads": ["answer", "context_ids"]}, "not text a judge can read"),
        ({"reads": ["answer", "Ticket Id"]}, "neither a sample field nor a column"),
        ({"examples": [{"inputs": {"question": "q"}, "rating": "good", "reason": "A fine answer here."}]},
         "missing answer"),
        ({"examples": [{"inputs": {"question": "q", "answer": "a"}, "rating": "great",
                        "reason": "A fine answer here."}]}, "'great' is not a level"),
        ({"examples": [{"inputs": {"question": "q", "answer": "a"}, "rating": "good", "reason": "ok"}]},
         "at least 12 characters"),
        ({"labelled": [{"inputs": {"question": "q", "answer": "a"}, "checks": {"x": True}}]}, "needs 'rating'"),
    ],
)  # fmt: skip
def test_bad_definitions_are_refused_with_what_is_wrong(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        rubric(**overrides)


def test_checklist_anchor_needs_a_reason_per_check() -> None:
    anchor = {
        "inputs": {"question": "q", "answer": "a", "contexts": ["c"]},
        "checks": {"window": True, "condition": False, "honest": True},
        "reasons": {"window": "It states the 30-day window.", "condition": "It never names the condition."},
    }
    with pytest.raises(ValidationError, match="for every check"):
        checklist(examples=[anchor])
    anchor["reasons"]["honest"] = "Nothing it says goes beyond the context."  # type: ignore[index]
    assert checklist(examples=[anchor]).examples[0].checks == anchor["checks"]


def test_labels_accept_the_level_name_or_number_and_yes_no_as_booleans() -> None:
    tone = rubric()
    assert [tone.rating_of(x) for x in ("poor", "GOOD", 2)] == ["1", "3", "2"]
    binary = rubric(scale={"type": "binary"})
    assert [binary.rating_of(x) for x in (True, False, "Yes")] == ["yes", "no", "yes"]
    with pytest.raises(ValueError, match="level's label or its number"):
        tone.rating_of(4)


# -- prompt and verdict model ----------------------------------------------------------------------------


def test_the_verdict_model_allows_only_the_scales_ratings() -> None:
    model = rubric().verdict_model
    assert model.model_validate({"reason": "r", "rating": 3})
    for bad in ({"reason": "r", "rating": 4}, {"reason": "r", "rating": "good"}, {"rating": 1},
                {"reason": "r", "rating": 1, "extra": 1}):  # fmt: skip
        with pytest.raises(ValidationError):
            model.model_validate(bad)
    categorical = rubric(scale={"type": "categorical", "categories": LEVELS}).verdict_model
    assert categorical.model_validate({"reason": "r", "rating": "fair"})
    with pytest.raises(ValidationError):
        categorical.model_validate({"reason": "r", "rating": "excellent"})


def test_prompt_version_follows_what_is_sent_and_only_that() -> None:
    texts = default_library().rubric
    base = rubric().prompt(texts)
    assert base.name == "rubric:tone" and base.system.startswith("# rubric:tone\n")
    assert "1 = poor" in base.system and "Is the answer polite?" in base.system
    # the description is for reports, not sent: same prompt, same cached verdicts
    assert rubric(description="for the report").prompt(texts).version == base.version
    edited = [
        rubric(question="Is the answer polite and short?"),
        rubric(scale={"type": "ordinal", "levels": [*LEVELS[:2], {"label": "great", "score": 1.0}]}),
        rubric(reads=["question", "answer", "reference"]),
        rubric(
            examples=[
                {
                    "inputs": {"question": "q", "answer": "Go away."},
                    "rating": "poor",
                    "reason": "It dismisses the customer.",
                }
            ]
        ),
    ]
    assert len({base.version, *(r.prompt(texts).version for r in edited)}) == 1 + len(edited)


def test_anchors_are_few_shot_pairs_and_copies_of_them_are_caught() -> None:
    anchor = {"inputs": {"question": "Why late?", "answer": "Not our problem."}, "rating": "poor",
              "reason": "It blames the customer and offers nothing."}  # fmt: skip
    prompt = rubric(examples=[anchor]).prompt(default_library().rubric)
    messages = prompt.messages({"question": "Q", "answer": "A"}, default_library().shared)
    assert messages[2] == {"role": "assistant", "content": '{"reason": "It blames the customer and offers '
                           'nothing.", "rating": 1}'}  # fmt: skip
    copied = {"reason": "It blames the customer and offers nothing.", "rating": 1}
    assert prompt.copied_example(copied, {"question": "Q", "answer": "A"}) == 1


def test_the_rubric_and_its_scores_enter_the_one_registry() -> None:
    tone = rubric().to_spec("test")
    with registered_metrics([tone]):
        assert "tone" in judge_metric_names() and spec("tone").plan == "rubric"
        assert spec("tone").value_range == (0.0, 1.0)
    assert "tone" not in judge_metric_names()
    scaled = rubric(
        scale={"type": "ordinal", "levels": [{"label": "a", "score": 1}, {"label": "b", "score": 5}]}
    )
    assert scaled.to_spec("t").value_range == (1.0, 5.0)


# -- formulas by hand ------------------------------------------------------------------------------------


def test_formulas_by_hand() -> None:
    assert formulas.checklist_score([True, False, True], [2, 1, 1], "all") == 0.0
    assert formulas.checklist_score([True, False, True], [2, 1, 1], "any") == 1.0
    assert formulas.checklist_score([True, False, True], [2, 1, 1], "weighted_share") == 0.75
    scores = {"1": 0.0, "2": 0.4, "3": 1.0}
    assert formulas.probability_weighted_score({"2": 0.3, "3": 0.6}, scores) == pytest.approx(
        (0.3 * 0.4 + 0.6 * 1.0) / 0.9
    )
    with pytest.raises(ValueError, match="no probability"):
        formulas.probability_weighted_score({"9": 1.0}, scores)


def test_cohen_kappa_by_hand() -> None:
    # 50 items: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> po 0.7, pe 0.5, kappa 0.4
    a = [True] * 25 + [False] * 25
    b = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    assert cohen_kappa(a, b, [False, True]) == pytest.approx(0.4)
    # quadratic weights on 3 levels: one item off by two out of three -> 1 - (4/3) / E
    first, second = [1, 2, 3], [1, 2, 1]
    observed = 4 / 3
    expected = sum((i - j) ** 2 for i in first for j in second) / 9
    assert cohen_kappa(first, second, [1, 2, 3], weights="quadratic") == pytest.approx(
        1 - observed / expected
    )
    assert cohen_kappa([1, 1], [1, 1], [1, 2]) == 1.0  # no expected disagreement: not a NaN


def test_value_distribution_reads_the_rating_token() -> None:
    content = '{"reason": "polite", "rating": 3}'
    start = content.index("3")
    tokens = [
        TokenChoice(content[:start], 0.0, ()),
        TokenChoice(
            "3",
            math.log(0.6),
            (("3", math.log(0.6)), ("2", math.log(0.3)), (" 1", math.log(0.05)), ("x", math.log(0.05))),
        ),
        TokenChoice("}", 0.0, ()),
    ]
    got = value_distribution(content, tokens, "rating", ("1", "2", "3"))
    assert got == pytest.approx({"3": 0.6, "2": 0.3, "1": 0.05})
    # a token that holds the opening quote with the value: the quote is the prefix of every alternative
    content = '{"reason": "ok", "rating": "yes"}'
    start = content.index('"yes') + 0
    tokens = [TokenChoice(content[:start], 0.0, ()),
              TokenChoice('"yes', math.log(0.7), (('"yes', math.log(0.7)), ('"no', math.log(0.2)))),
              TokenChoice('"}', 0.0, ())]  # fmt: skip
    assert value_distribution(content, tokens, "rating", ("yes", "no")) == pytest.approx(
        {"yes": 0.7, "no": 0.2}
    )
    # tokens that do not spell the content, or a reason that quotes the key, never mislead it
    assert value_distribution(content + " ", tokens, "rating", ("yes", "no")) is None
    quoted = '{"reason": "the \\"rating\\": 1 was wrong", "rating": 2}'
    cut = quoted.rindex("2")
    sure = TokenChoice("2", 0.0, (("2", 0.0), ("1", -20.0)))
    tokens = [TokenChoice(quoted[:cut], 0.0, ()), sure, TokenChoice("}", 0.0, ())]
    assert value_distribution(quoted, tokens, "rating", ("1", "2")) == pytest.approx({"2": 1.0, "1": math.exp(-20)})
    # only the sampled token's own log-probability (top_logprobs empty, or that token alone): no distribution,
    # or the rating would read as certain whatever the model thought
    for alone in ((), (("2", math.log(0.6)),)):
        tokens = [TokenChoice(quoted[:cut], 0.0, ()), TokenChoice("2", math.log(0.6), alone), TokenChoice("}", 0.0, ())]
        assert value_distribution(quoted, tokens, "rating", ("1", "2")) is None


# -- through the loopback server -------------------------------------------------------------------------


def test_scale_probability_weighted_and_sampled(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    tone = rubric()
    with registered_metrics([tone.to_spec("test")]):
        out = _score(make_judge(), "tone", sample("Sure. [rating:3] [probs:2=0.25,3=0.75]"))
        assert out.value == pytest.approx(0.25 * 0.4 + 0.75 * 1.0)
        (verdict,) = out.detail.verdicts
        assert verdict["rating"] == "good" and verdict["weighting"] == "probability"
        assert verdict["probabilities"] == {"fair": 0.25, "good": 0.75}
        # no logprobs in the answer: the sampled level's score, and the detail says why
        out = _score(make_judge(), "tone", sample("Sure. [rating:2]", id="s2"))
        assert out.value == 0.4 and "no log-probabilities" in str(out.detail.reason)
    sent = [r for r in server.records if r.prompt == "rubric:tone"]
    assert len(sent) == 2


def test_a_server_refusing_logprobs_gets_the_sampled_level(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    server.state.refuse_logprobs = True
    with registered_metrics([rubric().to_spec("test")]):
        out = _score(make_judge(), "tone", sample("Fine. [rating:2] [probs:2=0.5,3=0.5]"))
    assert out.value == 0.4 and out.detail.verdicts[0]["weighting"] == "sampled"
    statuses = [r.status for r in server.records if r.prompt == "rubric:tone"]
    assert statuses == [400, 200]  # refused once, then asked without logprobs


def test_sampled_weighting_never_asks_for_logprobs(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    binary = rubric(name="polite", scale={"type": "binary", "weighting": "sampled", "yes": 1, "no": 0})
    with registered_metrics([binary.to_spec("test")]):
        out = _score(make_judge(), "polite", sample("Yes. [rating:yes] [probs:yes=0.5,no=0.5]"))
    assert out.value == 1.0 and out.detail.verdicts[0]["weighting"] == "sampled"


def test_checklist_each_check_with_its_reason(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    with registered_metrics([checklist().to_spec("test")]):
        out = _score(make_judge(), "policy", sample("Within 30 days. [met:1,3]"))
    assert out.value == pytest.approx((2 + 1) / 4)
    assert [(v["check"], v["verdict"], v["reason"]) for v in out.detail.verdicts] == [
        ("window", True, "scripted check 1"),
        ("condition", False, "scripted check 2"),
        ("honest", True, "scripted check 3"),
    ]
    (request,) = [r for r in server.records if r.prompt == "rubric:policy"]
    assert '<chunk id="1">' in str(request.user)  # the contexts it reads, numbered like every prompt's


def test_a_checklist_answer_missing_a_check_is_repaired(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    server.inject("wrong_count", times=1, prompt="rubric:policy")
    with registered_metrics([checklist().to_spec("test")]):
        out = _score(make_judge(), "policy", sample("x [met:2]"))
    assert out.value == 0.25
    assert [r.repair for r in server.records if r.prompt == "rubric:policy"] == [False, True]


def test_a_missing_column_fails_that_sample_with_its_name(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    reads_column = rubric(name="ticket", reads=["answer", "ticket_id"])
    with registered_metrics([reads_column.to_spec("test")]):
        with pytest.raises(Exception, match="no value in column 'ticket_id'"):
            _score(make_judge(), "ticket", sample("a"))
        out = _score(make_judge(), "ticket", sample("a [rating:3]", extra={"ticket_id": "T-1"}))
    assert out.value == 1.0
    assert "<ticket_id>\nT-1\n</ticket_id>" in str(server.records[-1].user)


def test_editing_a_rubric_re_asks_only_its_verdicts(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    def night(tone: RubricMetric) -> None:
        with registered_metrics([tone.to_spec("test"), checklist().to_spec("test")]):
            judge = make_judge()

            async def go() -> None:
                try:
                    for n in range(3):
                        s = sample(f"answer {n} [rating:2] [met:1]", id=f"s{n}")
                        await judge.score("tone", s)
                        await judge.score("policy", s)
                finally:
                    await judge.aclose()

            asyncio.run(go())

    night(rubric())
    assert server.count(prompt="rubric:tone") == 3 and server.count(prompt="rubric:policy") == 3
    server.reset_records()
    night(rubric())  # the same definitions: every verdict from the cache
    assert server.count() == 0
    night(rubric(question="Is the answer polite and brief?"))  # one rubric edited
    assert server.count(prompt="rubric:tone") == 3 and server.count(prompt="rubric:policy") == 0


def test_the_local_judge_says_not_applicable_with_its_reason() -> None:
    with (
        registered_metrics([rubric().to_spec("test")]),
        pytest.raises(NotApplicable, match="needs an LLM judge"),
    ):
        _score(LocalJudge(), "tone", sample("a"))


def test_value_distribution_refuses_impossible_log_probabilities() -> None:
    content = '{"reason": "x", "rating": 2}'
    cut = content.rindex("2")
    hostile = (
        ("2", 1000.0),
        ("1", float("nan")),
        ("3", -0.0000001),
        ("1", math.log(0.9)),
        (" 1", math.log(0.9)),
    )
    tokens = [TokenChoice(content[:cut], 0.0, ()), TokenChoice("2", 5.0, hostile), TokenChoice("}", 0.0, ())]
    got = value_distribution(content, tokens, "rating", ("1", "2", "3"))
    assert got is not None and "2" not in got  # +5 and +1000 are no probabilities, and never overflow
    assert got["1"] == 1.0 and got["3"] == pytest.approx(1.0)  # two alternatives for "1" summed, capped at 1
