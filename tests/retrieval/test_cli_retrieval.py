"""`ragmetrics retrieval`: one row per run, per-query rows, formats, query sets and errors."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from ragmetrics.cli import retrieval as command
from ragmetrics.errors import InputError
from ragmetrics.schema import RunResult

QRELS = "q1 0 a 1\nq1 0 b 0\nq2 0 c 2\nq2 0 d 1\n"
RUN_A = "q1 Q0 a 1 2.0 bm25\nq1 Q0 b 2 1.0 bm25\nq2 Q0 d 1 3.0 bm25\nq2 Q0 c 2 2.5 bm25\nq9 Q0 z 1 1.0 bm25\n"
RUN_B = "q1 Q0 b 1 2.0 dense\nq1 Q0 a 2 1.0 dense\n"


def run_cli(argv: list[str]) -> int:
    """The subcommand through its own parser, as `ragmetrics.cli` wires it."""
    parser = argparse.ArgumentParser(prog="ragmetrics")
    command.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.handler(args)
    return code


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    paths = {}
    for name, text in (("qrels.txt", QRELS), ("a.run", RUN_A), ("b.run", RUN_B)):
        (tmp_path / name).write_text(text, encoding="utf-8")
        paths[name] = str(tmp_path / name)
    return paths


def test_table_has_one_row_per_run(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["retrieval", files["qrels.txt"], files["a.run"], files["b.run"], "-m", "mrr", "P_1"]) == 0
    out, err = capsys.readouterr()
    lines = [line for line in out.splitlines() if "bm25" in line or "dense" in line]
    assert len(lines) == 2
    assert "1.0000" in lines[0]  # bm25: mrr 1 on both queries
    assert "0.2500" in lines[1]  # dense: mrr 0.5 on q1, 0 on q2 (missing, scored 0)
    assert "lacks 1 qrels queries (scored 0): 'q2'" in err
    assert "has 1 queries the qrels lack" in err


def test_json_for_one_run_is_a_single_result(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(["retrieval", files["qrels.txt"], files["a.run"], "-m", "ndcg@2", "--format", "json"]) == 0
    result = RunResult.model_validate_json(capsys.readouterr().out)
    assert result.name == "bm25"
    assert result.per_query["q1"]["ndcg@2"] == pytest.approx(1.0)
    assert result.metadata.extra_queries == ["q9"]


def test_json_for_several_runs_is_a_list(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["retrieval", files["qrels.txt"], files["a.run"], files["b.run"], "-m", "map", "--format", "json"]
    assert run_cli([*argv, "--intersection"]) == 0
    data = json.loads(capsys.readouterr().out)
    results = [RunResult.model_validate(item) for item in data]
    assert [r.name for r in results] == ["bm25", "dense"]
    assert list(results[1].per_query) == ["q1"]
    assert results[1].aggregate["map"] == pytest.approx(0.5)


@pytest.mark.parametrize("fmt", ["markdown", "latex", "table", "csv"])
def test_per_query_rows_in_every_text_format(
    fmt: str, files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["retrieval", files["qrels.txt"], files["a.run"], "-m", "recall@1", "--per-query", "--format", fmt]
    assert run_cli(argv) == 0
    out = capsys.readouterr().out
    assert "q1" in out and "q2" in out and "recall@1" in out
    assert "0.5000" in out or "0.5" in out


def test_runs_with_the_same_name_are_named_after_their_files(
    tmp_path: Path, files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "copy.run"
    copy.write_text(RUN_A, encoding="utf-8")
    assert (
        run_cli(["retrieval", files["qrels.txt"], files["a.run"], str(copy), "-m", "map", "--format", "json"])
        == 0
    )
    names = [item["name"] for item in json.loads(capsys.readouterr().out)]
    assert names == [files["a.run"], str(copy)]


def test_bad_metric_raises_input_error_before_reading(files: dict[str, str]) -> None:
    with pytest.raises(InputError, match="'ndcg@x'"):
        run_cli(["retrieval", "/nonexistent/qrels", files["a.run"], "-m", "ndcg@x"])


def test_bad_run_file_names_file_and_line(tmp_path: Path, files: dict[str, str]) -> None:
    bad = tmp_path / "bad.run"
    bad.write_text("q1 Q0 a 1 2.0 x\nq1 Q0 b 2 notanumber x\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        run_cli(["retrieval", files["qrels.txt"], str(bad), "-m", "map"])
    assert str(bad) in str(info.value) and "line 2" in str(info.value)


def test_main_entry_point_reports_input_errors_with_exit_code_2(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        from ragmetrics.cli import build_parser

        build_parser()
    except ModuleNotFoundError as exc:  # another subcommand not written yet
        pytest.skip(f"the full CLI cannot be built yet: {exc}")
    from ragmetrics.cli import main

    assert main(["retrieval", files["qrels.txt"], files["a.run"], "-m", "bogus"]) == 2
    assert "'bogus'" in capsys.readouterr().err
    assert main(["retrieval", files["qrels.txt"], files["a.run"], "-m", "mrr", "--format", "markdown"]) == 0
    assert "| bm25 | 1.0000 |" in capsys.readouterr().out
