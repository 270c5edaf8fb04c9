"""Issue 47 (4, 6): copies of a chunk share its grades; empty chunks are skipped and counted; a missing package
for a pooled retriever stops the build before any work; the pool says who graded it."""

from __future__ import annotations

import builtins
import json
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.errors import ConfigError
from ragmetrics.testset import build_testset
from ragmetrics.testset.duplicates import SHARED_PREFIX, share_duplicate_grades, shared_count
from ragmetrics.testset.output import read_grades, read_manifest, write_testset
from ragmetrics.testset.settings import Grade

from .conftest import corpus_rows, write_jsonl


def _grade(q: str, d: str, g: int, origin: str = "source") -> Grade:
    return Grade(query_id=q, doc_id=d, grade=g, origin=origin)  # type: ignore[arg-type]


def test_copies_share_the_best_grade_and_a_person_decides() -> None:
    groups = [["a", "a2", "a3"]]
    grades = [_grade("q", "a", 2), _grade("q", "a2", 1, "judge"), _grade("q", "b", 1, "judge")]
    shared = {g.doc_id: g for g in share_duplicate_grades(grades, groups)}
    assert {d: g.grade for d, g in shared.items()} == {"a": 2, "a2": 2, "a3": 2, "b": 1}
    assert shared["a3"].origin == "source" and shared["a3"].reason is not None
    assert shared["a3"].reason.startswith(SHARED_PREFIX + "'a'")
    assert "was judge 1" in str(shared["a2"].reason)
    # idempotent, and a person's grade of one copy decides for all of them (even a lower one)
    again = share_duplicate_grades(list(shared.values()), groups)
    assert sorted((g.doc_id, g.grade) for g in again) == sorted((g.doc_id, g.grade) for g in shared.values())
    reviewed = [g if g.doc_id != "a2" else _grade("q", "a2", 0, "person") for g in again]
    after = {g.doc_id: g for g in share_duplicate_grades(reviewed, groups)}
    assert {after[d].grade for d in ("a", "a2", "a3")} == {0} and after["a"].origin == "person"
    assert shared_count(list(after.values())) == 2


def test_a_built_test_set_grades_every_copy_alike(tmp_path: Path) -> None:
    rows = corpus_rows()
    rows += [{**r, "id": f"{r['id']}-copy"} for r in rows[:6]]  # byte-identical twins
    rows += [{"id": "blank", "text": ""}, {"id": "spaces", "text": "   \n "}]  # public sets have these
    corpus = write_jsonl(tmp_path / "corpus.jsonl", rows)
    ts = build_testset(str(corpus), size=20, seed=1, pool=["bm25"])
    assert ts.skipped_chunks.get("empty") == 2
    assert ts.pool is not None and ts.pool["empty_chunks_unjudged"] >= 0
    assert ts.pool["judge"]["backend"] == "local" and "MiniLM" in str(ts.pool["judge"]["model"])
    qrels = ts.qrels()
    twins = [(r["id"], f"{r['id']}-copy") for r in rows[:6]]
    graded = [(q, a, b) for q, docs in qrels.items() for a, b in twins if a in docs or b in docs]
    assert graded, "no question graded a chunk that has a copy"
    assert all(qrels[q].get(a) == qrels[q].get(b) for q, a, b in graded)
    assert all("blank" not in docs and "spaces" not in docs for docs in qrels.values())
    out = tmp_path / "ts"
    write_testset(ts, out)
    manifest = read_manifest(out)
    assert manifest["qrels"]["shared_with_copies"] == shared_count(ts.grades) > 0
    assert len(manifest["duplicates"]["groups"]) == 6
    on_disk = {(g.query_id, g.doc_id): g.grade for g in read_grades(out)}
    assert all(on_disk.get((q, a)) == on_disk.get((q, b)) for q, a, b in graded)
    page = (out / "testset.html").read_text(encoding="utf-8")
    texts = {r["id"]: r["text"] for r in rows}
    first = next(i for i in ts.items if i.source_ids)
    assert "source chunk" in page and texts[first.source_ids[0]][:40] in page  # the question beside its text


def test_a_missing_bm25_package_stops_the_build_before_any_draft(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_bm25s(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "bm25s":
            raise ImportError("No module named 'bm25s'")
        return real_import(name, *args, **kwargs)

    said: list[str] = []
    monkeypatch.setattr(builtins, "__import__", no_bm25s)
    with pytest.raises(ConfigError, match=r"pip install '\.\[examples\]' in a clone"):
        build_testset("builtin", size=4, seed=0, pool=["bm25"], progress=said.append)
    assert not any("drafting" in s for s in said), said


def test_the_pool_judge_is_recorded_in_the_manifest(tmp_path: Path) -> None:
    ts = build_testset("builtin", size=6, seed=2, pool=["dense"])
    write_testset(ts, tmp_path / "ts")
    pool = json.loads((tmp_path / "ts" / "testset.json").read_text(encoding="utf-8"))["pool"]
    assert pool["judge"]["backend"] == "local" and pool["judge"]["embedding_model"]


def test_an_e5_pool_judge_is_not_the_dense_retrievers_model() -> None:
    from ragmetrics.nightly.qrels_provenance import ComparedRun, favour_warnings
    from ragmetrics.retrievers.identity import ranking_identity
    from ragmetrics.schema import QrelsProvenance

    ts = build_testset("builtin", size=6, seed=2, pool=["dense"], pool_judge="e5")
    assert ts.pool is not None and ts.pool["judge"]["model"] == "multilingual-e5-small-q4"
    provenance = QrelsProvenance(source="t", relevant=10, by_origin={"judge": 6, "source": 4},
                                 pool_runs=ts.pool["runs"], pool_judge=ts.pool["judge"],
                                 pool_members=ts.pool["members"])  # fmt: skip
    runs = [ComparedRun("dense", ranking_identity("dense", {})),
            ComparedRun("rerank", ranking_identity("bm25_embedding_rerank", {}))]  # fmt: skip
    (dense,) = favour_warnings(provenance, runs).warnings
    assert "pooled run 'pool:dense'" in dense and "ranks with" not in dense  # pooled, not graded by its model
    minilm = provenance.model_copy(update={"pool_judge": {"backend": "local", "model": "all-MiniLM-L6-v2-onnx-int8"}})
    own = ComparedRun("own", ranking_identity("bm25_embedding_rerank", {"reranker": "my:fn"}))
    warned = favour_warnings(minilm, [runs[1], own]).warnings
    assert len(warned) == 1 and "'rerank'" in warned[0] and "60% of the relevant grades" in warned[0]


def test_the_pooling_warning_goes_by_retriever_never_by_name() -> None:
    from ragmetrics.nightly.qrels_provenance import ComparedRun, favour_warnings
    from ragmetrics.retrievers.identity import ranking_identity
    from ragmetrics.schema import QrelsProvenance

    provenance = QrelsProvenance(source="t", relevant=10, by_origin={"judge": 6, "source": 4},
                                 pool_runs=["pool:bm25"], pool_judge={"backend": "local", "model": "x"})  # fmt: skip
    # the team's own pipeline run named "bm25" was not pooled; the reference BM25 under another name was
    checked = favour_warnings(provenance, [ComparedRun("bm25"), ComparedRun("lexical", ranking_identity("bm25", {}))])
    assert len(checked.warnings) == 1 and "'lexical'" in checked.warnings[0]
    assert checked.unchecked == ["bm25"]
