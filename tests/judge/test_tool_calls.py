"""Tool-call metrics (issue 42, agents): equal to hand-computed cases and to RAGAS's ToolCallAccuracy and
ToolCallF1 where the definitions coincide; read from a dataset's columns in every accepted shape."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from ragmetrics import evaluate_rag, read_qa
from ragmetrics.errors import InputError
from ragmetrics.judge.deterministic import tool_call_accuracy_score as tool_call_accuracy
from ragmetrics.judge.deterministic import tool_call_f1_score as tool_call_f1
from ragmetrics.judge.tool_calls import ToolCall, parse_tool_calls


def call(name: str, **args: object) -> ToolCall:
    return ToolCall(name=name, args=dict(args))


WEATHER = call("weather_check", location="New York")
CONVERT = call("temperature_conversion", temperature_fahrenheit=75)


@pytest.mark.parametrize(
    ("made", "expected", "accuracy"),
    [
        ([WEATHER, CONVERT], [WEATHER, CONVERT], 1.0),  # RAGAS's documented example
        ([CONVERT, WEATHER], [WEATHER, CONVERT], 0.0),  # the order is wrong: sequence not aligned
        ([WEATHER, call("temperature_conversion", temperature_fahrenheit=80)], [WEATHER, CONVERT], 0.5),
        ([WEATHER], [WEATHER, CONVERT], 0.0),  # a call missing: names differ
        ([], [WEATHER], 0.0),
        ([WEATHER], [], 0.0),
        ([], [], 1.0),
        ([call("search", q="a", k=5)], [call("search", q="a", k=3)], 0.5),  # 1 of 2 arguments right
        ([call("search", q="a", extra=1)], [call("search", q="a")], 1.0),  # extra arguments not penalised
        ([call("ping")], [call("ping")], 1.0),
        ([call("ping", x=1)], [call("ping")], 0.0),  # RAGAS: a reference without arguments wants none
    ],
)
def test_accuracy_by_hand_and_as_ragas_defines_it(made: list[ToolCall], expected: list[ToolCall], accuracy: float) -> None:
    assert tool_call_accuracy(made, expected) == pytest.approx(accuracy)


def test_accuracy_in_any_order_pairs_sorted_calls() -> None:
    assert tool_call_accuracy([CONVERT, WEATHER], [WEATHER, CONVERT], order="any") == 1.0
    mixed = [call("temperature_conversion", temperature_fahrenheit=80), WEATHER]
    assert tool_call_accuracy(mixed, [WEATHER, CONVERT], order="any") == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("made", "expected", "f1"),
    [
        ([WEATHER, CONVERT], [WEATHER, CONVERT], 1.0),
        ([CONVERT, WEATHER], [WEATHER, CONVERT], 1.0),  # a set: order never matters
        ([WEATHER], [WEATHER, CONVERT], 2 * 1 * 0.5 / 1.5),  # P 1, R 1/2
        ([WEATHER, call("x")], [WEATHER, CONVERT], 0.5),  # P 1/2, R 1/2
        ([call("x")], [WEATHER], 0.0),
        ([WEATHER, WEATHER], [WEATHER], 1.0),  # duplicates counted once, as RAGAS's sets do
        ([call("t", f=75.0)], [call("t", f=75)], 1.0),  # Python equality, as RAGAS
        ([call("t", f="75")], [call("t", f=75)], 0.0),
        ([], [], 1.0),  # RAGAS returns 0 here (documented difference)
    ],
)
def test_f1_by_hand_and_as_ragas_defines_it(made: list[ToolCall], expected: list[ToolCall], f1: float) -> None:
    assert tool_call_f1(made, expected) == pytest.approx(f1)


def test_normalised_arguments_forgive_case_spaces_and_number_forms() -> None:
    made = [call("search", query="  New   YORK ", limit="5", filters={"b": 2, "a": [1, "X"]})]
    expected = [call("search", query="new york", limit=5.0, filters={"a": [1.0, "x"], "b": 2})]
    assert tool_call_accuracy(made, expected) == pytest.approx(0.0)  # exact: none of the 3 equal as strings
    assert tool_call_accuracy(made, expected, arguments="normalised") == 1.0
    assert tool_call_f1(made, expected) == 0.0 and tool_call_f1(made, expected, arguments="normalised") == 1.0


def test_every_accepted_shape_of_a_call() -> None:
    shapes = [
        {"name": "search", "args": {"q": "a"}},
        {"name": "search", "arguments": {"q": "a"}},
        {"name": "search", "arguments": '{"q": "a"}'},
        {"type": "function", "id": "call_1", "function": {"name": "search", "arguments": '{"q": "a"}'}},
    ]
    for shape in shapes:
        assert parse_tool_calls([shape]) == [call("search", q="a")]
    assert parse_tool_calls(json.dumps([shapes[0]])) == [call("search", q="a")]
    assert parse_tool_calls(None) is None and parse_tool_calls([]) == []
    for bad, message in [
        ([{"args": {}}], "tool_calls[0]: 'name' must be a non-empty string"),
        ([{"name": "s", "arguments": "{oops"}], "not JSON"),
        ([{"name": "s", "args": [1]}], "arguments must be an object"),
        ([{"name": "s", "tool": 1}], "unknown key"),
        ("nope", "expected a list of calls"),
    ]:
        with pytest.raises(ValueError, match=re.escape(message)):
            parse_tool_calls(bad)


def test_a_dataset_with_tool_calls_scores_them_and_names_bad_rows(tmp_path: Path) -> None:
    rows = [
        {"question": "Weather in NY, in Celsius?", "answer": "24 C",
         "tool_calls": [{"name": "weather_check", "args": {"location": "New York"}},
                        {"name": "temperature_conversion", "arguments": '{"temperature_fahrenheit": 75}'}],
         "reference_tool_calls": [{"name": "weather_check", "args": {"location": "New York"}},
                                  {"name": "temperature_conversion", "args": {"temperature_fahrenheit": 75}}]},
        {"question": "Just say hi", "answer": "hi", "tool_calls": [], "reference_tool_calls": []},
        {"question": "Weather?", "answer": "?", "tool_calls": [{"name": "search", "args": {"q": "weather"}}],
         "reference_tool_calls": [{"name": "weather_check", "args": {"location": "here"}}]},
    ]  # fmt: skip
    path = tmp_path / "agent.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    data = read_qa(path)
    result = evaluate_rag(list(data), ["tool_call_accuracy", "tool_call_f1"], progress=False)
    assert result.per_query["row-1"] == {"tool_call_accuracy": 1.0, "tool_call_f1": 1.0}
    assert result.per_query["row-2"] == {"tool_call_accuracy": 1.0, "tool_call_f1": 1.0}
    assert result.per_query["row-3"] == {"tool_call_accuracy": 0.0, "tool_call_f1": 0.0}
    rows[2]["tool_calls"] = [{"name": ""}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(InputError, match=r"row 3, field 'tool_calls'.*'name' must be a non-empty string"):
        read_qa(path)


def test_a_sample_without_reference_calls_is_a_missing_field_not_a_zero() -> None:
    sample = {"id": "a", "question": "q?", "tool_calls": [{"name": "x", "args": {}}]}
    result = evaluate_rag([sample], ["tool_call_f1"], progress=False)
    assert result.per_query["a"]["tool_call_f1"] is None
    assert result.failures[0].cause == "missing_field" and "reference_tool_calls" in result.failures[0].message


def test_the_teams_own_tool_call_metric_with_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ragmetrics.cli import main

    rows = [{"question": "Weather in NY, in Celsius?",
             "tool_calls": [{"name": "temperature_conversion", "args": {"temperature_fahrenheit": "75"}},
                            {"name": "weather_check", "args": {"location": "new york"}}],
             "reference_tool_calls": [{"name": "weather_check", "args": {"location": "New York"}},
                                      {"name": "temperature_conversion", "args": {"temperature_fahrenheit": 75}}]}]  # fmt: skip
    (tmp_path / "agent.jsonl").write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    (tmp_path / "c.yaml").write_text(textwrap.dedent("""
        dataset: {path: agent.jsonl}
        judge:
          backend: local
          metrics: [tool_call_accuracy, lenient_tools, lenient_f1]
          custom_metrics:
            - {name: lenient_tools, type: tool_calls, order: any, arguments: normalised}
            - {name: lenient_f1, type: tool_calls, score: f1, arguments: normalised}
        output: {dir: out, plots: false, formats: [json]}
        """), encoding="utf-8")  # fmt: skip
    assert main(["run", str(tmp_path / "c.yaml")]) == 0, capsys.readouterr().err
    report = json.loads(next((tmp_path / "out").glob("*/report.json")).read_text())
    scores = report["runs"][0]["per_query"]["row-1"]
    assert scores == {"tool_call_accuracy": 0.0, "lenient_tools": 1.0, "lenient_f1": 1.0}
    (tmp_path / "c.yaml").write_text(
        "dataset: {path: agent.jsonl}\njudge:\n  backend: local\n  metrics: [x]\n  custom_metrics:\n"
        "    - {name: x, type: tool_calls, score: f1, order: any}\n", encoding="utf-8")  # fmt: skip
    assert main(["run", str(tmp_path / "c.yaml")]) == 2
    assert "order applies to accuracy" in capsys.readouterr().err
