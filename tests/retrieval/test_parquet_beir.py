"""Parquet runs and qrels, and BEIR folders: exact round trips, ids in any script, errors naming file, line, field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmetrics import InputError, Qrels, Run, evaluate
from ragmetrics.retrieval.io_beir import read_beir, write_beir

QRELS = {"問1": {"文書A": 2, "doc-β": 0}, "q2": {"Документ": 1}}
RUN = {"問1": {"文書A": 0.1 + 0.2, "doc-β": 1 / 3}, "q2": {"Документ": 7.0, "x": -1e-300}}


def test_parquet_round_trips_runs_and_qrels_exactly(tmp_path: Path) -> None:
    run, qrels = Run.from_dict(RUN, name="r"), Qrels.from_dict(QRELS)
    run.to_parquet(tmp_path / "r.parquet")
    qrels.to_parquet(tmp_path / "q.parquet")
    back = Run.read(tmp_path / "r.parquet")
    assert back.to_dict() == run.to_dict() and back.name == "r"
    assert Qrels.read(tmp_path / "q.parquet").to_dict() == qrels.to_dict()
    assert evaluate(qrels, back, ["ndcg"]).per_query == evaluate(qrels, run, ["ndcg"]).per_query


def test_parquet_errors_name_the_file_and_column(tmp_path: Path) -> None:
    Run.from_dict(RUN, name="r").to_parquet(tmp_path / "r.parquet", score_col="value")
    with pytest.raises(InputError, match=r"r\.parquet.*no column 'score'"):
        Run.from_parquet(tmp_path / "r.parquet")
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        Run.from_parquet(tmp_path / "bad.parquet")
    with pytest.raises(InputError, match=r"missing\.parquet"):
        Qrels.from_parquet(tmp_path / "missing.parquet")


def test_beir_round_trip(tmp_path: Path) -> None:
    corpus = [{"id": "文書A", "title": "題", "text": "本文です。"}, {"id": "doc-β", "title": "", "text": "other"},
              {"id": "Документ", "title": "T", "text": "текст"}, {"id": "x", "title": "", "text": "unjudged"}]  # fmt: skip
    queries = {"問1": "質問ですか？", "q2": "вопрос?", "q3": "never judged"}
    write_beir(tmp_path / "beir", corpus, queries, Qrels.from_dict(QRELS))
    back = read_beir(tmp_path / "beir")
    assert back.corpus == corpus
    assert back.queries == {"問1": "質問ですか？", "q2": "вопрос?"}  # only judged queries, as BEIR's loader
    assert back.qrels.to_dict() == Qrels.from_dict(QRELS).to_dict()
    header = (tmp_path / "beir" / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[0]
    assert header == "query-id\tcorpus-id\tscore"


@pytest.mark.parametrize(
    ("file", "content", "message"),
    [
        (
            "corpus.jsonl",
            '{"_id": "a", "text": "t"}\n{"_id": "a", "text": "u"}\n',
            r"corpus\.jsonl.*line 2.*duplicate document id 'a'",
        ),
        ("corpus.jsonl", '{"_id": "a"}\n', r"corpus\.jsonl.*line 1.*missing or empty 'text'"),
        ("queries.jsonl", '{"_id": "q"}\n', r"queries\.jsonl.*line 1.*'text'"),
        ("qrels/test.tsv", "query-id\tcorpus-id\tscore\nq\ta\ttwo\n", r"test\.tsv.*line 2.*not an integer"),
        (
            "qrels/test.tsv",
            "query-id\tcorpus-id\tscore\nq\tzzz\t1\n",
            r"test\.tsv.*line 2.*'zzz' is not in corpus",
        ),
        (
            "qrels/test.tsv",
            "query-id\tcorpus-id\tscore\nnope\ta\t1\n",
            r"test\.tsv.*line 2.*'nope' is not in queries",
        ),
    ],
)
def test_beir_errors_name_file_line_and_field(tmp_path: Path, file: str, content: str, message: str) -> None:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"_id": "a", "text": "t"}) + "\n")
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q", "text": "what?"}) + "\n")
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq\ta\t1\n")
    (tmp_path / file).write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        read_beir(tmp_path)
