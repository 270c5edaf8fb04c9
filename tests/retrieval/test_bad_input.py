"""Every kind of bad qrels/run input raises an InputError naming where (file, line/row, field) and what."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from ragmetrics.errors import InputError
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.run import Run


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def fails(call: object, *args: object, **kwargs: object) -> InputError:
    with pytest.raises(InputError) as err:
        call(*args, **kwargs)  # type: ignore[operator]
    return err.value


# -- TREC files --------------------------------------------------------------------------------------------


def test_qrels_line_with_too_few_fields(tmp_path: Path) -> None:
    path = write(tmp_path / "qrels", "q1 0 d1 1\nq1 0 d2\n")
    err = fails(Qrels.from_trec, path)
    assert err.source == str(path) and err.line == 2
    assert "expected 4 whitespace-separated fields" in err.what and "found 3" in err.what


def test_qrels_line_with_too_many_fields(tmp_path: Path) -> None:
    err = fails(Qrels.from_trec, write(tmp_path / "qrels", "# head\n\nq1 0 d1 1 extra\n"))
    assert err.line == 3 and "found 5" in err.what


def test_run_line_with_too_few_fields(tmp_path: Path) -> None:
    err = fails(Run.from_trec, write(tmp_path / "run", "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4\n"))
    assert err.line == 2 and "expected 6 or more" in err.what and "found 5" in err.what


def test_malformed_line_in_an_irregular_file_names_its_line(tmp_path: Path) -> None:
    err = fails(Run.from_trec, write(tmp_path / "run", "#x\nq1 Q0 d1 1 0.5 t\n\n   \nq1\n"))
    assert err.line == 5 and "found 1" in err.what


@pytest.mark.parametrize("score", ["abc", "0x10", "1_0", "0.5.1", "--1"])
def test_non_numeric_score(tmp_path: Path, score: str) -> None:
    err = fails(Run.from_trec, write(tmp_path / "run", f"q1 Q0 d0 1 1.0 t\nq1 Q0 d1 2 {score} t\n"))
    assert err.line == 2 and err.field == "score" and f"'{score}' is not a number" in err.what


@pytest.mark.parametrize("score", ["nan", "NaN", "inf", "-Infinity", "1e999"])
def test_non_finite_score(tmp_path: Path, score: str) -> None:
    err = fails(Run.from_trec, write(tmp_path / "run", f"q1 Q0 d1 1 {score} t\n"))
    assert err.line == 1 and err.field == "score" and "not a finite number" in err.what


@pytest.mark.parametrize("grade", ["2.5", "2.0", "two", "1_0", "1e0", "99999999999999999999", "1" * 100])
def test_non_integer_grade(tmp_path: Path, grade: str) -> None:
    err = fails(Qrels.from_trec, write(tmp_path / "qrels", f"q1 0 d0 1\nq1 0 d1 {grade}\n"))
    # A long token is shown cut, with its length: a 200 MB line is never echoed whole into a message.
    shown = f"'{grade}'" if len(grade) <= 40 else f"'{grade[:40]}'... ({len(grade):,} characters)"
    assert err.line == 2 and err.field == "grade" and f"{shown} is not an integer" in err.what


@pytest.mark.parametrize("line", ["q1 0 {long} 1", "{long} 0 d1 1", "q1 0 d1 {long}"])
def test_a_field_over_the_length_limit_is_refused_cut(tmp_path: Path, line: str) -> None:
    long = "x" * 5000
    err = fails(Qrels.from_trec, write(tmp_path / "qrels", "q1 0 d0 1\n" + line.format(long=long) + "\n"))
    assert err.line == 2 and "(5,000 bytes) is longer than the limit of 4,096 bytes" in err.what
    assert len(str(err)) < 400


def test_a_long_id_within_the_limit_is_kept_whole(tmp_path: Path) -> None:
    url = "https://example.org/" + "a" * 4000
    qrels = Qrels.from_trec(write(tmp_path / "qrels", f"q1 0 {url} 1\n"))
    assert url in str(qrels.to_dict())


def test_duplicate_document_names_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path / "qrels", "q1 0 d1 1\nq2 0 d1 1\nq1 0 d2 0\nq1 0 d1 2\n")
    err = fails(Qrels.from_trec, path)
    assert err.line == 4 and "duplicate document 'd1' for query 'q1' (first at line 1)" in err.what


def test_duplicate_document_in_a_run(tmp_path: Path) -> None:
    err = fails(Run.from_trec, write(tmp_path / "run", "q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n"))
    assert err.line == 2 and "(first at line 1)" in err.what


@pytest.mark.parametrize("text", ["", "\n\n  \t\n"])
def test_empty_file(tmp_path: Path, text: str) -> None:
    for reader in (Qrels.from_trec, Run.from_trec, Qrels.from_json, Run.from_jsonl):
        err = fails(reader, write(tmp_path / "f", text))
        assert "empty file" in err.what and err.source == str(tmp_path / "f")


def test_file_with_only_comments(tmp_path: Path) -> None:
    err = fails(Run.from_trec, write(tmp_path / "run", "# nothing\n#here\n"))
    assert "no entries" in err.what


def test_missing_file(tmp_path: Path) -> None:
    for reader in (Qrels.from_trec, Run.from_trec, Qrels.from_json, Run.from_jsonl, Qrels.read):
        err = fails(reader, tmp_path / "absent")
        assert err.what == "file not found" and err.source == str(tmp_path / "absent")


def test_directory_instead_of_file(tmp_path: Path) -> None:
    assert "is a directory" in fails(Qrels.from_trec, tmp_path).what


def test_invalid_utf8_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "qrels"
    path.write_bytes(b"q1 0 d1 1\nq1 0 d\xff 1\n")
    err = fails(Qrels.from_trec, path)
    assert err.line == 2 and "not valid UTF-8" in err.what


def test_nul_byte(tmp_path: Path) -> None:
    path = tmp_path / "qrels"
    path.write_bytes(b"q1 0 d1 1\nq1 0 d2\x00 1\n")
    assert fails(Qrels.from_trec, path).line == 2


# -- JSON and JSON Lines -------------------------------------------------------------------------------


def test_bad_json_names_the_line(tmp_path: Path) -> None:
    err = fails(Qrels.from_json, write(tmp_path / "q.json", '{\n  "q1": {"d1": 1},\n  "q2": {"d1": }\n}\n'))
    assert err.line == 3 and "invalid JSON" in err.what


def test_json_duplicate_document_or_query_is_an_error_not_last_wins(tmp_path: Path) -> None:
    # json.loads keeps the last of repeated keys; a duplicate document must be reported as in TREC files.
    err = fails(Qrels.from_json, write(tmp_path / "q.json", '{"q1": {"d1": 1, "d2": 0, "d1": 2}}'))
    assert err.source == str(tmp_path / "q.json") and "key 'd1' appears twice" in err.what
    err = fails(Run.from_json, write(tmp_path / "r.json", '{"q1": {"d1": 1.0}, "q1": {"d2": 0.5}}'))
    assert "key 'q1' appears twice" in err.what
    line = '{"query_id": "q1", "doc_id": "a", "score": 1, "score": 2}'
    err = fails(
        Run.from_jsonl,
        write(tmp_path / "r.jsonl", f'{{"query_id": "q0", "doc_id": "a", "score": 1}}\n{line}\n'),
    )
    assert err.line == 2 and "key 'score' appears twice" in err.what


def test_json_of_the_wrong_shape(tmp_path: Path) -> None:
    assert "expected a mapping" in fails(Qrels.from_json, write(tmp_path / "q.json", "[1, 2]")).what
    err = fails(Run.from_json, write(tmp_path / "r.json", '{"q1": [1, 2]}'))
    assert "query 'q1'" in err.what and "expected a mapping of document id -> score" in err.what


def test_json_with_no_entries(tmp_path: Path) -> None:
    assert "no entries" in fails(Run.from_json, write(tmp_path / "r.json", '{"q1": {}}')).what


def test_json_values_are_named_by_query_and_document(tmp_path: Path) -> None:
    err = fails(Qrels.from_json, write(tmp_path / "q.json", '{"q1": {"d1": 1, "d2": 1.5}}'))
    assert err.what == "query 'q1', document 'd2': grade 1.5 is not an integer grade"
    err = fails(Run.from_json, write(tmp_path / "r.json", '{"q1": {"d1": "0.5"}}'))
    assert "'0.5' is not a number" in err.what


def test_bad_jsonl_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.jsonl", '{"query_id": "q1", "doc_id": "a", "score": 1}\n\n{"query_id": "q1",\n'
    )
    err = fails(Run.from_jsonl, path)
    assert err.line == 3 and "invalid JSON" in err.what


def test_jsonl_missing_key_names_field_and_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "q.jsonl",
        '{"query_id": "q1", "doc_id": "a", "relevance": 1}\n{"query_id": "q1", "doc": "b"}\n',
    )
    err = fails(Qrels.from_jsonl, path)
    assert err.line == 2 and err.field == "doc_id" and "missing key" in err.what


def test_jsonl_line_that_is_not_an_object(tmp_path: Path) -> None:
    err = fails(Run.from_jsonl, write(tmp_path / "r.jsonl", "[1, 2, 3]\n"))
    assert err.line == 1 and "expected a JSON object" in err.what


def test_jsonl_boolean_grade_among_integers_is_not_read_as_one(tmp_path: Path) -> None:
    # numpy would infer [1, True] as the integers [1, 1]; the boolean must be named instead.
    path = write(
        tmp_path / "q.jsonl",
        '{"query_id": "q1", "doc_id": "a", "relevance": 1}\n{"query_id": "q1", "doc_id": "b", "relevance": true}\n',
    )
    err = fails(Qrels.from_jsonl, path)
    assert err.line == 2 and err.field == "grade" and "grade True is not an integer grade" in err.what


def test_jsonl_bad_id_and_score(tmp_path: Path) -> None:
    err = fails(
        Run.from_jsonl, write(tmp_path / "r.jsonl", '{"query_id": null, "doc_id": "a", "score": 1}\n')
    )
    assert err.line == 1 and err.field == "query_id"
    err = fails(
        Run.from_jsonl, write(tmp_path / "r.jsonl", '{"query_id": "q", "doc_id": "a", "score": NaN}\n')
    )
    assert err.line == 1 and err.field == "score" and "not a finite number" in err.what


# -- in-memory sources ------------------------------------------------------------------------------------


def test_dataframe_missing_column_is_named() -> None:
    df = pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "relevance": [1]})
    err = fails(Run.from_df, df)
    assert err.field == "score" and err.source == "DataFrame" and "missing column 'score'" in err.what
    assert fails(Qrels.from_df, df, doc_col="docid").field == "docid"


def test_dataframe_bad_value_names_the_row() -> None:
    df = pd.DataFrame({"query_id": ["q", "q", "q"], "doc_id": ["a", "b", "c"], "score": [1.0, math.nan, 2.0]})
    err = fails(Run.from_df, df)
    assert err.what == "row 1: score nan is not a finite number" and err.field == "score"
    df = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "relevance": [1, pd.NA]}, dtype=object)
    assert "row 1: grade <NA> is not an integer grade" in fails(Qrels.from_df, df).what


def test_dataframe_missing_and_float_ids() -> None:
    df = pd.DataFrame({"query_id": ["q", None], "doc_id": ["a", "b"], "score": [1.0, 2.0]})
    err = fails(Run.from_df, df)
    assert err.what == "row 1: query_id nan is not a string or integer id"  # pandas stores None as NaN
    df = pd.DataFrame({"query_id": [1.0, 2.0], "doc_id": ["a", "b"], "score": [1.0, 2.0]})
    assert "dtype float64" in fails(Run.from_df, df).what


def test_dataframe_duplicate_rows_are_named() -> None:
    df = pd.DataFrame({"query_id": ["q", "q", "q"], "doc_id": ["a", "b", "a"], "score": [1.0, 2.0, 3.0]})
    assert fails(Run.from_df, df).what == "row 2: duplicate document 'a' for query 'q' (first at row 0)"


def test_not_a_dataframe_or_dataset() -> None:
    assert "expected a pandas DataFrame" in fails(Run.from_df, {"a": 1}).what
    assert "expected a datasets.Dataset" in fails(Run.from_hf, [1, 2]).what


def test_dataset_dict_and_missing_dataset_column() -> None:
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"query_id": ["q"], "doc_id": ["d"], "score": [1.0]})
    err = fails(Run.from_hf, datasets.DatasetDict({"test": ds}))
    assert "pick a split" in err.what
    err = fails(Qrels.from_hf, ds)
    assert err.field == "relevance" and err.source == "datasets.Dataset"


@pytest.mark.parametrize(
    ("qrels", "message"),
    [
        ({"q": {"d": 2.5}}, "query 'q', document 'd': grade 2.5 is not an integer grade"),
        ({"q": {"d": math.nan}}, "query 'q', document 'd': grade nan is not an integer grade"),
        ({"q": {"d": "2"}}, "query 'q', document 'd': grade '2' is not an integer grade"),
        ({"q": {"d": 1, "e": "x"}}, "query 'q', document 'e': grade 'x' is not an integer grade"),
        ({"q": {"d": True}}, "query 'q', document 'd': grade True is not an integer grade"),
        ({"q": {"d": 1, "e": True}}, "query 'q', document 'e': grade True is not an integer grade"),
        ({"q": {"d": None}}, "query 'q', document 'd': grade None is not an integer grade"),
        ({"q": {3.5: 1}}, "query 'q', document 3.5: document id 3.5 is not a string or integer id"),
        ({("a",): {"d": 1}}, "query ('a',): query id ('a',) is not a string or integer id"),
        ({"q": [("d", 1)]}, "query 'q': expected a mapping of document id -> grade, got list"),
        ({1: {"d": 1}, "1": {"e": 1}}, "query id '1' appears more than once (as 1, '1')"),
        ({"q": {"": 1}}, "query 'q', document '': empty document id"),
        ({"q": {"d\x00": 1}}, "query 'q', document 'd\\x00': document id 'd\\x00' contains a NUL character"),
        ({"q\x00": {"d": 1}}, "query 'q\\x00': query id 'q\\x00' contains a NUL character"),
        ({"": {"d": 1}}, "query '', document 'd': empty query id"),
        ({}, "no queries: qrels must judge at least one query"),
    ],
)
def test_bad_qrels_dict(qrels: object, message: str) -> None:
    err = fails(Qrels.from_dict, qrels)
    assert err.source == "qrels dict" and message in str(err)


@pytest.mark.parametrize(
    ("run", "message"),
    [
        ({"q": {"d": math.inf}}, "query 'q', document 'd': score inf is not a finite number"),
        ({"q": {"d": "0.5"}}, "query 'q', document 'd': score '0.5' is not a number"),
        ({"q": {"d": 1.0, "e": None}}, "query 'q', document 'e': score None is not a number"),
        ({"q": {"d": 0.5, "e": True}}, "query 'q', document 'e': score True is not a number"),
        ("not a mapping", "expected a mapping of query id -> {document id: score}, got str"),
    ],
)
def test_bad_run_dict(run: object, message: str) -> None:
    err = fails(Run.from_dict, run)
    assert err.source == "run dict" and message in str(err)


@pytest.mark.parametrize("name", ["", 3])
def test_bad_run_name(name: object) -> None:
    assert "run name must be a non-empty string" in fails(Run.from_dict, {"q": {"d": 1.0}}, name=name).what


@pytest.mark.parametrize("k", [0, -1, 2.5, True])
def test_bad_top_k(k: object) -> None:
    assert "k must be an integer >= 1" in fails(Run.from_dict({"q": {"d": 1.0}}).top_k, k).what


def test_messages_read_as_one_line() -> None:
    err = fails(Qrels.from_dict, {"q": {"d": 2.5}})
    assert str(err) == "qrels dict, field 'grade': query 'q', document 'd': grade 2.5 is not an integer grade"


def test_grades_and_scores_out_of_range() -> None:
    err = fails(Qrels.from_dict, {"q": {"d": 2**64}})
    assert "does not fit a 64-bit integer" in err.what
    df = pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "relevance": pd.Series([2**63], dtype="uint64")})
    assert "row 0: grade 9223372036854775808 does not fit a 64-bit integer" in fails(Qrels.from_df, df).what
    assert "is not a finite number" in fails(Run.from_dict, {"q": {"d": 10**400}}).what
