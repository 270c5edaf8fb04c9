"""Issue 66 (3): the pool records what each member is, and a night's runs are matched to it by that, never by
name: kind, ranking settings (defaults filled in, `top_k` aside) and models; and a run ranking with the pool
grader's model (MiniLM, e5, an LLM judge's embedder) is warned about whatever the model's name spelling."""

from __future__ import annotations

from pathlib import Path

from ragmetrics.nightly.qrels_provenance import ComparedRun, favour_warnings, model_key
from ragmetrics.retrievers.identity import ranking_identity, same_ranking
from ragmetrics.schema import QrelsProvenance
from ragmetrics.testset import build_testset
from ragmetrics.testset.output import read_manifest, write_testset

from .conftest import corpus_rows, write_jsonl


def _provenance(members: list[dict[str, object]], judge: dict[str, str | None]) -> QrelsProvenance:
    return QrelsProvenance(source="t", relevant=10, by_origin={"judge": 7, "source": 3},
                           pool_runs=[str(m["name"]) for m in members], pool_members=members,
                           pool_judge=judge)  # fmt: skip


def test_the_manifest_records_each_pooled_retriever_by_what_it_is(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", corpus_rows())
    tuned = {"retriever": "bm25", "params": {"k1": 0.9, "top_k": 30}, "name": "tuned"}
    testset = build_testset(str(corpus), size=6, seed=3, judge_checks=False, pool=["bm25", tuned])
    write_testset(testset, tmp_path / "ts")
    members = {m["name"]: m for m in read_manifest(tmp_path / "ts")["pool"]["members"]}
    assert members["pool:bm25"]["retriever"] == "bm25" and members["pool:bm25"]["settings"]["k1"] == 1.5
    assert members["pool:tuned"]["settings"]["k1"] == 0.9 and "top_k" not in members["pool:tuned"]["settings"]
    assert same_ranking(members["pool:tuned"], ranking_identity("bm25", {"k1": 0.9, "b": 0.75}))
    assert not same_ranking(members["pool:tuned"], ranking_identity("bm25", {}))


def test_a_run_is_the_pooled_member_it_ranks_like_whatever_either_is_called() -> None:
    members = [{"name": "pool:tuned", **ranking_identity("bm25", {"k1": 0.9})}]
    provenance = _provenance(members, {"backend": "local", "model": "x", "embedding_model": "x"})
    runs = [ComparedRun("bm25", ranking_identity("bm25", {})),  # named like the kind, ranks otherwise
            ComparedRun("mine", ranking_identity("bm25", {"k1": 0.9, "top_k": 1000}))]  # fmt: skip
    checked = favour_warnings(provenance, runs)
    assert checked.favoured == ["mine"] and "pooled run 'pool:tuned'" in checked.warnings[0]


def test_a_run_ranking_with_the_pool_graders_model_is_warned_about() -> None:
    e5 = {
        "backend": "local",
        "model": "multilingual-e5-small-q4",
        "embedding_model": "multilingual-e5-small-q4",
    }
    endpoint = {"url": "http://127.0.0.1:9/rerank", "model": "intfloat/multilingual-e5-small"}
    runs = [ComparedRun("e5_rerank", ranking_identity("bm25_embedding_rerank", {"reranker": endpoint})),
            ComparedRun("dense", ranking_identity("dense", {}))]  # fmt: skip
    checked = favour_warnings(_provenance([], e5), runs)
    assert checked.favoured == ["e5_rerank"]  # dense ranks with MiniLM, not the e5 grader
    assert "ranks with multilingual-e5-small-q4, the model of the local judge" in checked.warnings[0]
    llm = {"backend": "openai", "model": "gpt-4o-mini", "embedding_model": "text-embedding-3-small"}
    mine = ranking_identity(
        "bm25_embedding_rerank", {"reranker": {"url": "http://x", "model": "text-embedding-3-small"}}
    )
    assert favour_warnings(_provenance([], llm), [ComparedRun("mine", mine)]).favoured == ["mine"]


def test_model_names_are_compared_without_organisation_and_packaging() -> None:
    assert model_key("sentence-transformers/all-MiniLM-L6-v2") == model_key("all-MiniLM-L6-v2-onnx-int8")
    assert model_key("intfloat/multilingual-e5-small") == model_key("multilingual-e5-small-q4")
    assert model_key("multilingual-e5-small") != model_key("multilingual-e5-base")


def test_pooling_every_compared_run_favours_none_of_them() -> None:
    """TREC's practice, and the shipped recipe: pool every compared system and grade with a model none of them
    ranks with. Then no run is favoured; leave one run out of the pool and the pooled ones are."""
    e5 = {
        "backend": "local",
        "model": "multilingual-e5-small-q4",
        "embedding_model": "multilingual-e5-small-q4",
    }
    specs = {
        "bm25": ("bm25", {}),
        "dense": ("dense", {}),
        "bm25_rerank": ("bm25_embedding_rerank", {"candidates": 50}),
    }
    members = [
        {"name": f"pool:{name}", **ranking_identity(kind, params)} for name, (kind, params) in specs.items()
    ]
    runs = [ComparedRun(name, ranking_identity(kind, params)) for name, (kind, params) in specs.items()]
    assert favour_warnings(_provenance(members, e5), runs).warnings == []
    partial = favour_warnings(_provenance(members[:2], e5), runs)
    assert partial.favoured == ["bm25", "dense"]
