"""Qrels/Run containers built from dicts: the array layout the kernels rely on, ranking order, helpers."""

from __future__ import annotations

import pathlib
import random

import numpy as np
import pytest

from ragmetrics.errors import InputError
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.run import Run


def test_qrels_layout_follows_the_contract() -> None:
    q = Qrels.from_dict({"q2": {"d1": 2, "d0": 0, "d9": -1}, "q1": {"b": 1}})
    assert q.query_ids == ("q1", "q2")
    assert q.doc_vocab.tolist() == ["b", "d0", "d1", "d9"]
    assert q.offsets.dtype == np.int64 and q.offsets.tolist() == [0, 1, 4]
    assert q.doc_codes.dtype == np.int64 and q.doc_codes.tolist() == [0, 1, 2, 3]
    assert q.grades.dtype == np.int64 and q.grades.tolist() == [1, 0, 2, -1]
    assert q.source == "qrels dict"
    assert len(q) == 2 and q.query_index("q2") == 1 and "q1" in q and "zz" not in q
    with pytest.raises(KeyError):
        q.query_index("zz")


def test_run_layout_is_ranked_with_ties_by_doc_id_descending() -> None:
    r = Run.from_dict({"q1": {"a": 0.5, "c": 0.5, "b": 0.9, "d": 0.1}}, name="bm25")
    assert r.name == "bm25" and r.query_ids == ("q1",)
    assert r.doc_vocab.tolist() == ["a", "b", "c", "d"]
    assert r.doc_vocab[r.doc_codes].tolist() == ["b", "c", "a", "d"]
    assert r.scores.dtype == np.float64 and r.scores.tolist() == [0.9, 0.5, 0.5, 0.1]
    assert list(r.to_dict()["q1"]) == ["b", "c", "a", "d"]


def test_ranking_never_depends_on_input_order() -> None:
    rng = random.Random(7)
    entries = [(f"d{i:03d}", float(rng.choice([0.1, 0.2, 0.3]))) for i in range(60)]
    expected = sorted(entries, key=lambda e: (-e[1], tuple(-ord(c) for c in e[0])))
    for _ in range(5):
        rng.shuffle(entries)
        run = Run.from_dict({"q": dict(entries)})
        assert list(run.to_dict()["q"].items()) == expected


def test_arrays_are_read_only() -> None:
    r = Run.from_dict({"q": {"d": 1.0}})
    with pytest.raises(ValueError):
        r.scores[0] = 2.0
    q = Qrels.from_dict({"q": {"d": 1}})
    with pytest.raises(ValueError):
        q.grades[0] = 2


def test_empty_queries_are_kept() -> None:
    r = Run.from_dict({"q1": {}, "q2": {"d": 1.0}})
    assert r.query_ids == ("q1", "q2") and r.offsets.tolist() == [0, 0, 1]
    assert Run.from_dict({}).query_ids == ()


def test_dict_round_trip() -> None:
    qd = {"q1": {"a": 1, "b": 0}, "q2": {"a": 3}}
    assert Qrels.from_dict(qd).to_dict() == qd
    rd = {"q1": {"a": 0.25, "b": -1.5}, "q2": {"c": 3.0}}
    assert Run.from_dict(rd).to_dict() == rd


def test_whole_float_grades_and_int_ids_are_accepted() -> None:
    q = Qrels.from_dict({1: {2: 2.0}})  # type: ignore[dict-item]
    assert q.to_dict() == {"1": {"2": 2}}


def test_ranked_lists_default_grades_count_down_to_one() -> None:
    q = Qrels.from_ranked_lists({"q": ["best", "next", "last"]})
    assert q.to_dict() == {"q": {"best": 3, "next": 2, "last": 1}}


def test_ranked_lists_with_max_grade_floor_at_one() -> None:
    q = Qrels.from_ranked_lists({"q": ["a", "b", "c", "d"]}, max_grade=3)
    assert q.to_dict() == {"q": {"a": 3, "b": 2, "c": 1, "d": 1}}


@pytest.mark.parametrize("bad", [0, -2])
def test_ranked_lists_reject_bad_max_grade(bad: int) -> None:
    with pytest.raises(InputError, match="max_grade"):
        Qrels.from_ranked_lists({"q": ["a"]}, max_grade=bad)


def test_ranked_lists_reject_repeated_document() -> None:
    with pytest.raises(InputError, match=r"'a' listed twice \(positions 1 and 3\)"):
        Qrels.from_ranked_lists({"q": ["a", "b", "a"]})


@pytest.mark.parametrize("doc", [["a"], None, 1.5, True])
def test_ranked_lists_reject_a_non_id_with_its_position(doc: object) -> None:
    # An unhashable id used to escape as a bare TypeError.
    with pytest.raises(
        InputError, match=r"query 'q', position 2: document id .* is not a string or integer id"
    ):
        Qrels.from_ranked_lists({"q": ["a", doc]})  # type: ignore[list-item]


def test_ties_between_prefix_ids_rank_the_longer_id_first() -> None:
    run = Run.from_dict({"q": {"a": 1.0, "ab": 1.0, "b": 1.0, "B": 1.0}})
    assert list(run.to_dict()["q"]) == ["b", "ab", "a", "B"]


def test_signed_zero_scores_tie() -> None:
    run = Run.from_dict({"q": {"a": -0.0, "b": 0.0}})
    assert list(run.to_dict()["q"]) == ["b", "a"]


def test_pickled_containers_stay_read_only() -> None:
    import pickle

    run = pickle.loads(pickle.dumps(Run.from_dict({"q": {"a": 1.0, "b": 2.0}}, name="x")))
    assert run.name == "x" and run.to_dict() == {"q": {"b": 2.0, "a": 1.0}}
    assert not run.scores.flags.writeable and not run.doc_codes.flags.writeable
    qrels = pickle.loads(pickle.dumps(Qrels.from_dict({"q": {"a": 1}})))
    assert qrels.to_dict() == {"q": {"a": 1}} and not qrels.grades.flags.writeable


@pytest.mark.parametrize("ranked", [True, False])
def test_build_kernels_order_every_query_like_a_python_sort(ranked: bool) -> None:
    # Queries of 0 to 300 entries (past the insertion-sort runs and several merge widths), scores full of
    # ties and signed zeros, input order shuffled: run entries end up by score descending then document
    # descending (-0.0 == 0.0), qrels entries by document ascending; queries stay in code order.
    from ragmetrics.retrieval import build_kernels

    rng = np.random.default_rng(11)
    nq, nd = 12, 400
    sizes = rng.integers(0, 300, nq)
    sizes[3] = 0
    query_codes = np.repeat(np.arange(nq), sizes)
    doc_codes = np.concatenate([rng.choice(nd, k, replace=False) for k in sizes]).astype(np.int64)
    scores = rng.choice([-0.0, 0.0, 0.25, 0.5, 1.0, -3.0], query_codes.shape[0])
    shuffle = rng.permutation(query_codes.shape[0])
    query_codes, doc_codes, scores = query_codes[shuffle], doc_codes[shuffle], scores[shuffle]
    order, offsets, earlier, later = build_kernels.group_by_query(query_codes, doc_codes, nq, nd)
    assert (earlier, later) == (-1, -1)
    assert offsets.tolist() == [0, *np.cumsum(sizes).tolist()]
    build_kernels.order_queries(order, offsets, scores if ranked else np.zeros(0), doc_codes, ranked)
    if ranked:
        keys = [(int(query_codes[i]), -float(scores[i]), -int(doc_codes[i])) for i in order]
    else:
        keys = [(int(query_codes[i]), 0.0, int(doc_codes[i])) for i in order]
    assert keys == sorted(keys)
    assert sorted(order.tolist()) == list(range(query_codes.shape[0]))


def test_build_kernels_report_the_first_duplicate_of_the_first_query() -> None:
    from ragmetrics.retrieval import build_kernels

    query_codes = np.array([1, 0, 1, 0, 1, 0], dtype=np.int64)
    doc_codes = np.array([5, 2, 5, 3, 7, 2], dtype=np.int64)
    _, _, earlier, later = build_kernels.group_by_query(query_codes, doc_codes, 2, 8)
    assert (earlier, later) == (1, 5)  # query 0 comes first: document 2 at entries 1 and 5


FORK_SCRIPT = """
import multiprocessing as mp, sys
from ragmetrics import Qrels, Run, evaluate

SIZES = {f"q{q}": {f"d{d}": float((d * 31) % 97) for d in range(100)} for q in range(700)}


def score(name):
    # 70,000 entries: the scoring kernel runs in parallel, starting the thread pool in this child
    return round(evaluate(QRELS, RUNS[name], ["ndcg@10"]).aggregate["ndcg@10"], 6)


if __name__ == "__main__":
    run = Run.from_dict(SIZES)  # built, written and read in the parent before forking
    QRELS = Qrels.from_dict({q: {d: int(v) % 3 for d, v in docs.items()} for q, docs in SIZES.items()})
    run.to_trec(sys.argv[1])
    RUNS = {"dict": run, "trec": Run.from_trec(sys.argv[1])}
    with mp.get_context("fork").Pool(2) as pool:
        print(pool.map(score, ["dict", "trec"]))
"""


def test_loading_large_containers_leaves_the_process_safe_to_fork(tmp_path: pathlib.Path) -> None:
    # GNU OpenMP (numba's usual thread pool on Linux) aborts forked children once it has started, so reading
    # or building containers must not start it: loading in a parent that forks workers is a common pattern.
    import json
    import subprocess
    import sys

    script = tmp_path / "fork_after_load.py"
    script.write_text(FORK_SCRIPT, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "run.trec")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    values = json.loads(done.stdout)
    assert len(values) == 2 and values[0] == values[1] > 0
