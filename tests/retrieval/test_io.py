"""Readers and writers of Qrels/Run: TREC, JSON, JSON Lines, DataFrame, datasets.Dataset, round trips."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmetrics.errors import InputError
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.run import Run

QRELS = {"q1": {"d1": 2, "d2": 0, "d3": -1}, "q2": {"d1": 1}, "q10": {"é": 3}}
RUN = {"q1": {"d1": 0.5, "d2": 1.25, "d9": -3e-7}, "q2": {"d1": 1.0}, "q10": {"é": 0.1, "x": 0.1}}


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def same_arrays(a: Qrels | Run, b: Qrels | Run) -> None:
    assert a.query_ids == b.query_ids
    assert a.doc_vocab.tolist() == b.doc_vocab.tolist()
    assert a.offsets.tolist() == b.offsets.tolist()
    assert a.doc_codes.tolist() == b.doc_codes.tolist()
    if isinstance(a, Qrels) and isinstance(b, Qrels):
        assert a.grades.tolist() == b.grades.tolist()
    elif isinstance(a, Run) and isinstance(b, Run):
        assert a.scores.tolist() == b.scores.tolist()


# -- TREC ----------------------------------------------------------------------------------------------


def test_trec_qrels_accepts_any_whitespace_comments_and_blank_lines(tmp_path: Path) -> None:
    text = "# judged by hand\n\nq1 0 d1 2\n  q1\t0   d2 0  \r\n   # indented comment\nq2 0 d1 1\n\n"
    q = Qrels.from_trec(write(tmp_path / "qrels", text))
    assert q.to_dict() == {"q1": {"d1": 2, "d2": 0}, "q2": {"d1": 1}}
    assert q.source == str(tmp_path / "qrels")


def test_trec_irregular_and_regular_files_build_identical_arrays(tmp_path: Path) -> None:
    plain = "q2 0 b 1\nq1 0 a 0\nq1 0 c 3\n"
    noisy = "#c\nq2 0 b 1\n\nq1 0 a 0\n# x y z\nq1 0 c 3"
    same_arrays(Qrels.from_trec(write(tmp_path / "a", plain)), Qrels.from_trec(write(tmp_path / "b", noisy)))


def test_trec_qrels_interleaved_queries_and_signed_grades(tmp_path: Path) -> None:
    q = Qrels.from_trec(write(tmp_path / "q", "q2 0 a +2\nq1 0 a -1\nq2 0 b 0\nq1 0 b 1\n"))
    assert q.to_dict() == {"q1": {"a": -1, "b": 1}, "q2": {"a": 2, "b": 0}}


def test_trec_run_ignores_rank_column_and_names_after_tag(tmp_path: Path) -> None:
    text = "q1 Q0 d1 1 0.2 bm25\nq1 Q0 d2 2 0.9 bm25\nq1 Q0 d3 3 0.9 bm25\n"
    run = Run.from_trec(write(tmp_path / "run", text))
    assert run.name == "bm25"
    assert list(run.to_dict()["q1"]) == ["d3", "d2", "d1"]
    assert Run.from_trec(tmp_path / "run", name="mine").name == "mine"


def test_trec_run_with_mixed_tags_takes_the_first(tmp_path: Path) -> None:
    run = Run.from_trec(write(tmp_path / "run", "q1 Q0 a 1 1 first\nq2 Q0 a 1 1 second\n"))
    assert run.name == "first"


def test_trec_run_extra_fields_ignored_by_default_rejected_when_strict(tmp_path: Path) -> None:
    path = write(tmp_path / "run", "q1 Q0 d1 1 0.5 tag extra more\nq1 Q0 d2 2 0.4 tag\n")
    assert Run.from_trec(path).to_dict() == {"q1": {"d1": 0.5, "d2": 0.4}}
    with pytest.raises(InputError, match="expected 6 whitespace-separated fields") as err:
        Run.from_trec(path, strict=True)
    assert err.value.line == 1


def test_trec_utf8_bom_and_unicode_ids_sort_by_code_point(tmp_path: Path) -> None:
    path = tmp_path / "q"
    path.write_bytes("\ufeffq 0 é 1\nq 0 z 1\nq 0 Z 1\nq 0 ä 1\n".encode())
    q = Qrels.from_trec(path)
    assert q.doc_vocab.tolist() == sorted(["é", "z", "Z", "ä"])


@pytest.mark.parametrize("fmt", ["trec", "json", "jsonl"])
def test_qrels_round_trip(tmp_path: Path, fmt: str) -> None:
    q = Qrels.from_dict(QRELS)
    path = tmp_path / f"qrels.{fmt}"
    getattr(q, f"to_{fmt}")(path)
    back = getattr(Qrels, f"from_{fmt}")(path)
    assert back.to_dict() == QRELS
    same_arrays(q, back)
    same_arrays(q, Qrels.read(path))


@pytest.mark.parametrize("fmt", ["trec", "json", "jsonl"])
def test_run_round_trip_is_exact(tmp_path: Path, fmt: str) -> None:
    run = Run.from_dict(RUN, name="sys-a")
    path = tmp_path / f"sys-a.{fmt}"
    getattr(run, f"to_{fmt}")(path)
    back = getattr(Run, f"from_{fmt}")(path, "sys-a")
    assert back.to_dict() == RUN and back.name == "sys-a"
    same_arrays(run, back)
    assert Run.read(path).name == "sys-a"


def test_run_to_trec_writes_positions_as_ranks(tmp_path: Path) -> None:
    Run.from_dict({"q": {"a": 0.1, "b": 0.3, "c": 0.2}}, name="n").to_trec(tmp_path / "r")
    rows = [line.split() for line in (tmp_path / "r").read_text().splitlines()]
    assert rows == [
        ["q", "Q0", "b", "1", "0.3", "n"],
        ["q", "Q0", "c", "2", "0.2", "n"],
        ["q", "Q0", "a", "3", "0.1", "n"],
    ]


def test_json_keeps_queries_without_entries(tmp_path: Path) -> None:
    Run.from_dict({"q1": {}, "q2": {"d": 1.0}}).to_json(tmp_path / "r.json")
    assert Run.from_json(tmp_path / "r.json").query_ids == ("q1", "q2")


def test_jsonl_key_names_are_configurable(tmp_path: Path) -> None:
    path = write(tmp_path / "q.jsonl", '{"qid": "q1", "pid": 7, "label": 1, "text": "ignored"}\n\n')
    q = Qrels.from_jsonl(path, q_key="qid", doc_key="pid", grade_key="label")
    assert q.to_dict() == {"q1": {"7": 1}}
    q.to_jsonl(tmp_path / "out.jsonl", q_key="qid", doc_key="pid", grade_key="label")
    again = Qrels.from_jsonl(tmp_path / "out.jsonl", q_key="qid", doc_key="pid", grade_key="label")
    assert again.to_dict() == q.to_dict()


@pytest.mark.parametrize(("ident", "what"), [("has space", "document id"), ("tab\there", "document id")])
def test_trec_writer_refuses_ids_that_would_not_read_back(tmp_path: Path, ident: str, what: str) -> None:
    with pytest.raises(InputError, match=f"{what} .* contains whitespace"):
        Qrels.from_dict({"q": {ident: 1}}).to_trec(tmp_path / "q")


def test_trec_writer_refuses_query_ids_read_as_comments(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="starts with '#'"):
        Run.from_dict({"#q": {"d": 1.0}}).to_trec(tmp_path / "r")


def test_trec_writer_refuses_run_name_with_space(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="run name 'my run'"):
        Run.from_dict({"q": {"d": 1.0}}, name="my run").to_trec(tmp_path / "r")


# -- DataFrame and datasets ------------------------------------------------------------------------------


def test_run_from_dataframe_with_default_and_custom_columns() -> None:
    df = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "a"], "score": [0.1, 0.7, 2.0]})
    assert Run.from_df(df, "dense").to_dict() == {"q1": {"b": 0.7, "a": 0.1}, "q2": {"a": 2.0}}
    renamed = df.rename(columns={"query_id": "qid", "doc_id": "pid", "score": "s"})
    run = Run.from_df(renamed, q_col="qid", doc_col="pid", score_col="s")
    assert run.to_dict() == Run.from_df(df).to_dict() and run.source == "DataFrame"


def test_qrels_from_dataframe_with_integer_ids_and_whole_float_grades() -> None:
    df = pd.DataFrame({"query_id": [1, 1, 2], "doc_id": [10, 11, 10], "relevance": [1.0, 0.0, 2.0]})
    assert Qrels.from_df(df).to_dict() == {"1": {"10": 1, "11": 0}, "2": {"10": 2}}


def test_qrels_from_dataframe_with_pandas_string_dtype() -> None:
    df = pd.DataFrame({"q": ["q1", "q2"], "d": ["a", "b"], "g": [1, 2]}).astype(
        {"q": "string", "d": "string"}
    )
    assert Qrels.from_df(df, q_col="q", doc_col="d", score_col="g").to_dict() == {
        "q1": {"a": 1},
        "q2": {"b": 2},
    }


def test_from_hf_dataset_reads_only_the_named_columns() -> None:
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict(
        {
            "query-id": ["q1", "q1", "q2"],
            "corpus-id": ["d1", "d2", "d1"],
            "score": [1, 0, 2],
            "text": ["x"] * 3,
        }
    )
    q = Qrels.from_hf(ds, q_col="query-id", doc_col="corpus-id", score_col="score")
    assert q.to_dict() == {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 2}} and q.source == "datasets.Dataset"
    run = Run.from_hf(
        ds.rename_column("score", "s"), "hf", q_col="query-id", doc_col="corpus-id", score_col="s"
    )
    assert run.to_dict() == {"q1": {"d1": 1.0, "d2": 0.0}, "q2": {"d1": 2.0}}


def test_from_hf_respects_dataset_row_selection() -> None:
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict(
        {"query_id": ["q1", "q2", "q3"], "doc_id": ["a", "b", "c"], "score": [1.0, 2.0, 3.0]}
    )
    run = Run.from_hf(ds.select([2, 0]))
    assert run.to_dict() == {"q1": {"a": 1.0}, "q3": {"c": 3.0}}


# -- views -----------------------------------------------------------------------------------------------


def test_top_k_cuts_each_ranking_and_keeps_queries() -> None:
    run = Run.from_dict({"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"a": 1.0}, "q3": {}}, name="x")
    cut = run.top_k(2)
    assert cut.to_dict() == {"q1": {"a": 3.0, "b": 2.0}, "q2": {"a": 1.0}, "q3": {}}
    assert cut.name == "x" and cut.offsets.tolist() == [0, 2, 3, 3]
    assert run.top_k(10).to_dict() == run.to_dict()


def test_select_keeps_the_given_queries_only() -> None:
    q = Qrels.from_dict({"q1": {"a": 1}, "q2": {"b": 2}, "q3": {"c": 0}})
    sub = q.select(["q3", "q1", "unknown"])
    assert sub.to_dict() == {"q1": {"a": 1}, "q3": {"c": 0}} and isinstance(sub, Qrels)
    assert not sub.offsets.flags.writeable


def test_renamed_shares_arrays() -> None:
    run = Run.from_dict({"q": {"a": 1.0}}, name="a")
    other = run.renamed("b")
    assert other.name == "b" and other.scores is run.scores


# -- properties --------------------------------------------------------------------------------------------

ids = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1, max_size=6
)
scores = st.floats(allow_nan=False, allow_infinity=False, width=64) | st.sampled_from([0.0, -0.0, 1.0, 0.5])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.dictionaries(
        ids.filter(lambda s: not s.startswith("#")),
        st.dictionaries(ids, scores, max_size=8),
        min_size=1,
        max_size=5,
    )
)
def test_random_runs_round_trip_through_trec_and_rank_like_trec_eval(
    tmp_path: Path, data: dict[str, dict[str, float]]
) -> None:
    run = Run.from_dict(data, name="p")
    for qid, docs in data.items():
        by_doc_desc = sorted(docs.items(), key=lambda kv: kv[0], reverse=True)
        expected = sorted(by_doc_desc, key=lambda kv: -kv[1])  # stable: ties keep doc id descending
        assert [d for d, _ in expected] == list(run.to_dict()[qid])
    if run.num_entries:
        run.to_trec(tmp_path / "r")
        back = Run.from_trec(tmp_path / "r")
        assert back.to_dict() == {q: d for q, d in run.to_dict().items() if d}
        assert np.array_equal(back.scores, run.scores)


def test_empty_in_memory_run_is_allowed_but_empty_qrels_are_not() -> None:
    empty = pd.DataFrame({"query_id": [], "doc_id": [], "score": []})
    run = Run.from_df(empty)
    assert len(run) == 0 and run.offsets.tolist() == [0] and run.to_dict() == {}
    with pytest.raises(InputError, match="no queries"):
        Qrels.from_df(empty.rename(columns={"score": "relevance"}))
