"""Reading a corpus: every accepted shape, streaming, and each bad input named by file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragmetrics.errors import InputError
from ragmetrics.testset import open_corpus

from .conftest import corpus_rows, write_jsonl


def test_jsonl_beir_csv_parquet_and_datasets_read_the_same_chunks(tmp_path: Path) -> None:
    import datasets

    rows = corpus_rows()[:6]
    write_jsonl(tmp_path / "c.jsonl", rows)
    write_jsonl(
        tmp_path / "beir.jsonl", [{"_id": r["id"], "title": r["title"], "text": r["text"]} for r in rows]
    )
    import csv

    with (tmp_path / "c.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["id", "title", "text"])
        writer.writeheader()
        writer.writerows(rows)
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "c.parquet")
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "saved"))
    expected = [(r["id"], r["title"], r["text"]) for r in rows]
    for source in ("c.jsonl", "beir.jsonl", "c.csv", "c.parquet", "saved"):
        got = [(c.id, c.title, c.text) for c in open_corpus(tmp_path / source)]
        assert got == expected, source
    got = [(c.id, c.title, c.text) for c in open_corpus(datasets.Dataset.from_list(rows))]
    assert got == expected
    assert len(open_corpus(tmp_path / "c.jsonl")) == 6


def test_builtin_corpus_is_the_collection() -> None:
    from ragmetrics import collection

    assert len(open_corpus("builtin")) == len(collection.load_passages())


@pytest.mark.parametrize(
    ("lines", "line", "field", "words"),
    [
        (['{"id": "a", "text": "x y"}', '{"text": "no id here"}'], 2, "id", "no id"),
        (
            ['{"id": "a", "text": "x y"}', '{"id": "a", "text": "again"}'],
            2,
            "id",
            "duplicate id 'a' (first on line 1)",
        ),
        (['{"id": "a", "text": "x y"}', "", '{"id": "b"}'], 3, "text", "has no 'text'"),
        (['{"id": "a", "text": "x y"}', '{"id": "b", "text": 7}'], 2, "text", "expected a string"),
        (['{"id": "a", "text": "x y"}', '{"id": "  ", "text": "x"}'], 2, "id", "blank id"),
        (['{"id": "a", "text": "x y"}', '{"id": "b", "text": "x"'], 2, None, "invalid JSON"),
    ],
)
def test_bad_chunks_are_named_by_line(
    tmp_path: Path, lines: list[str], line: int, field: str | None, words: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        list(open_corpus(path))
    assert err.value.line == line
    assert err.value.field == field
    assert words in str(err.value)
    assert str(path) in str(err.value)


def test_csv_errors_name_the_editor_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("id,text\na,first chunk\na,second chunk\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        list(open_corpus(path))
    assert err.value.line == 3 and "duplicate id 'a'" in str(err.value)


def test_empty_corpus_and_unknown_format_are_errors(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(InputError, match="no chunks"):
        list(open_corpus(tmp_path / "empty.jsonl"))
    (tmp_path / "c.txt").write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match="cannot tell the corpus format"):
        open_corpus(tmp_path / "c.txt")
    with pytest.raises(InputError, match="file not found"):
        open_corpus(tmp_path / "missing.jsonl")


def test_reading_streams_rows_instead_of_loading_the_file(tmp_path: Path) -> None:
    """The reader yields the first chunk before it has read the rest (a broken last line is met only later)."""
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": "a", "text": "first chunk"}) + "\n" + "{broken\n", encoding="utf-8")
    chunks = iter(open_corpus(path))
    assert next(chunks).id == "a"
    with pytest.raises(InputError, match="line 2"):
        next(chunks)
