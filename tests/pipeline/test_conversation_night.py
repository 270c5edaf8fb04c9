"""The shipped conversation example as a night (issue 42): turns are clustered by conversation in the
comparisons, the report says so, the gate tests conversation means, and a turn resting on an earlier turn
is not called unfaithful."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmetrics.errors import InputError
from ragmetrics.nightly.config import load_config
from ragmetrics.nightly.dataset import read_qa
from ragmetrics.nightly.pipeline import run_pipeline

pytest.importorskip("bm25s", reason="the example's baseline run is BM25 (the 'examples' extra)")

ROOT = Path(__file__).resolve().parents[2]


def test_the_conversation_example_is_clustered_by_conversation(tmp_path: Path) -> None:
    config = load_config(ROOT / "configs" / "conversations.yaml")
    config.judge.cache_path = tmp_path / "verdicts.sqlite"  # type: ignore[union-attr]
    outcome = run_pipeline(config, write=False, progress=False)
    report = outcome.report
    assert report.metadata.clusters is not None and len(report.metadata.clusters) == 18
    assert {c.clusters for c in report.comparisons} == {6} and {c.n for c in report.comparisons} == {18}
    assert any("clustered by conversation (6 conversations, 18 turns)" in n for n in report.metadata.notes)
    assistant = {r.name: r for r in report.runs}["assistant"]
    # Turn 2 of "lists" says "A tuple is immutable", which only turn 1 retrieved.
    assert assistant.per_query["lists-2"]["faithfulness"] == 1.0
    # Turn 3 of "with" adds "It also deletes the file afterwards", which nothing supports.
    assert (assistant.per_query["with-3"]["faithfulness"] or 0) < 1.0

    baseline = tmp_path / "baseline.json"
    baseline.write_text(report.model_dump_json(), encoding="utf-8")
    again = run_pipeline(config, baseline=baseline, write=False, progress=False)
    assert again.gate is not None and again.gate.checks and not any(c.regressed for c in again.gate.checks)


def test_turn_errors_name_the_row_and_field(tmp_path: Path) -> None:
    rows = [
        {"id": "a", "question": "q1", "conversation_id": "c", "turn": 1},
        {"id": "b", "question": "q2", "conversation_id": "c", "turn": 1},
    ]
    path = tmp_path / "qa.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(InputError, match=r"row 2, field .turn.: turn 1 of conversation 'c' is also row 1"):
        read_qa(path)
    path.write_text(json.dumps({"id": "a", "question": "q", "turn": 2}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"conversation_id.*is missing while turn is given"):
        read_qa(path)
    path.write_text(json.dumps({"id": "a", "question": "q", "conversation_id": "c", "turn": 1.5}) + "\n")
    with pytest.raises(InputError, match=r"turn.*whole number"):
        read_qa(path)


def test_the_html_report_has_a_drill_down_per_conversation(tmp_path: Path) -> None:
    from ragmetrics.render.html.page import render_html

    config = load_config(ROOT / "configs" / "conversations.yaml")
    config.judge.cache_path = tmp_path / "verdicts.sqlite"  # type: ignore[union-attr]
    report = run_pipeline(config, write=False, progress=False).report
    report.metadata.nightly.samples["with-2"].tool_calls = [{"name": "open_file", "args": {"mode": "r"}}]  # type: ignore[union-attr]
    page = render_html(report)
    section = page[page.index("<h2 id='conversations'>") : page.index("<h2>Per query</h2>")]
    assert "6 conversations, 18 turns" in section and section.count("<details class='conversation'>") == 6
    lists = section[section.index(">lists</span>") :].split("</details>")[0]
    # Turns in order, each linked to its own drill-down, with its tools.
    assert lists.index(">lists-1<") < lists.index(">lists-2<") < lists.index(">lists-3<")
    assert "href='#q-" in lists
    assert "open_file({&quot;mode&quot;: &quot;r&quot;})" in section
    report.metadata.clusters = None
    assert "<h2 id='conversations'>" not in render_html(report)


def test_a_messages_list_is_read_as_turns(tmp_path: Path) -> None:
    chat = {
        "id": "chat-7", "topics": "cooking",
        "messages": [
            {"role": "system", "content": "You are a cooking assistant."},
            {"role": "user", "content": "I am vegetarian. Suggest a dinner."},
            {"role": "assistant", "content": None, "tool_calls": [{"name": "search_recipes", "args": {"diet": "veg"}}]},
            {"role": "tool", "content": "[lentil curry, omelette]"},
            {"role": "assistant", "content": "A lentil curry.", "contexts": ["Lentil curry is vegetarian."],
             "context_ids": ["r1"], "reference": "A vegetarian dish."},
            {"role": "user", "content": "Something quicker?"},
            {"role": "assistant", "content": "An omelette.", "contexts": ["An omelette takes 5 minutes."]},
            {"role": "user", "content": "Thanks"},
        ],
    }  # fmt: skip
    plain = {"id": "single", "question": "Hello?", "answer": "Hi."}
    path = tmp_path / "chats.jsonl"
    path.write_text(json.dumps(chat) + "\n" + json.dumps(plain) + "\n", encoding="utf-8")
    dataset = read_qa(path)
    by_id = {s.id: s for s in dataset.samples}
    assert list(by_id) == ["chat-7-1", "chat-7-2", "chat-7-3", "single"]
    first, second, third = by_id["chat-7-1"], by_id["chat-7-2"], by_id["chat-7-3"]
    assert (first.conversation_id, first.turn, second.turn, third.turn) == ("chat-7", 1, 2, 3)
    assert first.answer == "A lentil curry." and first.contexts == ["Lentil curry is vegetarian."]
    assert first.context_ids == ["r1"] and first.reference == "A vegetarian dish."
    assert first.tool_calls is not None and first.tool_calls[0].name == "search_recipes"
    assert second.contexts == ["An omelette takes 5 minutes."] and second.tool_calls is None
    assert third.answer is None  # asked, never answered
    assert dataset.extras["chat-7-1"] == {"topics": "cooking", "role": "You are a cooking assistant."}
    assert by_id["single"].conversation_id is None


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([{"role": "assistant", "content": "Hi"}], r"messages\[0\].*before any user message"),
        ([{"role": "user", "content": 3}], r"messages\[0\]\.content.*expected a string"),
        ([{"role": "bot", "content": "x"}], r"messages\[0\]\.role"),
        ("hello", r"expected a list of messages"),
        ([{"role": "system", "content": "s"}], r"no user message"),
    ],
)
def test_a_bad_messages_list_is_named_by_row_and_message(tmp_path: Path, messages: object, message: str) -> None:
    path = tmp_path / "chats.jsonl"
    good = {"id": "ok", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
    path.write_text(json.dumps(good) + "\n" + json.dumps({"id": "bad", "messages": messages}) + "\n")
    with pytest.raises(InputError, match=r"row 2, field 'messages'.*" + message):
        read_qa(path)
