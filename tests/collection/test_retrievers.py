"""The reference retrievers: deterministic rankings, the tie rule, clear errors, and the reranker's contract."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray

from ragmetrics import ConfigError, InputError, collection, evaluate
from ragmetrics.retrievers import KINDS, build_run, search
from ragmetrics.retrievers.rerank import PrecomputedEmbedder

PASSAGES = [
    {"id": "p1", "text": "The with statement calls __enter__ and __exit__ on a context manager."},
    {"id": "p2", "text": "A generator function uses yield to produce values lazily."},
    {"id": "p3", "text": "Dictionaries map hashable keys to values; get returns a default."},
    {"id": "p4", "text": "The with statement calls __enter__ and __exit__ on a context manager."},
    {"id": "p5", "text": "Sorting a list in place uses list.sort with an optional key function."},
]


class KeywordEmbedder:
    """A deterministic stand-in: one axis per keyword, so cosines are known exactly."""

    name = "keywords"
    axes = ("with", "yield", "dict", "sort", "generator")

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), len(self.axes)), dtype=np.float32)
        for i, text in enumerate(texts):
            lowered = text.lower()
            for j, word in enumerate(self.axes):
                out[i, j] = lowered.count(word)
            norm = np.linalg.norm(out[i])
            out[i] = out[i] / norm if norm else out[i]
        return out


def test_kinds() -> None:
    assert KINDS == ("bm25", "dense", "bm25_embedding_rerank")


def test_bm25_ranks_matching_passages_and_breaks_ties_by_id_descending() -> None:
    ranking = search("bm25", {}, PASSAGES, {"q": "with statement context manager"})["q"]
    ids = [doc for doc, _ in ranking]
    assert ids[:2] == ["p4", "p1"]  # identical texts tie; the larger id ranks first (trec_eval's rule)
    assert ranking[0][1] == ranking[1][1] > 0
    assert all(score > 0 for _, score in ranking)


def test_bm25_is_deterministic_and_independent_of_input_order() -> None:
    queries = [("a", "generator yield values"), ("b", "dictionary get default key")]
    first = build_run("bm25", {"top_k": 3}, PASSAGES, queries, "x").to_dict()
    again = build_run("bm25", {"top_k": 3}, list(reversed(PASSAGES)), dict(reversed(queries)), "x").to_dict()
    assert first == again
    assert all(len(docs) <= 3 for docs in first.values())


def test_query_matching_nothing_is_kept_with_an_empty_ranking() -> None:
    run = build_run("bm25", {}, PASSAGES, {"hit": "yield", "miss": "zebra quantum"}, "bm25")
    assert run.to_dict()["miss"] == {}
    assert "miss" in run.query_ids


def test_unknown_kind_lists_the_kinds() -> None:
    with pytest.raises(
        ConfigError, match=r"unknown retriever kind 'splade'.*bm25, dense, bm25_embedding_rerank"
    ):
        build_run("splade", {}, PASSAGES, {"q": "with"}, "x")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"top_k": 0}, "top_k must be >= 1"),
        ({"top_k": "10"}, "top_k must be an integer"),
        ({"k1": -1}, "k1 >= 0"),
        ({"k1": "1.2"}, "k1 must be a number"),
        ({"stem": "false"}, "stem must be true or false"),
        ({"stopwords": 3}, "stopwords must be"),
        ({"method": "okapi"}, "unknown method"),
        ({"topk": 5}, r"unknown parameter\(s\) \['topk'\]"),
    ],
)
def test_bad_bm25_params(params: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        search("bm25", params, PASSAGES, {"q": "with"})


@pytest.mark.skipif(importlib.util.find_spec("Stemmer") is not None, reason="PyStemmer is installed")
def test_stemming_without_pystemmer_names_the_package() -> None:
    with pytest.raises(ConfigError, match="PyStemmer"):
        search("bm25", {"stem": True}, PASSAGES, {"q": "with"})


@pytest.mark.parametrize(
    ("passages", "line", "field"),
    [
        ([{"id": "a", "text": "x y"}, {"id": "a", "text": "z"}], 2, "id"),
        ([{"id": "", "text": "x"}], 1, "id"),
        ([{"id": "a", "text": "x"}, {"id": "b", "text": None}], 2, "text"),  # an empty text is a document
        ([{"text": "x"}], 1, "id"),
    ],
)
def test_bad_passages_name_line_and_field(passages: list[dict[str, str]], line: int, field: str) -> None:
    with pytest.raises(InputError) as info:
        search("bm25", {}, passages, {"q": "x"})
    assert info.value.line == line and info.value.field == field


def test_bad_queries() -> None:
    with pytest.raises(InputError, match="duplicate query id 'q'"):
        search("bm25", {}, PASSAGES, [("q", "with"), ("q", "yield")])
    with pytest.raises(InputError, match="has no text"):
        search("bm25", {}, PASSAGES, {"q": " "})
    with pytest.raises(InputError, match="no queries"):
        search("bm25", {}, PASSAGES, {})


def test_rerank_orders_bm25_candidates_by_cosine() -> None:
    embedder = KeywordEmbedder()
    query = {"q": "with statement generator yield"}
    candidates = search("bm25", {"top_k": 50}, PASSAGES, query)["q"]
    ranking = search("bm25_embedding_rerank", {}, PASSAGES, query, embedder=embedder)["q"]
    assert {d for d, _ in ranking} == {d for d, _ in candidates}  # reranking never adds passages
    scores = dict(ranking)
    assert scores["p2"] == pytest.approx(2 / np.sqrt(3) / np.sqrt(2), abs=1e-6)  # yield + generator
    assert scores["p1"] == scores["p4"] == pytest.approx(1 / np.sqrt(3), abs=1e-6)
    assert [d for d, _ in ranking][:3] == ["p2", "p4", "p1"]  # cosine, then id descending


def test_rerank_respects_candidates_and_top_k() -> None:
    embedder = KeywordEmbedder()
    query = {"q": "with statement sort list key function"}
    bm25 = search("bm25", {"top_k": 2}, PASSAGES, query)["q"]
    reranked = search("bm25_embedding_rerank", {"candidates": 2}, PASSAGES, query, embedder=embedder)["q"]
    assert {d for d, _ in reranked} == {d for d, _ in bm25}
    assert len(search("bm25_embedding_rerank", {"top_k": 1}, PASSAGES, query, embedder=embedder)["q"]) == 1
    with pytest.raises(ConfigError, match="candidates must be an integer >= 1"):
        search("bm25_embedding_rerank", {"candidates": 0}, PASSAGES, query, embedder=embedder)
    with pytest.raises(ConfigError, match=r"top_k must be an integer >= 1, got 2\.5"):
        search("bm25_embedding_rerank", {"top_k": 2.5}, PASSAGES, query, embedder=embedder)
    # A reranker cannot return more than its candidates: asking for it is an error, not a silent cut.
    with pytest.raises(ConfigError, match=r"top_k \(5\) exceeds candidates \(2\)"):
        search("bm25_embedding_rerank", {"candidates": 2, "top_k": 5}, PASSAGES, query, embedder=embedder)
    with pytest.raises(
        ConfigError,
        match=r"bm25_embedding_rerank: unknown parameter\(s\) \['candidate'\]; known: .*'candidates'",
    ):
        search("bm25_embedding_rerank", {"candidate": 20}, PASSAGES, query, embedder=embedder)


def test_custom_stopwords_change_what_matches() -> None:
    query = {"q": "the with statement"}
    default = search("bm25", {}, PASSAGES, query)["q"]
    none = search("bm25", {"stopwords": None}, PASSAGES, query)["q"]
    assert {d for d, _ in default} == {"p1", "p4"}  # "the" and "with" are English stop words
    assert {d for d, _ in none} > {d for d, _ in default}  # without them "the" matches every passage


def test_missing_examples_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "bm25s", None)  # makes `import bm25s` raise ImportError
    with pytest.raises(ConfigError, match=r"pip install '\.\[examples\]' in a clone of ragmetrics, or pip install bm25s"):
        search("bm25", {}, PASSAGES, {"q": "with"})


def test_precomputed_embedder_uses_stored_vectors_only_for_its_model() -> None:
    import hashlib

    base = KeywordEmbedder()
    stored = np.array([0.0, 0.0, 0.0, 0.0, 1.0], dtype=np.float32)
    key = hashlib.sha256(b"with").hexdigest()
    cached = PrecomputedEmbedder(base, "keywords", {key: stored})
    out = cached.encode(["with", "yield"])
    assert np.allclose(out[0], stored) and out[1][1] == pytest.approx(1.0)
    assert (cached.hits, cached.misses) == (1, 1)
    assert base.calls == [["yield"]]
    other = PrecomputedEmbedder(KeywordEmbedder(), "another-model", {key: stored})
    assert other.encode(["with"])[0][0] == pytest.approx(1.0)


def test_builtin_collection_runs() -> None:
    passages, questions, qrels = (
        collection.load_passages(),
        collection.load_questions(),
        collection.load_qrels(),
    )
    bm25 = build_run("bm25", {}, passages, questions, "bm25")
    assert bm25.name == "bm25" and len(bm25) == len(questions)
    result = evaluate(qrels, bm25, ["ndcg@10", "recall@10"])
    assert 0.5 < result.aggregate["ndcg@10"] < 0.8
    reranked = build_run("bm25_embedding_rerank", {}, passages, questions, "rerank")
    better = evaluate(qrels, reranked, ["ndcg@10"]).aggregate["ndcg@10"]
    assert better > result.aggregate["ndcg@10"]


def test_importing_stays_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, ragmetrics.retrievers, ragmetrics.collection\n"
        "heavy = [m for m in ('bm25s', 'onnxruntime', 'numba', 'datasets') if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
