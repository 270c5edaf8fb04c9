"""QA dataset loading: formats through `datasets`, column mapping, row validation, fingerprints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.errors import InputError
from ragmetrics.nightly.config import DatasetConfig
from ragmetrics.nightly.dataset import load_dataset, read_passages, validate_rows

ROWS: list[dict[str, Any]] = [
    {
        "qid": "q1",
        "query": "What does nonlocal do?",
        "ctx": ["nonlocal binds a name in the enclosing scope.", "Globals live in modules."],
        "ctx_ids": ["p1", "p2"],
        "answer": "It rebinds a variable of the enclosing function.",
        "reference": "nonlocal makes a name refer to the nearest enclosing function scope.",
        "ret": ["p1", "p2", "p3"],
        "ret_scores": [3.5, 2.0, 1.0],
        "rel": ["p1", "p4"],
        "grades": [3, 1],
    },
    {
        "qid": "q2",
        "query": "How do I write a context manager?",
        "ctx": ["Define __enter__ and __exit__."],
        "ctx_ids": ["p5"],
        "answer": "Implement __enter__ and __exit__.",
        "reference": "Give the class __enter__ and __exit__ methods.",
        "ret": ["p5", "p1"],
        "ret_scores": [4.0, 0.5],
        "rel": ["p5"],
        "grades": [2],
    },
]
MAPPING = {
    "qid": "id",
    "query": "question",
    "ctx": "contexts",
    "ctx_ids": "context_ids",
    "ret": "retrieved_ids",
    "ret_scores": "retrieved_scores",
    "rel": "relevant_ids",
    "grades": "relevant_grades",
}


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _config(path: Path, **kw: Any) -> DatasetConfig:
    return DatasetConfig(path=path, mapping=MAPPING, **kw)


def test_jsonl_mapping_gives_samples_qrels_and_run(tmp_path: Path) -> None:
    ds = load_dataset(_config(_write_jsonl(tmp_path / "qa.jsonl", ROWS)), progress=False)
    assert ds.query_ids == ["q1", "q2"]
    assert ds.samples[0].contexts == ROWS[0]["ctx"] and ds.samples[0].context_ids == ["p1", "p2"]
    assert ds.qrels().to_dict() == {"q1": {"p1": 3, "p4": 1}, "q2": {"p5": 2}}
    run = ds.run("pipeline")
    assert run.name == "pipeline"
    assert list(run.to_dict()["q1"]) == ["p1", "p2", "p3"]
    assert ds.columns["question"] == "query" and ds.ignored_columns == []
    assert ds.fingerprint.startswith("sha256:") and not ds.skipped


@pytest.mark.parametrize("fmt", ["csv", "parquet", "disk", "json"])
def test_every_format_gives_the_same_rows_and_fingerprint(tmp_path: Path, fmt: str) -> None:
    import datasets

    reference = load_dataset(_config(_write_jsonl(tmp_path / "qa.jsonl", ROWS)), progress=False)
    if fmt == "csv":
        import pandas as pd

        frame = pd.DataFrame(
            [{k: json.dumps(v) if isinstance(v, list) else v for k, v in r.items()} for r in ROWS]
        )
        path = tmp_path / "qa.csv"
        frame.to_csv(path, index=False)
    elif fmt == "parquet":
        path = tmp_path / "qa.parquet"
        datasets.Dataset.from_list(ROWS).to_parquet(str(path))
    elif fmt == "disk":
        path = tmp_path / "saved"
        datasets.Dataset.from_list(ROWS).save_to_disk(str(path))
    else:
        path = tmp_path / "qa.json"
        path.write_text(json.dumps(ROWS))
    ds = load_dataset(_config(path), progress=False)
    assert [s.model_dump() for s in ds.samples] == [s.model_dump() for s in reference.samples]
    assert ds.relevance == reference.relevance and ds.retrieved == reference.retrieved
    assert ds.fingerprint == reference.fingerprint


def test_fingerprint_changes_with_content(tmp_path: Path) -> None:
    a = load_dataset(_config(_write_jsonl(tmp_path / "a.jsonl", ROWS)), progress=False)
    changed = [dict(ROWS[0], answer="Something else."), ROWS[1]]
    b = load_dataset(_config(_write_jsonl(tmp_path / "b.jsonl", changed)), progress=False)
    assert a.fingerprint != b.fingerprint


def test_bad_row_fails_with_row_and_field(tmp_path: Path) -> None:
    rows = [ROWS[0], dict(ROWS[1], query="   ")]
    path = _write_jsonl(tmp_path / "qa.jsonl", rows)
    with pytest.raises(InputError) as info:
        load_dataset(_config(path), progress=False)
    assert str(info.value) == f"{path}, row 2, field 'question' (column 'query'): is blank"


def test_bad_row_skipped_is_listed(tmp_path: Path) -> None:
    rows = [dict(ROWS[0], ret_scores=[1.0, 2.0]), ROWS[1]]
    ds = load_dataset(_config(_write_jsonl(tmp_path / "qa.jsonl", rows), on_bad_row="skip"), progress=False)
    assert ds.query_ids == ["q2"]
    [bad] = ds.skipped
    assert (bad.row, bad.field, bad.column) == (1, "retrieved_scores", "ret_scores")
    assert "has 2 entries but retrieved_ids has 3" in bad.message
    assert ds.summary()["rows_skipped"][0]["row"] == 1


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"ctx": "not a list"}, "contexts", "expected a list"),
        ({"ctx": [1.5]}, "contexts", "[0] expected a string"),
        ({"ctx": ["text", 7]}, "contexts", "[1] expected a string, got int 7"),  # ids may be ints, texts not
        ({"ctx_ids": ["p1"]}, "context_ids", "has 1 ids but contexts has 2"),
        ({"grades": [2.5, 1]}, "relevant_grades", "grade 2.5 is not an integer"),
        ({"grades": ["high", 1]}, "relevant_grades", "expected an integer grade"),
        ({"ret": ["p1", "p1", "p3"]}, "retrieved_ids", "document 'p1' appears twice"),
        ({"answer": 42}, "answer", "expected a string or null"),
        ({"qid": None}, "id", "expected a string or integer, got null"),
        ({"qid": "q2"}, "id", "duplicate id 'q2' (first at row 1)"),
    ],
)
def test_row_validation_messages(change: dict[str, Any], field: str, message: str) -> None:
    rows = [ROWS[1], dict(ROWS[0], **change)]
    with pytest.raises(InputError) as info:
        validate_rows(rows, source="qa", mapping=MAPPING)
    text = str(info.value)
    assert text.startswith(f"qa, row 2, field {field!r}"), text
    assert message in text, text


def test_missing_mapped_column(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "qa.jsonl", [{k: v for k, v in r.items() if k != "query"} for r in ROWS])
    with pytest.raises(InputError, match=r"column 'query' \(mapped to 'question'\) is not in the dataset"):
        load_dataset(_config(path), progress=False)


def test_no_question_column_without_mapping() -> None:
    with pytest.raises(InputError, match="no 'question' column"):
        validate_rows([{"id": "a", "text": "x"}], source="qa")


def test_generated_ids_and_unmapped_columns_reported() -> None:
    ds = validate_rows([{"question": "Why?", "note": 1}, {"question": "How?"}], source="qa")
    assert ds.query_ids == ["row-1", "row-2"] and ds.generated_ids
    assert ds.ignored_columns == ["note"]
    assert not ds.has_qrels and not ds.has_run
    with pytest.raises(InputError, match="no relevance judgments"):
        ds.qrels()


def test_defaults_for_absent_scores_and_grades() -> None:
    ds = validate_rows(
        [{"id": "a", "question": "Why?", "retrieved_ids": ["x", "y"], "relevant_ids": ["y"]}], source="qa"
    )
    assert ds.retrieved == {"a": {"x": 2.0, "y": 1.0}}
    assert ds.relevance == {"a": {"y": 1}}


def test_limit_keeps_first_valid_rows() -> None:
    ds = validate_rows(ROWS, source="qa", mapping=MAPPING, limit=1)
    assert ds.query_ids == ["q1"]


def test_unreadable_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        load_dataset(DatasetConfig(path=tmp_path / "nope.jsonl"), progress=False)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"question": "a"\n')
    with pytest.raises(InputError, match=r"broken.jsonl, line 1: invalid JSON"):
        load_dataset(DatasetConfig(path=broken), progress=False)
    odd = tmp_path / "qa.txt"
    odd.write_text("x")
    with pytest.raises(InputError, match="cannot tell the format"):
        load_dataset(DatasetConfig(path=odd), progress=False)


def test_passages_reader(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"id": "p1", "text": "one"}\n{"id": "p1", "text": "two"}\n')
    with pytest.raises(InputError, match=r"p.jsonl, line 2, field 'id': duplicate passage id 'p1'"):
        read_passages(path)
    path.write_text('{"id": "p1", "text": "one"}\n\n{"id": "p2", "text": "two"}\n')
    assert list(read_passages(path)) == ["p1", "p2"]
    # Line numbers count blank lines too; bytes that are not UTF-8 are an input error on their line.
    path.write_text('{"id": "p1", "text": "one"}\n\n{"id": "p1", "text": "two"}\n')
    with pytest.raises(InputError, match=r"p.jsonl, line 3, field 'id': duplicate passage id"):
        read_passages(path)
    path.write_bytes(b'{"id": "p1", "text": "one"}\n{"id": "p2", "text": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r"p.jsonl, line 2: not UTF-8 text"):
        read_passages(path)
    # A text that is not a string is refused here, at its line, not later by a retriever that knows only a list
    # index; an empty text is a document like any other (public collections hold some).
    path.write_text('{"id": "p1", "text": "one"}\n\n{"id": "p2", "text": 7}\n')
    with pytest.raises(InputError, match=r"p.jsonl, line 3, field 'text': expected a string, got"):
        read_passages(path)
