"""format_results: every format carries the same numbers; failures stay visible."""

from __future__ import annotations

import csv
import io
import json

import pytest

from ragmetrics.errors import InputError
from ragmetrics.render.tables import format_results
from ragmetrics.schema import RunResult

from .conftest import make_result


@pytest.fixture
def results() -> list[RunResult]:
    metrics = ["ndcg@10", "map"]
    return [
        make_result(
            "bm25", {"q1": {"ndcg@10": 0.5, "map": 0.25}, "q2": {"ndcg@10": 1.0, "map": 0.75}}, metrics
        ),
        make_result(
            "dense_x", {"q1": {"ndcg@10": 0.125, "map": None}, "q2": {"ndcg@10": 0.0, "map": 1.0}}, metrics
        ),
    ]


def test_table_has_one_row_per_run_and_no_escape_codes(results: list[RunResult]) -> None:
    text = format_results(results, ["ndcg@10", "map"], "table")
    assert "\x1b[" not in text
    lines = [line for line in text.splitlines() if line.startswith("│ bm25") or line.startswith("│ dense_x")]
    assert len(lines) == 2
    assert "0.7500" in lines[0] and "0.5000" in lines[0]
    assert "0.0625" in lines[1] and "1.0000" in lines[1]
    assert "dense_x: map: 1 failed score(s)" in text


def test_table_per_query_rows(results: list[RunResult]) -> None:
    text = format_results(results, ["ndcg@10"], "table", per_query=True)
    rows = [line for line in text.splitlines() if "q1" in line or "q2" in line or " all " in line]
    assert len(rows) == 6


def test_markdown_and_latex(results: list[RunResult]) -> None:
    md = format_results(results, ["ndcg@10", "map"], "markdown")
    assert md.splitlines()[0] == "| run | ndcg@10 | map |"
    assert "| bm25 | 0.7500 | 0.5000 |" in md
    assert "| dense_x | 0.0625 | 1.0000 |" in md
    tex = format_results(results, ["ndcg@10"], "latex", per_query=True)
    assert "\\toprule" in tex and "\\bottomrule" in tex
    assert "dense\\_x & q1 & 0.1250 \\\\" in tex


def test_csv_keeps_full_precision_and_blank_failures(results: list[RunResult]) -> None:
    text = format_results(results, ["ndcg@10", "map"], "csv", per_query=True)
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["run", "query", "ndcg@10", "map"]
    assert ["dense_x", "q1", "0.125", ""] in rows
    assert ["dense_x", "all", "0.0625", "1.0"] in rows


def test_json_round_trips(results: list[RunResult]) -> None:
    dumped = json.loads(format_results(results, ["map"], "json"))
    assert [RunResult.model_validate(d) for d in dumped] == results


def test_empty_metric_list_means_all(results: list[RunResult]) -> None:
    assert format_results(results, [], "markdown").splitlines()[0] == "| run | ndcg@10 | map |"


def test_unknown_metric_and_format(results: list[RunResult]) -> None:
    with pytest.raises(InputError, match="no metric 'mrr'"):
        format_results(results, ["mrr"], "table")
    with pytest.raises(InputError, match=r"unknown format 'html'.*table, markdown, latex, json, csv"):
        format_results(results, ["map"], "html")
