"""Conversation metrics (issue 42): the shipped rubrics read the transcript of the conversation and are
scored once per conversation, on its last turn; the earlier turns are not applicable to them. Checked
through the real client against the loopback server, which rates a rubric by a ``[rating:X]`` marker in
what it was shown (so a rating found only in an earlier turn proves the transcript was sent)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragmetrics.judge.conversation import SHIPPED_RUBRICS, shipped_rubric_path, transcript
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.own_metrics import load_metric_file
from ragmetrics.judge.registry import registered_metrics
from ragmetrics.nightly.config import NightlyConfig, load_config

from .conftest import JudgeFactory
from .loopback import LoopbackServer


def _conversations() -> list[dict[str, Any]]:
    return [
        {"id": "a1", "conversation_id": "a", "turn": 1, "question": "I am vegetarian. Suggest a dinner.",
         "answer": "A lentil curry [rating:3]."},
        {"id": "a2", "conversation_id": "a", "turn": 2, "question": "Something quicker?", "answer": "An omelette."},
        {"id": "b2", "conversation_id": "b", "turn": 2, "question": "And the second?", "answer": "Done."},
        {"id": "b1", "conversation_id": "b", "turn": 1, "question": "Do two things.", "answer": "First done."},
        {"id": "solo", "question": "Hello?", "answer": "Hi [rating:2]."},
    ]  # fmt: skip


def _spec(name: str) -> Any:
    return load_metric_file(shipped_rubric_path(name)).to_spec("shipped")


def test_every_shipped_rubric_loads_and_reads_the_conversation() -> None:
    for name in SHIPPED_RUBRICS:
        rubric = load_metric_file(shipped_rubric_path(name))
        assert rubric.name == name and "conversation" in rubric.reads


def test_a_conversation_metric_scores_each_conversation_once_on_its_transcript(
    make_judge: JudgeFactory, server: LoopbackServer
) -> None:
    with registered_metrics([_spec("knowledge_retention")]):
        result = evaluate_rag(_conversations(), ["knowledge_retention"], make_judge(), progress=False)
    scores = {q: v["knowledge_retention"] for q, v in result.per_query.items()}
    # Conversation a: rated from turn 1's answer, seen in the transcript of its last turn (levels 0, 0.5, 1).
    assert scores["a2"] == 1.0 and scores["b2"] == 0.0 and scores["solo"] == 0.5
    assert scores["a1"] is None and scores["b1"] is None
    reasons = {(n.query_id, n.reason) for n in result.not_applicable}
    assert {q for q, _ in reasons} == {"a1", "b1"}
    assert all("scored once per conversation, on its last turn" in r for _, r in reasons)
    assert result.aggregate["knowledge_retention"] == pytest.approx(0.5)  # the mean over 3 conversations
    prompts = [r.user for r in server.records if r.prompt == "rubric:knowledge_retention"]
    assert len(prompts) == 3
    (b,) = [p for p in prompts if "Do two things." in p]
    assert b.index("[turn 1] user: Do two things.") < b.index("[turn 2] user: And the second?")


def test_a_column_the_rubric_reads_is_named_when_missing(make_judge: JudgeFactory) -> None:
    with registered_metrics([_spec("role_adherence")]):
        result = evaluate_rag(_conversations(), ["role_adherence"], make_judge(), progress=False)
    failures = {f.query_id: f for f in result.failures}
    assert set(failures) == {"a2", "b2", "solo"}
    assert all(f.cause == "missing_field" and "'role'" in f.message for f in failures.values())


def test_transcript_reads_in_turn_order() -> None:
    from ragmetrics.judge.base import RagSample

    turns = [RagSample(id="x", question="Q1", answer="A1"), RagSample(id="y", question="Q2")]
    assert transcript(turns) == "[turn 1] user: Q1\n[turn 1] assistant: A1\n[turn 2] user: Q2\n[turn 2] assistant: (no answer)"


def test_naming_a_shipped_rubric_in_a_config_loads_it(tmp_path: Path) -> None:
    path = tmp_path / "night.yaml"
    path.write_text(
        "dataset: {path: qa.jsonl}\njudge:\n  backend: openai\n  base_url: http://127.0.0.1:9/v1\n"
        "  metrics: [faithfulness, knowledge_retention, goal_accuracy]\n",
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.judge is not None
    assert {m.name for m in config.judge.custom_metrics} == {"knowledge_retention", "goal_accuracy"}
    assert isinstance(config, NightlyConfig)
