"""Turns of a conversation (issue 42): a turn's faithfulness may rest on what earlier turns retrieved or
answered, never on later turns; every other metric judges the turn alone. Checked through the real client
against the loopback server (which supports a ``[fact:X]`` statement only when the prompt shows a chunk with
the same marker) and with the local judge on plain text, each against the single-turn version."""

from __future__ import annotations

from typing import Any

import pytest

from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.conversation import batches_keeping_conversations, earlier_turns, with_history
from ragmetrics.judge.evaluate import evaluate_rag

from .conftest import JudgeFactory
from .loopback import LoopbackServer


def _turns(conversation: bool) -> list[dict[str, Any]]:
    ids = {"conversation_id": "c1"} if conversation else {}
    return [
        {"id": "t1", "question": "How long does sunlight take to reach Earth?", "turn": 1, **ids,
         "contexts": ["Light from the Sun reaches Earth in about 8 minutes [fact:eight]."],
         "answer": "About 8 minutes [fact:eight]."},
        {"id": "t2", "question": "And to reach Mars?", "turn": 2, **ids,
         "contexts": ["Mars is on average 1.5 times as far from the Sun as Earth [fact:mars]."],
         # The first statement rests on turn 1's context only; the second on this turn's; the third on nothing.
         "answer": "Earth gets it in 8 minutes [fact:eight]. Mars is 1.5 times as far [fact:mars]. "
                   "So about 12.7 minutes [fact:none]."},
        {"id": "t3", "question": "Thanks!", "turn": 3, **ids,
         "contexts": ["Jupiter's light delay is about 43 minutes [fact:jupiter]."], "answer": "You're welcome."},
    ]  # fmt: skip


def _plain(sample: dict[str, Any]) -> dict[str, Any]:
    if "conversation_id" not in sample:
        sample = {k: v for k, v in sample.items() if k != "turn"}
    return sample


def test_a_turn_may_rest_on_an_earlier_turn_through_the_llm_judge(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    turns = evaluate_rag(_turns(True), ["faithfulness"], make_judge(), progress=False)
    alone = evaluate_rag([_plain(s) for s in _turns(False)], ["faithfulness"], make_judge(), progress=False)
    assert alone.per_query["t2"]["faithfulness"] == pytest.approx(1 / 3)  # turn 1's fact looks invented
    assert turns.per_query["t2"]["faithfulness"] == pytest.approx(2 / 3)  # ... and is not, in the conversation
    verdicts = turns.details["t2"]["faithfulness"].verdicts
    assert [v["verdict"] for v in verdicts] == [True, True, False]
    # What the judge was shown for turn 2: its own chunk first, then turn 1's context and answer; never turn 3's.
    prompts = [r.user for r in server.records if r.prompt == "faithfulness" and "And to reach Mars?" in r.user]
    with_earlier = [p for p in prompts if "[fact:eight]." in p and "About 8 minutes" in p]
    assert with_earlier and all("[fact:jupiter]" not in p for p in prompts)
    assert with_earlier[0].index("[fact:mars]") < with_earlier[0].index("Light from the Sun")
    assert turns.per_query["t1"]["faithfulness"] == alone.per_query["t1"]["faithfulness"] == 1.0


def test_a_turn_may_rest_on_an_earlier_turn_with_the_local_judge() -> None:
    def conversation(ids: bool) -> list[dict[str, Any]]:
        extra = {"conversation_id": "c"} if ids else {}
        return [
            {"id": "a", "question": "What is the capital of France?", **extra, **({"turn": 0} if ids else {}),
             "contexts": ["Paris is the capital and largest city of France."], "answer": "Paris is the capital of France."},
            {"id": "b", "question": "What river flows through it?", **extra, **({"turn": 1} if ids else {}),
             "contexts": ["The Seine flows through the centre of Paris."],
             "answer": "The Seine flows through Paris. Paris is the capital of France."},
        ]  # fmt: skip

    judge = LocalJudge()
    turns = evaluate_rag(conversation(True), ["faithfulness"], judge, progress=False)
    alone = evaluate_rag(conversation(False), ["faithfulness"], judge, progress=False)
    assert turns.per_query["b"]["faithfulness"] == 1.0
    assert (alone.per_query["b"]["faithfulness"] or 0) < 1.0


def test_other_metrics_judge_the_turn_alone_and_history_is_ordered_by_turn() -> None:
    samples = [RagSample.model_validate(s) for s in _turns(True)]
    reordered = [samples[2], samples[0], samples[1]]
    earlier = earlier_turns(reordered)
    assert [t.id for t in earlier["t3"]] == ["t1", "t2"] and [t.id for t in earlier["t2"]] == ["t1"]
    assert "t1" not in earlier
    view = with_history(samples[1], earlier["t2"])
    assert view.contexts == [*(samples[1].contexts or []), *(samples[0].contexts or []), samples[0].answer]
    assert view.context_ids is None and view.question == samples[1].question
    result = evaluate_rag(reordered, ["context_utilization"], LocalJudge(), progress=False)
    alone = evaluate_rag([_plain(s) for s in _turns(False)], ["context_utilization"], LocalJudge(), progress=False)
    assert result.per_query == alone.per_query


def test_a_worker_batch_holds_whole_conversations() -> None:
    samples = [RagSample(id=f"s{i}", question="q", conversation_id=c, turn=i)
               for i, c in enumerate(["a", "b", "a", "c", "a", "b", "d"])]  # fmt: skip
    batches = batches_keeping_conversations(samples, 2)
    assert batches == [[0, 1, 2, 4, 5], [3, 6]]
    assert sorted(i for b in batches for i in b) == list(range(7))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"conversation_id": "c"}, "give both or neither"),
        ({"turn": 2}, "give both or neither"),
        ({"conversation_id": " ", "turn": 1}, "conversation_id is blank"),
        ({"conversation_id": "c", "turn": -1}, "greater than or equal to 0"),
    ],
)
def test_a_turn_needs_its_conversation(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RagSample(id="x", question="q", **fields)
